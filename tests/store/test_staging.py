"""store/staging.py: rows ingested into a private stage, copied into a PostgreSQL lake in
one transaction (what ``evalatlas serve`` on a lake commits per submission)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import duckdb
import pytest

import evalatlas as ea
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths, range_extras
from evalatlas.store.lake import newest_snapshot
from evalatlas.store.staging import attached, copy_staged

pytest.importorskip("duckdb_extension_ducklake")

_KEY_COLUMNS = "experiment_id, trajectory_id, task_id, reward, status, source_file"
_QUARANTINE = ("SELECT problem_key, source_file, line, record, field, reason FROM quarantine "
               "ORDER BY source_file")


def _jsonl(path: Path, agent: str, n: int, *, reward: float = 1.0, llm: str | None = "gpt-4o",
           extra: dict | None = None, experiment: bool = True) -> Path:
    exp_id = f"{agent}-exp"
    lines = []
    if experiment:
        lines.append(json.dumps({
            "experiment_id": exp_id, "experiment_name": exp_id, "timestamp": 1.7e9,
            "framework_version": "1", "framework_name": "t",
            "agent": {"name": agent, "config_type": "T", "config": {}, "llm_model": llm,
                      "framework_version": "1"},
            "benchmark_name": "stagebench", "benchmark_version": "1",
            "benchmark_subset": {"name": "stagebench", "n_tasks": n}, "extra": extra or {}}))
    for i in range(n):
        lines.append(json.dumps({
            "experiment_id": exp_id, "task_id": f"t{i}", "task_version_hash": "v",
            "seed": 0, "split": "test", "reward": reward, "trajectory_id": f"tr{i}",
            "attempt": 0, "status": "completed", "timestamp": 1.7e9 + i,
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}))
    lines.append('{"experiment_id": "' + exp_id + '", "trajectory_id": "bad"}')
    path.write_text("\n".join(lines) + "\n")
    return path


def _stage(tmp: Path, upload: Path, extras: dict[str, str] | None = None) -> Path:
    stage = tmp / f"{upload.stem}.stage.duckdb"
    with StoreConnection(stage) as store:
        ingest_paths(store, [upload], force=True, atomic=True, stored_extras=extras)
    return stage


def _rows(store: StoreConnection, table: str = "episodes") -> list[tuple]:
    cols = _KEY_COLUMNS if table == "episodes" else "*"
    order = "experiment_id, trajectory_id" if table == "episodes" else "1"
    return store.con.execute(f"SELECT {cols} FROM {table} ORDER BY {order}").fetchall()


def test_a_staged_copy_stores_what_a_direct_ingest_stores(pg_lake, tmp_path):
    lake, data = pg_lake
    upload = _jsonl(tmp_path / "a.jsonl", "ada", 40)
    with ea.open(lake, data_path=data) as direct_first:  # the lake holds something already
        ingest_paths(direct_first, [_jsonl(tmp_path / "b.jsonl", "bob", 5)], force=True)
    stage = _stage(tmp_path, upload)
    with ea.open(lake) as store:
        before = newest_snapshot(store)
        with attached(store, stage) as alias, store.atomic():
            copied = copy_staged(store, alias)
        assert newest_snapshot(store) == before + 1  # one transaction: one snapshot
        assert copied == {"experiments": 1, "episodes": 40, "measurements": 0,
                          "quarantine": 1}
        lake_rows = _rows(store)
        costs = store.con.execute("SELECT count(*), count(cost_usd), min(llm_model) FROM "
                                  "episodes WHERE experiment_id = 'ada-exp'").fetchone()
        batches = store.con.execute(
            "SELECT b.batch_id, b.n_episodes, count(e.trajectory_id) FROM ingest_batches b "
            "LEFT JOIN episodes e ON e.ingest_batch = b.batch_id GROUP BY ALL").fetchall()
        bad = store.con.execute(_QUARANTINE).fetchall()
    with StoreConnection(tmp_path / "direct.duckdb") as direct:
        ingest_paths(direct, [tmp_path / "b.jsonl", upload], force=True)
        assert _rows(direct) == lake_rows  # the same rows, values and sources
        assert direct.con.execute(_QUARANTINE).fetchall() == bad
    assert costs == (40, 40, "gpt-4o")  # priced from the staged experiment's model
    assert len({b[0] for b in batches}) == len(batches) and all(b[1] == b[2] for b in batches)
    assert [(b[1], b[3], b[4]) for b in bad] == [
        (str(upload), "bad", "task_id"), (str(tmp_path / "b.jsonl"), "bad", "task_id")]


def test_a_second_copy_replaces_by_key_and_completes_costs_from_the_lake(pg_lake, tmp_path):
    """Episodes staged without their experiment (stored earlier in the lake) get the
    lake's model and costs; the same keys copied again replace, never duplicate."""
    lake, data = pg_lake
    with ea.open(lake, data_path=data) as store:
        ingest_paths(store, [_jsonl(tmp_path / "exp.jsonl", "cy", 0)], force=True)
    episodes_only = _jsonl(tmp_path / "eps.jsonl", "cy", 12, experiment=False)
    stage = _stage(tmp_path, episodes_only)
    with ea.open(lake) as store:
        for _ in range(2):
            with attached(store, stage) as alias, store.atomic():
                copy_staged(store, alias)
        got = store.con.execute("SELECT count(*), count(DISTINCT trajectory_id), "
                                "count(cost_usd), min(llm_model) FROM episodes").fetchone()
    assert got == (12, 12, 12, "gpt-4o")


