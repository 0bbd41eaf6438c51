"""msgspec's check of keys and JSON types, and the fast path with and without it."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from evalatlas.store.db import StoreConnection
from evalatlas.store.fast_jsonl import checker as fast_schema
from evalatlas.store.ingest import ingest_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from synth import episode_dict

GOOD = {"experiment_id": "e1", "task_id": "t", "trajectory_id": "a", "reward": 1.0}


def _chunk(*records: dict | bytes) -> tuple[bytes, int, int]:
    lines = [r if isinstance(r, bytes) else json.dumps(r).encode() for r in records]
    data = b"".join(line + b"\n" for line in lines)
    return data, len(lines), len(data)


def test_reads_only_the_chunk_of_a_longer_read() -> None:
    """A chunk cut from a longer read is ``data[:size]``: what follows is not its."""
    data, n, size = _chunk(GOOD, {**GOOD, "trajectory_id": "b"})
    assert fast_schema.checker()(data + b'{"not": "an episode"}\n', n, size)
    assert not fast_schema.checker()(data + b'{"not": "an episode"}\n', n + 1, size + 22)


def test_vouches_for_clean_episodes() -> None:
    rng = random.Random(1)
    full = [episode_dict(i, rng) for i in range(200)]
    minimal = dict(GOOD)
    nulls = {**GOOD, "seed": None, "success": None, "wall_time_s": None,
             "judge_usage": None, "verifier": None, "findings": None,
             "investigation_metadata": None, "retrieved_sources": None}
    rich = {**GOOD, "reward": 1, "scores": {"a": 1, "b": None}, "tool_names": ["x"],
            "verifier": {"ref": "r", "source": None},
            "findings": {"feasible": True, "difficulty": "hard", "free": [1, {"x": 2}]},
            "judge_usage": {"prompt_tokens": 3, "total_cost_usd": 0},
            "extra": {"anything": [1, "two", {"three": None}], "n": 10 ** 30}}
    assert fast_schema.checker()(*_chunk(*full, minimal, nulls, rich))


@pytest.mark.parametrize("change", [
    {"n_steps": 2.5}, {"n_steps": 2.0}, {"n_steps": "5"}, {"n_steps": True},
    {"reward": True}, {"reward": "0.5"}, {"reward": None}, {"task_id": 5},
    {"experiment_id": None}, {"success": 1}, {"split": 5}, {"extra": [1]},
    {"extra": None}, {"extra": "s"}, {"usage": None}, {"usage": {"tokens": 5}},
    {"usage": {"prompt_tokens": 1.5}}, {"judge_usage": {"model": 3}},
    {"verifier": {"ref": 5}}, {"verifier": {"other": "x"}},
    {"findings": {"_type": "f"}}, {"findings": {"feasible": "yes"}},
    {"tool_names": ["bash", 5]}, {"tool_names": None}, {"scores": {"a": "high"}},
    {"scores": {"a": True}}, {"retrieved_sources": [None]}, {"rewrad": 1},
    {"investigation_metadata": []},
])
def test_declines_what_the_contract_does_not_type(change: dict) -> None:
    assert not fast_schema.checker()(*_chunk(GOOD, {**GOOD, **change}))


@pytest.mark.parametrize("line", [
    b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":NaN}',
    b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":1e999}',
    b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":1,"output_text":'
    b'"a\\ud800b"}',
    b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":1,"extra":'
    + b'{"v": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
    b'{"experiment_id":"e1","task_id":"t"',
    b"",  # a blank line: msgspec skips it, the line count does not
])
def test_declines_lines_msgspec_cannot_vouch_for(line: bytes) -> None:
    assert not fast_schema.checker()(*_chunk(GOOD, line, GOOD))


def test_decodes_a_chunk_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices end at line ends, so a bad line in any slice is still found."""
    monkeypatch.setattr(fast_schema, "SLICE_BYTES", 200)
    good = [{**GOOD, "trajectory_id": f"t{i}"} for i in range(50)]
    assert fast_schema.checker()(*_chunk(*good))
    assert not fast_schema.checker()(*_chunk(*good[:37], {**GOOD, "seed": 1.5}, *good[37:]))


def _records(n: int) -> list[dict]:
    rng = random.Random(7)
    recs = [episode_dict(i, rng, n_agents=4, n_tasks=40) for i in range(n)]
    recs[11]["findings"] = {"feasible": False, "note": "open key"}
    recs[12]["extra"] = {"token": "ghp_" + "a" * 36}  # redacted on both paths
    return recs


