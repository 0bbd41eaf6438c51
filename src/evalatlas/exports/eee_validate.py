"""Validate an Every Eval Ever export against the 0.3.0 JSON Schemas (``evalatlas[eee]``).

The schemas ship with evalatlas (``evalatlas/data/eee``, copied from the EEE repository);
validation needs ``jsonschema``, an optional extra, so a plain install does not carry it.
Checks: every aggregate ``data/**/<uuid>.json`` against ``eval.schema.json`` and every
line of its ``*_samples.jsonl`` against ``instance_level_eval.schema.json``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from evalatlas.extras import require

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "eee"


@cache
def _validators() -> tuple[Any, Any]:
    jsonschema = require("jsonschema", "eee", "validating Every Eval Ever files")
    out = []
    for name in ("eval.schema.json", "instance_level_eval.schema.json"):
        schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
        out.append(jsonschema.Draft7Validator(schema))
    return out[0], out[1]


def _errors(validator: Any, doc: Any, where: str) -> list[str]:
    return [f"{where}: {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]


def validate_export(root: str | Path) -> list[str]:
    """Problems found in the EEE files under ``root`` (empty when all are valid)."""
    aggregate, instance = _validators()
    root = Path(root)
    problems: list[str] = []
    for f in sorted(root.rglob("*.json")):
        rel = f.relative_to(root).as_posix()
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{rel}: not JSON ({exc})")
            continue
        problems += _errors(aggregate, doc, rel)
    for f in sorted(root.rglob("*_samples.jsonl")):
        rel = f.relative_to(root).as_posix()
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError as exc:
                problems.append(f"{rel}:{n}: not JSON ({exc})")
                continue
            problems += _errors(instance, doc, f"{rel}:{n}")
    return problems
