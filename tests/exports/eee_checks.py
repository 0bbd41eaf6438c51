"""Validation of exported Every Eval Ever files, shared by the store and CLI tests.

Draft-07 validation against the 0.3.0 fixture schemas (``shared/fixtures/eee/schema``),
plus the semantic checks of ``eval-log.md`` §2.1 step 3 that can be expressed without the
``every_eval_ever`` package: datastore path shape, companion file (same UUID and folder,
matching ``evaluation_id`` / ``model_id``, ``total_rows`` = line count, >= 1 row), the
checksum (which the EEE publisher verifies), score bounds, deployment metadata, and the
model-identity path (``data/<c>/<developer>/<model>`` agrees with ``model_info.id``).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
SCHEMAS = FIXTURES / "eee" / "schema"
GOLDEN = FIXTURES / "eee" / "skill_reference_conversion"
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
AGGREGATE_RE = re.compile(rf"^data/[^/]+/[^/]+/[^/]+/({UUID4})\.json$")


@cache
def validators() -> tuple[jsonschema.Draft7Validator, jsonschema.Draft7Validator]:
    out = []
    for name in ("eval.schema.json", "instance_level_eval.schema.json"):
        schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
        jsonschema.Draft7Validator.check_schema(schema)
        out.append(jsonschema.Draft7Validator(schema))
    return out[0], out[1]


def strict_loads(text: str) -> Any:
    """json.loads that rejects NaN / Infinity, as EEE's strict parser does."""
    def bad(token: str) -> Any:
        raise ValueError(f"non-finite number {token} in strict JSON")
    return json.loads(text, parse_constant=bad)


def _bound(v: Any) -> float | None:
    return {"Infinity": float("inf"), "-Infinity": float("-inf")}.get(v, v)


def check_pair(root: Path, aggregate: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Validate one aggregate and its samples file under the datastore ``root``; return
    both parsed. Raises AssertionError (or jsonschema.ValidationError) on any problem."""
    agg_schema, inst_schema = validators()
    rel = aggregate.relative_to(root).as_posix()
    m = AGGREGATE_RE.match(rel)
    assert m, f"not a datastore aggregate path: {rel}"
    data = strict_loads(aggregate.read_text(encoding="utf-8"))
    agg_schema.validate(data)
    # companion: exactly <uuid>_samples.jsonl beside the aggregate
    detail = data["detailed_evaluation_results"]
    assert detail["file_path"] == rel.removesuffix(".json") + "_samples.jsonl"
    assert detail["format"] == "jsonl"
    samples = root / detail["file_path"]
    raw = samples.read_bytes()
    assert hashlib.new(detail["hash_algorithm"], raw).hexdigest() == detail["checksum"]
    rows = [strict_loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    assert rows, "samples companion must contain at least one row"
    assert detail["total_rows"] == len(rows)
    for row in rows:
        inst_schema.validate(row)
        assert row["evaluation_id"] == data["evaluation_id"]
        assert row["model_id"] == data["model_info"]["id"]
    ids = {r["evaluation_result_id"] for r in data["evaluation_results"]}
    assert {r.get("evaluation_result_id") for r in rows} <= ids
    # score bounds and finite uncertainty
    for res in data["evaluation_results"]:
        mc, sd = res["metric_config"], res["score_details"]
        lo, hi = _bound(mc["min_score"]), _bound(mc["max_score"])
        assert lo <= sd["score"] <= hi, (lo, sd["score"], hi)
        ci = (sd.get("uncertainty") or {}).get("confidence_interval")
        if ci:  # inside the metric's range, never zero-width (issue 10)
            assert lo <= ci["lower"] < ci["upper"] <= hi, (lo, ci, hi)
    # deployment metadata present and in the enums (the schema checks the enums)
    details = data["model_info"]["additional_details"]
    assert {"deployment_type", "model_availability"} <= set(details)
    # model identity path: developer / model directories follow model_info.id
    # (the collection folder may differ from dataset_name: EEE's collection_override)
    _, _, developer, model, _ = rel.split("/")
    parts = data["model_info"]["id"].split("/")
    assert developer == parts[0].replace(":", "_")
    assert model == "_".join(p.replace(":", "_") for p in parts[1:])
    return data, rows


def check_tree(root: Path) -> dict[Path, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Validate every aggregate under ``root/data`` and that no stray file is left."""
    out = {}
    files = sorted(p for p in (root / "data").rglob("*") if p.is_file())
    for p in files:
        assert not p.name.startswith("."), f"temporary file left behind: {p}"
        if p.suffix == ".json":
            out[p] = check_pair(root, p)
    assert len(files) == 2 * len(out), "every samples file has its aggregate"
    return out
