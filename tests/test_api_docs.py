"""docs/api.md runs: its python code blocks, in order and in one namespace, from the
repository root against the demo data (examples/); and the issue's API example gives the
numbers the CLI prints as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app
from measure import first_difference  # benchmarks/measure.py: one comparison of results

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_api_doc_blocks_run(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    blocks = BLOCK.findall((REPO / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("EVALATLAS_DB", raising=False)
    namespace: dict[str, Any] = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"docs/api.md block {i + 1}", "exec"), namespace)
    assert "points" in capsys.readouterr().out  # the compare sentence was printed


def _same(a: Any, b: Any, where: str = "") -> None:
    """Equal JSON values; floats to 1e-12 relative (summation order may differ)."""
    difference = first_difference(a, b, rel_tol=1e-12, abs_tol=1e-15, where=where)
    assert difference is None, difference


def test_issue_example_matches_cli_json(tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    store = ea.open(db)
    report = store.ingest(REPO / "examples")
    assert isinstance(report, ea.IngestReport) and report.episodes == 180
    eps = store.episodes(benchmark="toybench")
    s = ea.summary(eps, by="agent")
    c = ea.compare(eps, "planner-sonnet", "react-gpt-4o")
    store.close()

    runner = CliRunner()
    out = runner.invoke(app, ["--db", str(db), "summary", "--format", "json"])
    assert out.exit_code == 0, out.output
    cli_summary = json.loads(out.stdout)
    _same(s.to_dict(), cli_summary, "summary")
    assert [r["success_rate"] for r in cli_summary["rows"]] == [0.75, 0.65, 0.45]

    out = runner.invoke(app, ["--db", str(db), "compare", "planner-sonnet", "react-gpt-4o",
                              "--format", "json"])
    assert out.exit_code == 0, out.output
    _same(c.to_dict(), json.loads(out.stdout), "compare")
    assert c.rows[0]["shared_tasks"] == 20


def test_public_names_are_all_listed_and_importable() -> None:
    for name in ea.__all__:
        assert getattr(ea, name) is not None, name
    assert len(set(ea.__all__)) == len(ea.__all__)
    with pytest.raises(AttributeError):
        ea.no_such_name  # noqa: B018


def test_import_evalatlas_is_light(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys, evalatlas; heavy = [m for m in ('duckdb', 'pandas', 'numpy', "
            "'pydantic', 'scipy', 'pyarrow') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
