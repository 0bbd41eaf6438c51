"""The DuckDB-native JSONL path stores exactly what the per-record path stores."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from evalatlas.pricing import fill_missing_cost
from evalatlas.records import UsageSummary
from evalatlas.store.db import Store
from evalatlas.store.export import iter_episodes
from evalatlas.store.ingest import ingest_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from synth import episode_dict


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _records(n: int = 300) -> list[dict]:
    rng = random.Random(3)
    out = []
    for i in range(n):
        r = episode_dict(i, rng, n_agents=3, n_tasks=50)
        if i % 3 == 0:  # no reported cost: must be priced from tokens
            del r["usage"]["total_cost_usd"]
        if i % 5 == 0:  # no model on the episode: the experiment's model applies
            del r["usage"]["model"]
            r["usage"].pop("total_cost_usd", None)
        if i % 7 == 0:
            r["scores"] = {"impl_rate": None, "judge": 3.0}
            r["findings"] = {"feasible": True, "outcome": "almost"}
        out.append(r)
    return out


def _experiment_line(eid: str, model: str) -> dict:
    return {"experiment_id": eid, "experiment_name": eid, "benchmark_name": "b",
            "benchmark_subset": {"name": "b", "n_tasks": 50},
            "agent": {"name": eid, "llm_model": model, "config": {"model": model}}}


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    episodes = _write(tmp_path / "episodes.jsonl", _records())
    exps = _write(tmp_path / "experiments.jsonl",
                  [_experiment_line(f"exp{i:04d}", "gpt-4o") for i in range(3)])
    return episodes, exps


def _stored(db: Path, exps: Path, episodes: Path, fast: bool) -> list:
    with Store(db) as store:
        ingest_paths(store, [exps], fast=False)
        rep = ingest_paths(store, [episodes], fast=fast)
        assert rep.fast_path_files == (1 if fast else 0), rep.fast_path_declined
        return list(iter_episodes(store))


def test_fast_and_exact_paths_store_the_same_records(tmp_path: Path, data) -> None:
    episodes, exps = data
    fast = _stored(tmp_path / "f.duckdb", exps, episodes, fast=True)
    exact = _stored(tmp_path / "e.duckdb", exps, episodes, fast=False)
    assert len(fast) == 300
    assert fast == exact
    computed = [e for e in fast if (e.usage.cost_source or "").startswith("computed: ")]
    assert computed, "costs were filled from pricing"


def test_vectorised_cost_fill_equals_fill_missing_cost(tmp_path: Path, data) -> None:
    episodes, exps = data
    with Store(tmp_path / "f.duckdb") as store:
        ingest_paths(store, [exps], fast=False)
        ingest_paths(store, [episodes], fast=True)
        rows = store.query("SELECT prompt_tokens, completion_tokens, cached_tokens, "
                           "cache_creation_tokens, llm_model, cost_usd FROM episodes "
                           "WHERE starts_with(cost_source, 'computed')")
    assert rows
    for r in rows:
        u = UsageSummary(prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
                         cached_tokens=r["cached_tokens"],
                         cache_creation_tokens=r["cache_creation_tokens"])
        assert fill_missing_cost(u, r["llm_model"]).total_cost_usd == pytest.approx(
            r["cost_usd"], rel=1e-12)


def test_late_experiment_record_fills_model_and_cost(tmp_path: Path, data) -> None:
    episodes, exps = data
    with Store(tmp_path / "f.duckdb") as store:
        ingest_paths(store, [episodes], fast=True)
        before = store.query("SELECT count(*) AS n FROM episodes WHERE llm_model IS NULL")[0]["n"]
        ingest_paths(store, [exps], fast=False)
        after = store.query("SELECT count(*) AS n FROM episodes WHERE llm_model IS NULL")[0]["n"]
        unpriced = store.query("SELECT count(*) AS n FROM episodes WHERE cost_usd IS NULL")
    assert before == 60 and after == 0
    assert unpriced[0]["n"] == 0


@pytest.mark.parametrize("mutate, reason, rejected", [
    (lambda r: r.update(rewrad=1), "'rewrad'", 1),
    (lambda r: r.update(score=r.pop("reward")), "'score'", 0),  # alias: valid, exact path
    (lambda r: r["usage"].update(_type="x"), "'_type' in usage", 0),  # dropped by exact path
    (lambda r: r.update(n_steps="many"), 'n_steps is VARCHAR', 1),
    (lambda r: r["usage"].update(prompt_tokens=-1), "negative value", 1),
    (lambda r: r.update(trajectory_id="../x"), "unsafe trajectory_id", 1),
    (lambda r: r.update(success=not r["success"]), "success contradicts reward", 1),
    (lambda r: r.update(status="weird"), "unknown status", 1),
    (lambda r: r.pop("task_id"), "missing required field", 1),
])
def test_anything_unclean_goes_through_the_exact_path(
    tmp_path: Path, mutate, reason: str, rejected: int
) -> None:
    recs = _records(20)
    mutate(recs[7])
    path = _write(tmp_path / "x.jsonl", recs)
    with Store(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True)
        assert rep.fast_path_files == 0
        assert reason in rep.fast_path_declined[0]
        # ... and the exact path then ingested the good ones and quarantined the bad one.
        assert (rep.episodes, rep.rejected) == (20 - rejected, rejected)
        assert store.count("episodes") == 20 - rejected


def test_blank_line_and_duplicates_decline(tmp_path: Path) -> None:
    recs = _records(10)
    p = tmp_path / "b.jsonl"
    p.write_text(json.dumps(recs[0]) + "\n\n" + "".join(json.dumps(r) + "\n" for r in recs[1:]))
    d = _write(tmp_path / "d.jsonl", [*recs, recs[3]])
    with Store(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [p, d], fast=True)
    assert rep.fast_path_files == 0
    assert "blank lines" in rep.fast_path_declined[0]
    assert "duplicate trajectory_id" in rep.fast_path_declined[1]


def test_fast_path_replaces_episodes_stored_before(tmp_path: Path) -> None:
    """A changed file ingested again replaces its episodes (the delete runs because the
    store already held episodes); a fresh store skips the delete and stores the same."""
    recs = _records(40)
    path = _write(tmp_path / "e.jsonl", recs)
    with Store(tmp_path / "s.duckdb") as store:
        first = ingest_paths(store, [path], fast=True)
        for r in recs[:10]:
            r["reward"], r["success"] = 1.0 - r["reward"], not r["success"]
        _write(path, recs)
        again = ingest_paths(store, [path], fast=True, force=True)
        rewards = dict(store.con.execute(
            "SELECT trajectory_id || '/' || experiment_id, reward FROM episodes").fetchall())
        assert store.count("episodes") == 40
    assert first.fast_path_files == again.fast_path_files == 1
    assert rewards == {f"{r['trajectory_id']}/{r['experiment_id']}": r["reward"] for r in recs}


def test_fast_path_restores_the_store_settings(tmp_path: Path, data) -> None:
    """The fast path lowers DuckDB's memory budget and raises the checkpoint threshold
    while it writes; both are the store's own again afterwards."""
    episodes, _ = data
    with Store(tmp_path / "s.duckdb") as store:
        def settings() -> list:
            return store.con.execute(
                "SELECT current_setting('memory_limit'), "
                "current_setting('checkpoint_threshold')").fetchall()

        before = settings()
        rep = ingest_paths(store, [episodes], fast=True)
        assert rep.fast_path_files == 1
        assert settings() == before


