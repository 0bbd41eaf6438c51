"""The fast path accepts what the record contract says, generated from it: a record with
every contract field is stored by the fast path exactly as by the exact path, and
where the two declarations once drifted apart they now agree.

A field added to a model is accepted by the fast path at once (its checks are generated
from :mod:`evalatlas.records.spec`); if the SQL that builds rows does not store it,
:func:`test_a_record_with_every_field_is_stored_alike_by_both_paths` fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalatlas.records import spec
from evalatlas.store.db import StoreConnection
from evalatlas.store.fast_jsonl import contract
from evalatlas.store.ingest import ingest_paths

_JSON = ("scores", "extra", "judge_usage", "verifier", "findings", "investigation_metadata")


def _rows(db: Path, src: Path, fast: bool) -> tuple[list[dict], list[dict], Any]:
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [src], fast=fast, fast_min_bytes=0)
        rows = [{k: json.loads(v) if k in _JSON and isinstance(v, str) else v
                 for k, v in r.items()} for r in store.query(
            "SELECT * EXCLUDE (ingest_batch, source_file) FROM episodes "
            "ORDER BY trajectory_id")]
        q = store.query("SELECT line, record, field, reason FROM quarantine ORDER BY line")
    return rows, q, rep


def _both(tmp_path: Path, records: list[dict]) -> tuple[tuple, tuple]:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    return (_rows(tmp_path / "fast.duckdb", src, True),
            _rows(tmp_path / "exact.duckdb", src, False))


def _full(full_record, trajectory_id: str) -> dict:
    rec = full_record(spec.EPISODE)
    for name in contract.EXCLUDED:
        rec.pop(name)
    return {**rec, "trajectory_id": trajectory_id}


def test_the_fast_path_accepts_the_contracts_keys() -> None:
    assert set(contract.EPISODE_SPEC) == set(spec.EPISODE.names) - set(contract.EXCLUDED)
    for name, nested in spec.EPISODE.nested.items():
        assert set(contract.NESTED_SPEC[name]) == set(nested.names)
    assert {"findings"} == contract.OPEN
    assert set(contract.REQUIRED) == {"experiment_id", "task_id", "trajectory_id", "reward"}
    assert contract.EPISODE_SPEC["format_version"] == contract.INT  # never null
    assert set(contract.EXCLUDED) | set(contract.NARROWED) <= set(spec.EPISODE.names)


def test_a_record_with_every_field_is_stored_alike_by_both_paths(
        tmp_path: Path, full_record) -> None:
    records = [_full(full_record, f"t{i}") for i in range(3)]
    records[1]["judge_usage"] = None
    records[2]["status"] = "completed"
    (fast, fast_q, rep), (exact, exact_q, _) = _both(tmp_path, records)
    assert rep.fast_path_files == 1 and rep.fast_path_declined == []
    assert fast_q == exact_q == []
    assert fast == exact
    stored = fast[0]
    assert stored["cost_source"] == "computed: test price of 2026-01-01"
    assert stored["status"] == "incomplete" and stored["judge_usage"]["n_llm_calls"] > 0
    # every contract field reached the row: no column of a set field is empty
    assert [k for k, v in stored.items() if v is None] == []


def test_a_field_the_fast_path_excludes_takes_the_exact_path(
        tmp_path: Path, full_record) -> None:
    records = [_full(full_record, "t0"), {**_full(full_record, "t1"),
                                          "outcome_source": "judge:gpt-x"}]
    (fast, _, rep), (exact, _, _) = _both(tmp_path, records)
    assert rep.fast_path_files == 0
    assert "'outcome_source' is not part of the fast path's contract" in \
        rep.fast_path_declined[0]
    assert fast == exact and [r["outcome_source"] for r in fast] == ["harness", "judge:gpt-x"]


@pytest.mark.parametrize("change, field", [
    # the fast path's own list of fields once took these; the models refuse them
    ({"format_version": None}, "format_version"),
    ({"status": None}, "status"),
    ({"judge_usage": {"cached_tokens": -1}}, "judge_usage.cached_tokens"),
    ({"judge_usage": {"n_llm_calls": -2}}, "judge_usage.n_llm_calls"),
    ({"judge_usage": {"reasoning_tokens": -3}}, "judge_usage.reasoning_tokens"),
])
def test_the_paths_refuse_the_same_values(tmp_path: Path, full_record, change: dict,
                                          field: str) -> None:
    records = [_full(full_record, f"t{i}") for i in range(3)]
    records[1].update(change)
    (fast, fast_q, rep), (exact, exact_q, _) = _both(tmp_path, records)
    assert rep.fast_path_files == 0
    assert fast == exact and len(fast) == 2
    assert fast_q == exact_q and len(exact_q) == 1
    assert exact_q[0]["line"] == 2 and exact_q[0]["field"] == field
