"""Submission rows and the rows a submission owns (``source_file`` prefix)."""

from __future__ import annotations

import json
from pathlib import Path

from evalatlas.store import submissions as sql
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths


def _ingest(store: StoreConnection, folder: Path, agent: str, tasks: range, sid: str) -> None:
    folder.mkdir()
    exp = {"experiment_id": agent, "experiment_name": agent, "timestamp": 1.0,
           "framework_version": "1", "framework_name": "t",
           "agent": {"name": agent, "config_type": "T", "config": {}, "llm_model": "m",
                     "framework_version": "1"},
           "benchmark_name": "b", "benchmark_version": "1",
           "benchmark_subset": {"name": "b", "n_tasks": 10}}
    eps = [{"experiment_id": agent, "task_id": f"t{i}", "task_version_hash": "v", "seed": 0,
            "split": "test", "reward": 1.0, "trajectory_id": f"t{i}", "attempt": 0,
            "status": "completed", "timestamp": 2.0} for i in tasks]
    path = folder / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [exp, *eps]) + "\n")
    with store.atomic():
        report = ingest_paths(store, [path], force=True, atomic=True)
        sql.claim_rows(store, str(folder), sid)
        sql.record(store, {"submission_id": sid, "owner": "o", "name": "f.jsonl",
                           "content_sha256": sid, "bytes": 1, "experiments": 1,
                           "episodes": report.episodes, "measurements": 0, "rejected": 0})


def test_rows_are_claimed_and_deleted_by_submission(tmp_path):
    with StoreConnection(tmp_path / "s.duckdb") as store:
        sql.ensure(store)
        _ingest(store, tmp_path / "one", "a1", range(5), "s1")
        _ingest(store, tmp_path / "two", "a2", range(3), "s2")
        sources = {r["source_file"] for r in store.query(
            "SELECT DISTINCT source_file FROM episodes")}
        assert sources == {"submission:s1/f.jsonl", "submission:s2/f.jsonl"}
        assert store.count("files") == 0  # spool paths are not remembered
        assert sql.find_by_content(store, "o", "s1")["submission_id"] == "s1"
        assert sql.get_submission(store, "s1", "someone else") is None
        deleted = sql.delete_submission(store, "s1")
        assert deleted["episodes"] == 5 and deleted["experiments"] == 1
        assert store.count("episodes") == 3 and store.count("experiments") == 1
        assert [r["submission_id"] for r in sql.list_submissions(store, None)] == ["s2"]


def test_an_experiment_another_submission_still_uses_is_kept(tmp_path):
    with StoreConnection(tmp_path / "s.duckdb") as store:
        sql.ensure(store)
        _ingest(store, tmp_path / "one", "a1", range(0, 5), "s1")
        _ingest(store, tmp_path / "two", "a1", range(5, 8), "s2")  # same experiment
        deleted = sql.delete_submission(store, "s2")  # the experiment row is s2's now
        assert deleted == {"episodes": 3, "measurements": 0, "quarantine": 0,
                           "experiments": 0}
        assert store.count("episodes") == 5 and store.count("experiments") == 1