def test_key_hash_does_not_collide_on_regular_ids() -> None:
    """DuckDB's 64-bit ``hash(a, b)`` gives 96,000 values for these 100,000 keys; every
    collision would send a chunk through the slow exact path."""
    import duckdb

    from evalatlas.store.fast_jsonl import key_hash

    keys = ("SELECT 'exp0001' AS experiment_id, "
            "printf('task-%05d_c%dep%d', i // 50, (i // 10) % 5, i % 10) AS trajectory_id "
            "FROM range(100000) r(i)")
    con = duckdb.connect()
    weak, ours = con.execute(
        f"SELECT count(DISTINCT hash(experiment_id, trajectory_id)), "
        f"count(DISTINCT {key_hash()}) FROM ({keys})").fetchone()
    assert weak < 100_000  # the reason for key_hash
    assert ours == 100_000


def test_regular_ids_over_many_chunks_stay_on_the_fast_path(tmp_path: Path) -> None:
    """100,000 short episodes with ids shaped like the benchmark's, in 4 MiB chunks:
    every chunk commits on the fast path and every episode is stored once."""
    n = 100_000
    path = tmp_path / "regular.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "experiment_id": "exp0001", "task_id": f"task-{i // 50:05d}",
                "trajectory_id": f"task-{i // 50:05d}_c{(i // 10) % 5}ep{i % 10}",
                "reward": float(i % 2), "success": bool(i % 2),
                "extra": {"pad": "x" * 60}}) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True, fast_min_bytes=0, chunk_bytes=4 << 20)
        assert store.count("episodes") == n
    assert rep.fast_path_files == 1, rep.fast_path_declined
    assert rep.fast_path_chunks >= 3 and rep.rejected == 0
