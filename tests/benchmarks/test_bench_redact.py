"""benchmarks/bench_redact.py measures what it says: its baseline really turns redaction
off on both ingest paths, and its measured run really redacts (it once patched a function
that had moved, so both runs redacted and the benchmark compared a run with itself)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from evalatlas.store.db import StoreConnection

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_redact.py"
SECRET = "sk-ant-api03-" + "A" * 40


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_redact", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("fast", [False, True])
def test_the_baseline_does_not_redact_and_the_measured_run_does(
        tmp_path: Path, fast: bool) -> None:
    bench = _bench()
    src = tmp_path / "e.jsonl"
    bench.write_episodes(src, 300)  # over the columnar path's small-batch threshold
    with src.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"experiment_id": "e", "task_id": "t", "trajectory_id": "key",
                             "reward": 1.0, "output_text": f"the key is {SECRET}"}) + "\n")
    seen = {}
    for redact in (False, True):
        assert bench.ingest_seconds(src, tmp_path, fast=fast, redact=redact) > 0
        with StoreConnection(tmp_path / f"s-{fast}-{redact}.duckdb", read_only=True) as store:
            seen[redact] = store.query("SELECT output_text FROM episodes "
                                       "WHERE trajectory_id = 'key'")[0]["output_text"]
            assert store.count("episodes") == 301
    assert SECRET in seen[False]
    assert SECRET not in seen[True] and "the key is" in seen[True]