def test_staging_checks_rewards_against_the_ranges_the_lake_declares(pg_lake, tmp_path):
    lake, data = pg_lake
    with ea.open(lake, data_path=data) as store:
        ingest_paths(store, [_jsonl(tmp_path / "exp.jsonl", "dee", 0,
                                    extra={"reward_range": [0, 10]})], force=True)
        extras = range_extras(store)
    assert set(extras) == {"dee-exp"}
    upload = _jsonl(tmp_path / "eps.jsonl", "dee", 3, reward=7.0, experiment=False)
    with StoreConnection(tmp_path / "with.duckdb") as stage:
        report = ingest_paths(stage, [upload], force=True, atomic=True, stored_extras=extras)
    assert (report.episodes, report.rejected) == (3, 1)  # 7 lies in the declared [0, 10]
    with StoreConnection(tmp_path / "without.duckdb") as stage:
        report = ingest_paths(stage, [upload], force=True, atomic=True)
    assert (report.episodes, report.rejected) == (0, 4)  # outside the default [0, 1]


def test_postgres_failing_during_the_commit_leaves_the_lake_as_before(own_postgres, tmp_path):
    """A real failure inside the copy's COMMIT (the catalog's server stops just before
    it): the lake is exactly as after its last commit, and takes the copy afterwards."""
    conninfo = own_postgres.create_database("atlas")
    lake = f"ducklake:postgres:{conninfo}"
    data = tmp_path / "data"
    data.mkdir()
    with ea.open(lake, data_path=data) as store:
        ingest_paths(store, [_jsonl(tmp_path / "b.jsonl", "bob", 5)], force=True)
        before = (newest_snapshot(store), _rows(store), _rows(store, "ingest_batches"))
    stage = _stage(tmp_path, _jsonl(tmp_path / "a.jsonl", "ada", 30))
    store = ea.open(lake)
    real = store.con

    class StopsAtCommit:
        def __getattr__(self, name):
            return getattr(real, name)

        def execute(self, sql, parameters=None):
            if sql.strip().upper().startswith("COMMIT"):
                own_postgres.stop()  # the rows are inserted; the commit meets no server
            return real.execute(sql, parameters)

    try:
        with attached(store, stage) as alias:
            store.con = StopsAtCommit()
            with pytest.raises(duckdb.Error, match=r"(?i)connect|server|commit"), store.atomic():
                copy_staged(store, alias)
            store.con = real
    finally:
        store.con = real
        own_postgres.start()
        with contextlib.suppress(Exception):
            store.close()
    with ea.open(lake) as store:
        assert (newest_snapshot(store), _rows(store), _rows(store, "ingest_batches")) == before
        with attached(store, stage) as alias, store.atomic():
            copy_staged(store, alias)
        assert store.count("episodes") == 35
