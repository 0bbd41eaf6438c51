"""The committed JSON Schemas in schemas/ must match the models."""

from __future__ import annotations

import json
from pathlib import Path

from evalatlas.records.schemas import all_schemas

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_match_models() -> None:
    current = all_schemas()
    committed = {p.name.removesuffix(".schema.json"): json.loads(p.read_text())
                 for p in SCHEMAS.glob("*.schema.json")}
    assert set(committed) == set(current), "run `make schemas` and commit schemas/"
    for name, schema in current.items():
        assert committed[name] == schema, f"schemas/{name}.schema.json drifted: run `make schemas`"
