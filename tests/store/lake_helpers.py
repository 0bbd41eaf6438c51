"""Helpers of the lake tests: run a command's JSON on a file store and on a lake."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from evalatlas.cli.main import app

runner = CliRunner()


def cli(db: str, *args: str, data_path: Path | None = None) -> Any:
    """Run ``evalatlas --db DB ARGS`` in-process; its output parsed when JSON."""
    extra = ["--data-path", str(data_path)] if data_path else []
    r = runner.invoke(app, ["--db", db, *extra, *args])
    assert r.exit_code == 0, (args, r.output)
    text = r.stdout
    return json.loads(text) if "json" in args else text


def same(a: Any, b: Any, where: str = "$") -> None:
    """``a`` equals ``b``, floats to 1e-9 (sums may differ in the last digits with the
    order rows are read in)."""
    if isinstance(a, float) and isinstance(b, float | int):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (
            math.isnan(a) and math.isnan(b)), f"{where}: {a} != {b}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {set(a) ^ set(b)}"
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def without_lake(doc: dict[str, Any]) -> dict[str, Any]:
    assert "lake" not in doc or isinstance(doc["lake"]["snapshot"], int | None)
    return {k: v for k, v in doc.items() if k != "lake"}
