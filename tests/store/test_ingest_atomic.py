"""``ingest_paths(atomic=True)``: a submission is stored whole or not at all, even when it
spans many batches (``Store.ingest`` otherwise commits every batch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths


def _jsonl(path: Path, n: int) -> Path:
    exp = {"experiment_id": "e1", "experiment_name": "e1", "timestamp": 1.0,
           "framework_version": "1", "framework_name": "t",
           "agent": {"name": "a", "config_type": "T", "config": {}, "llm_model": "m",
                     "framework_version": "1"},
           "benchmark_name": "b", "benchmark_version": "1",
           "benchmark_subset": {"name": "b", "n_tasks": n}}
    eps = [{"experiment_id": "e1", "task_id": f"t{i}", "task_version_hash": "v",
            "seed": 0, "split": "test", "reward": float(i % 2), "trajectory_id": f"t{i}",
            "attempt": 0, "status": "completed", "timestamp": 2.0} for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in [exp, *eps]) + "\n")
    return path


def _fail_on_third_batch(store: StoreConnection, monkeypatch: pytest.MonkeyPatch) -> None:
    real = store.write_batch
    calls = []

    def write_batch(**kw):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk gone")  # a failure after two batches were written
        return real(**kw)

    monkeypatch.setattr(store, "write_batch", write_batch)


def _episodes(store: StoreConnection) -> int:
    return store.count("episodes")


def test_without_atomic_the_finished_batches_stay(tmp_path, monkeypatch):
    path = _jsonl(tmp_path / "s.jsonl", 100)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        _fail_on_third_batch(store, monkeypatch)
        with pytest.raises(OSError):
            ingest_paths(store, [path], batch_size=20, fast=False)
        assert _episodes(store) > 0  # the behaviour atomic=True exists to avoid


def test_atomic_failure_leaves_nothing(tmp_path, monkeypatch):
    path = _jsonl(tmp_path / "s.jsonl", 100)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        _fail_on_third_batch(store, monkeypatch)
        with pytest.raises(OSError):
            ingest_paths(store, [path], batch_size=20, atomic=True)
        assert _episodes(store) == 0
        assert store.count("experiments") == 0
        assert store.count("ingest_batches") == 0
        assert not store._atomic


def test_atomic_success_stores_every_batch(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", 100)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        report = ingest_paths(store, [path], batch_size=20, atomic=True)
        assert (report.experiments, report.episodes, report.batches) == (1, 100, 6)
        assert _episodes(store) == 100


def test_killed_atomic_ingest_leaves_the_store_as_before(tmp_path):
    """A process killed inside the transaction: DuckDB drops the uncommitted work."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap

    db = tmp_path / "k.duckdb"
    path = _jsonl(tmp_path / "k.jsonl", 200)
    script = textwrap.dedent(f"""
        import os, signal
        from evalatlas.store.db import StoreConnection
        from evalatlas.store.ingest import ingest_paths
        store = StoreConnection({str(db)!r})
        real = store.write_batch
        n = []
        def write_batch(**kw):
            real(**kw)
            n.append(1)
            if len(n) == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        store.write_batch = write_batch
        ingest_paths(store, [{str(path)!r}], batch_size=20, atomic=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with StoreConnection(db, read_only=True) as store:
        assert _episodes(store) == 0 and store.count("ingest_batches") == 0
    assert os.path.exists(db)