def _parsed(row: dict) -> dict:
    """JSON columns as values: DuckDB writes JSON text compactly, Python with spaces; and
    the exact path writes ``findings``' absent named keys as nulls (the same record when
    read back, see ``test_fast_jsonl``)."""
    out = {k: json.loads(v) if isinstance(v, str) and v[:1] in "{[" else v
           for k, v in row.items()}
    if out.get("findings"):
        out["findings"] = {k: v for k, v in out["findings"].items() if v is not None}
    return out


def _snapshot(db: Path, src: Path, fast: bool) -> tuple[list, list]:
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [src], fast=fast, fast_min_bytes=0)
        rows = store.query("SELECT * EXCLUDE (ingest_batch, source_file) FROM episodes "
                           "ORDER BY experiment_id, trajectory_id")
        q = store.query("SELECT line, field, reason FROM quarantine ORDER BY line")
    assert rep.fast_path_files == (1 if fast else 0), rep.fast_path_declined
    return [_parsed(r) for r in rows], q


def test_without_msgspec_the_shape_pass_stores_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records(400)))
    exact = _snapshot(tmp_path / "exact.duckdb", src, fast=False)
    with_msgspec = _snapshot(tmp_path / "fast.duckdb", src, fast=True)
    monkeypatch.setattr(fast_schema, "_checker", [fast_schema._never])
    without = _snapshot(tmp_path / "shape.duckdb", src, fast=True)
    assert with_msgspec == exact
    assert without == exact
    assert "ghp_" not in json.dumps(with_msgspec[0], default=str)


@pytest.mark.parametrize("enabled", [True, False])
def test_leaves_the_cyclic_collector_as_it_found_it(enabled: bool) -> None:
    import gc

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert fast_schema.checker()(*_chunk(GOOD))
        assert not fast_schema.checker()(*_chunk({**GOOD, "seed": 1.5}))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


EXPERIMENT = {"experiment_id": "e1", "experiment_name": "e1", "benchmark_name": "b",
              "benchmark_subset": {"name": "b", "n_tasks": 3},
              "agent": {"name": "a", "llm_model": "gpt-4o", "config": {"m": 1}}}
MEASUREMENT = {"experiment_id": "e1", "trajectory_id": "a", "benchmark": "bench_x",
               "agent_time": 1.5}


def test_picks_out_experiment_records_and_measurements() -> None:
    """A mixed chunk is vouched for with the lines the exact path must read; an episode
    of a wrong type among them still is not."""
    vouch = fast_schema.vouch()
    good = [{**GOOD, "trajectory_id": f"t{i}"} for i in range(6)]
    assert vouch(*_chunk(EXPERIMENT, *good[:3], MEASUREMENT, *good[3:], EXPERIMENT)) \
        == [1, 5, 9]
    assert vouch(*_chunk(*good)) == []
    assert vouch(*_chunk(EXPERIMENT, {**GOOD, "seed": 1.5})) is None
    assert vouch(*_chunk(EXPERIMENT, {"not": "an episode"})) is None


def test_a_mixed_file_keeps_the_quick_route(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Experiment records between the episodes of every chunk: no chunk takes the shape
    pass, and the store equals the exact path's."""
    from evalatlas.store.fast_jsonl.prepare import Preparer

    recs = _records(400)
    lines = []
    for i, r in enumerate(recs):
        if i % 50 == 0:
            lines.append({**EXPERIMENT, "experiment_id": r["experiment_id"],
                          "experiment_name": f"x{i}"})
        lines.append(r)
    src = tmp_path / "mixed.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in lines))
    slow = []
    real = Preparer._stage_checked
    monkeypatch.setattr(Preparer, "_stage_checked",
                        lambda self, *a: slow.append(a) or real(self, *a))
    with StoreConnection(tmp_path / "fast.duckdb") as store:
        rep = ingest_paths(store, [src], fast=True, fast_min_bytes=0, chunk_bytes=20_000)
        fast = [_parsed(r) for r in store.query(
            "SELECT * EXCLUDE (ingest_batch, source_file) FROM episodes "
            "ORDER BY experiment_id, trajectory_id")]
        fast_x = store.query("SELECT * EXCLUDE (ingest_batch, source_file) FROM experiments "
                             "ORDER BY experiment_id")
    with StoreConnection(tmp_path / "exact.duckdb") as store:
        ingest_paths(store, [src], fast=False)
        exact = [_parsed(r) for r in store.query(
            "SELECT * EXCLUDE (ingest_batch, source_file) FROM episodes "
            "ORDER BY experiment_id, trajectory_id")]
        exact_x = store.query("SELECT * EXCLUDE (ingest_batch, source_file) FROM experiments "
                              "ORDER BY experiment_id")
    assert rep.fast_path_files == 1 and rep.fast_path_declined == []
    assert rep.fast_path_chunks > 5 and slow == []
    assert (rep.episodes, rep.experiments) == (400, 8)  # 8 records, 4 ids
    assert fast == exact and fast_x == exact_x
