"""``store.episodes()`` frames (``store/frames.py``): Arrow-backed dtypes, the same numbers
through a frame as through the store, and bounded memory (issue 28.6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import evalatlas as ea
from evalatlas.store.db import StoreConnection
from measure import same  # benchmarks/measure.py, the benchmark's comparison too

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# Episodes of realistic width (~1 KB: ids, a task description, tools, JSON scores/extra,
# usage), 50 agents x 2,000 tasks x attempts, ~3% unknown outcomes, ~5% unknown costs.
FILL = """
INSERT INTO experiments (experiment_id, experiment_name, agent_id, agent_name,
                         benchmark_name, subset_n_tasks, labels)
SELECT 'exp' || lpad(a::VARCHAR, 4, '0'), 'run of agent ' || a, 'agent-' || a,
       'agent-' || a || '-claude-sonnet-4', 'synthbench', 2000, '{"tier": "t' || (a % 3) || '"}'
FROM range(50) r(a);
INSERT INTO episodes BY NAME
SELECT 'exp' || lpad((i % 50)::VARCHAR, 4, '0') AS experiment_id,
       'task-' || lpad(((i // 50) % 2000)::VARCHAR, 5, '0') || '_ep' || (i // 100000)
           AS trajectory_id,
       'task-' || lpad(((i // 50) % 2000)::VARCHAR, 5, '0') AS task_id,
       md5(((i // 50) % 2000)::VARCHAR) || md5(((i // 50) % 2000)::VARCHAR)
           AS task_version_hash,
       (i // 100000)::INTEGER AS attempt, i // 100000 AS seed, 'test' AS split,
       'Fix the failing test in the repository and make the build pass.' AS task_description,
       ['bash', 'edit_file', 'view_file', 'search', 'submit'] AS tool_names,
       CASE WHEN hash(i) % 33 = 0 THEN NULL ELSE hash(i * 7) % 2 = 0 END AS success,
       CASE WHEN hash(i) % 33 = 0 THEN NULL WHEN hash(i * 7) % 2 = 0 THEN 1.0 ELSE 0.0 END
           AS reward,
       'completed' AS status,
       CASE WHEN hash(i * 3) % 30 = 0 THEN 'TimeoutError' END AS error_type,
       41 AS n_steps, 20 AS n_agent_steps, 21 AS n_env_steps,
       10 + (hash(i * 5) % 890000) / 1000.0 AS wall_time_s, 1763000000.0 + i AS timestamp,
       1000 + hash(i * 11) % 89000 AS prompt_tokens, 100 + hash(i * 13) % 8900
           AS completion_tokens,
       CASE WHEN hash(i * 17) % 20 = 0 THEN NULL ELSE (hash(i * 11) % 89000) * 3e-6 END
           AS cost_usd,
       'source' AS cost_source, 20 AS n_llm_calls, 'claude-sonnet-4' AS usage_model,
       CASE WHEN i % 2 = 0 THEN 'anthropic/claude-sonnet-4-20250514'
            ELSE 'openai/gpt-5-2025-08-07' END AS llm_model,
       '{"impl_rate": ' || (hash(i * 19) % 10000) / 10000.0 || '}' AS scores,
       '{"harness": "synthetic", "host": "worker-' || (i % 8) || '"}' AS extra,
       '/data/runs/synth.jsonl' AS source_file, 1 AS ingest_batch, 1 AS format_version,
       'harness' AS outcome_source
FROM range(?) r(i);
"""


def synth_store(path: Path, n: int) -> Path:
    with StoreConnection(path) as store:
        store.con.execute("BEGIN TRANSACTION")
        for sql in FILL.split(";"):
            if sql.strip():
                store.con.execute(sql, [n] if "?" in sql else [])
        store.con.execute("COMMIT")
    return path


def test_frame_columns_are_arrow_backed_with_missing_kept_missing(tmp_path: Path) -> None:
    db = synth_store(tmp_path / "s.duckdb", 2000)
    with ea.open(db, read_only=True) as store:
        eps = store.episodes()
    assert len(eps) == 2000
    assert all(isinstance(t, pd.ArrowDtype) for t in eps.dtypes)  # no Python object per cell
    assert str(eps["scores"].dtype) == "string[pyarrow]"  # JSON as its text, not decoded
    assert json.loads(eps["scores"].iloc[0]).keys() == {"impl_rate"}
    assert list(eps["tool_names"].iloc[0]) == ["bash", "edit_file", "view_file", "search",
                                               "submit"]
    assert str(eps["success"].dtype) == "bool[pyarrow]"
    assert str(eps["attempt"].dtype) == "int32[pyarrow]"
    assert str(eps["prompt_tokens"].dtype) == "int64[pyarrow]"
    assert str(eps["reward"].dtype) == "double[pyarrow]"
    unknown = eps["reward"].isna()
    assert 0 < unknown.sum() < 200 and eps.loc[unknown, "success"].isna().all()
    assert eps["success"].sum() == (eps["reward"] > 0).sum()  # missing skipped, never 0
    assert eps["cost_usd"].isna().sum() > 0 and (eps["cost_usd"].dropna() > 0).all()
    assert eps["error_type"].isna().sum() > 1000  # missing text is missing, never ""
    assert eps["agent_name"].iloc[0] == "agent-0-claude-sonnet-4"
    # the store's order, the same every time
    assert list(eps["experiment_id"].iloc[:3]) == ["exp0000", "exp0001", "exp0002"]
    with ea.open(db, read_only=True) as store:
        assert store.episodes()["trajectory_id"].equals(eps["trajectory_id"])


@pytest.mark.parametrize("by", ["agent", "model", "task", "label:tier"])
def test_a_frame_gives_the_numbers_of_its_store(tmp_path: Path, by: str) -> None:
    db = synth_store(tmp_path / "s.duckdb", 5000)
    with ea.open(db, read_only=True) as store:
        want = ea.summary(store, by).rows
        got = ea.summary(store.episodes(), by).rows
    assert len(want) > 1 and same(got, want)


def test_the_demo_frame_gives_the_numbers_of_its_store(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    with ea.open(db) as store:
        store.ingest(EXAMPLES)
        want = ea.summary(store).rows
        got = ea.summary(store.episodes()).rows
    assert [r["agent"] for r in got] == ["planner-sonnet", "react-gpt-4o", "tiny-mini"]
    assert same(got, want)


# Peak RSS of one process: 200k episodes through store.episodes() and ea.summary(frame).
# Measured (duckdb 1.5.5): ~1,100 MB with .df() and a copied frame, ~490 MB now; the 2M
# case is in benchmarks/bench_episodes_frame.py (BENCHMARKS.md).
# The peak is VmHWM of /proc/self/status (this process's own memory since exec), not
# getrusage's ru_maxrss: Linux folds the forked copy of the parent into ru_maxrss at exec, so
# inside a full pytest run (a parent of ~1.1 GB) ru_maxrss reported the parent's size
# (benchmarks/measure.py: peak_kb, which the benchmark uses too).
SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[2])
import evalatlas as ea
from measure import peak_kb

with ea.open(sys.argv[1], read_only=True) as store:
    store_rows = ea.summary(store).rows
    base = peak_kb()
    frame = store.episodes()
    frame_rows = ea.summary(frame).rows
peak = peak_kb()
print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024, "n": len(frame),
                  "store": store_rows, "frame": frame_rows}))
"""
BOUND_MB = 750


def test_200k_episode_frame_summary_memory_is_bounded(tmp_path: Path) -> None:
    db = synth_store(tmp_path / "big.duckdb", 200_000)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(db), str(BENCHMARKS)],
                         capture_output=True, text=True, timeout=600, check=True)
    doc = json.loads(out.stdout.splitlines()[-1])
    assert doc["n"] == 200_000
    assert len(doc["store"]) == 50 and same(doc["frame"], doc["store"])
    assert doc["peak_mb"] < BOUND_MB, doc["peak_mb"]
