"""Benchmark: outcome summary with intervals and pass@k over 1M episodes.

50 agents x 2,000 tasks x 10 attempts = 1,000,000 episodes, written straight into a
DuckDB store (ingest has its own benchmark), then:

- evalatlas: :func:`evalatlas.analysis.summary.outcome_rows` over
  :func:`evalatlas.store.outcomes.task_outcome_counts` (success rate with Wilson
  and task-clustered intervals, pass@k for k = 2, 4, 5, 8, 10 with intervals), from the
  store;
- reference: a straightforward pandas groupby over an in-memory DataFrame of the same
  episodes (Wilson, Miller's clustered SE and pass@k with ``math.comb``), timed in the
  same run. The two must agree to 1e-9.

Run: ``.venv/bin/python benchmarks/bench_outcomes.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm
from scipy.stats import t as t_dist

from evalatlas.analysis.summary import outcome_rows
from evalatlas.store.db import StoreConnection
from evalatlas.store.outcomes import task_outcome_counts

N_AGENTS, N_TASKS, N_ATTEMPTS = 50, 2_000, 10
KS = [2, 4, 5, 8, 10]


def build_store(path: Path) -> StoreConnection:
    """1M episodes; P(success) = sigmoid(ability - difficulty), deterministic hashes."""
    store = StoreConnection(path)
    con = store.con
    con.execute(f"""
        INSERT INTO experiments (experiment_id, experiment_name, agent_id, agent_name,
                                 benchmark_name, labels, extra)
        SELECT printf('exp%04d', a), printf('exp%04d', a), printf('agent%04d', a),
               printf('agent-%02d', a), 'synthetic', '{{}}', '{{}}'
        FROM range({N_AGENTS}) r(a)
    """)
    con.execute(f"""
        INSERT INTO episodes (experiment_id, trajectory_id, task_id, attempt, success,
                              reward, status)
        SELECT printf('exp%04d', a), printf('t%05d_ep%d', t, k), printf('task-%05d', t), k,
               ok, CASE WHEN ok THEN 1.0 ELSE 0.0 END, 'completed'
        FROM (
          SELECT a, t, k,
                 (hash(a, t, k) % 1000000) / 1e6
                   < 1 / (1 + exp(-((a / {N_AGENTS} * 3 - 1.5)
                                    - ((hash(t) % 1000) / 1000.0 * 4 - 2)))) AS ok
          FROM range({N_AGENTS}) ra(a), range({N_TASKS}) rt(t), range({N_ATTEMPTS}) rk(k)
        )
    """)
    con.execute("CHECKPOINT")
    return store


def pandas_reference(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """The same numbers with a plain pandas groupby (the baseline to beat and to match)."""
    z = norm.ppf(0.5 + confidence / 2)
    g = df.groupby("agent")["success"]
    out = g.agg(n="count", c="sum", mean="mean")
    p, n = out["mean"], out["n"]
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    out["wilson_low"], out["wilson_high"] = centre - half, centre + half
    d = df["success"] - df["agent"].map(out["mean"])
    dd = (d * d).groupby(df["agent"]).sum()
    cl = d.groupby([df["agent"], df["task"]]).sum()
    within = (cl * cl).groupby(level=0).sum() - dd
    se = np.sqrt(dd / (n * (n - 1)) + within / (n * n))
    n_clusters = df.groupby("agent")["task"].nunique()
    tq = t_dist.ppf(0.5 + confidence / 2, n_clusters - 1)
    out["clustered_low"], out["clustered_high"] = p - tq * se, p + tq * se
    per_task = df.groupby(["agent", "task"])["success"].agg(n="count", c="sum").reset_index()
    for k in KS:
        per_task[f"p{k}"] = per_task.apply(
            lambda r, k=k: 1 - math.comb(int(r.n - r.c), k) / math.comb(int(r.n), k), axis=1)
        out[f"pass@{k}"] = per_task.groupby("agent")[f"p{k}"].mean()
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        store = build_store(Path(tmp) / "bench.duckdb")
        build_s = time.perf_counter() - t0
        assert store.count("episodes") == N_AGENTS * N_TASKS * N_ATTEMPTS
        ours_s, rows = timed(lambda: outcome_rows(*task_outcome_counts(store)), args.repeats)
        t0 = time.perf_counter()
        df = store.con.execute("""
            SELECT x.agent_id AS agent, e.task_id AS task, CAST(e.success AS DOUBLE) AS success
            FROM episodes e JOIN experiments x USING (experiment_id)""").df()
        load_s = time.perf_counter() - t0
        ref_s, ref = timed(lambda: pandas_reference(df), max(1, args.repeats // 2))
        store.close()
    worst = clustered = 0.0
    for r in rows:
        e = ref.loc[r["agent_id"]]
        pairs = [(r["success_rate"], e["mean"]),
                 (r["success_rate_ci_low"], e["wilson_low"]),
                 (r["success_rate_ci_high"], e["wilson_high"])]
        pairs += [(r["pass_at_k"][str(k)]["value"], e[f"pass@{k}"]) for k in KS]
        worst = max(worst, max(abs(a - b) for a, b in pairs))
        # the reference's clustered interval is the plain t interval; the summary's keeps
        # it inside [0, 1] (stats/standard_errors.py), so the two differ by design
        clustered = max(clustered, abs(r["success_rate_clustered_ci_low"] - e["clustered_low"]),
                        abs(r["success_rate_clustered_ci_high"] - e["clustered_high"]))
    # every k the reference computes is there (the summary adds its default ks too)
    assert len(rows) == N_AGENTS and set(map(str, KS)) <= set(rows[0]["pass_at_k"])
    assert worst < 1e-9, worst
    print(f"rate, Wilson and pass@k equal to the reference (max abs difference {worst:.1e}); "
          f"clustered interval vs the plain t interval: max abs difference {clustered:.1e}")
    print(f"episodes: {N_AGENTS * N_TASKS * N_ATTEMPTS:,} ({N_AGENTS} agents x {N_TASKS:,} "
          f"tasks x {N_ATTEMPTS} attempts); store built in {build_s:.1f} s")
    print(f"evalatlas outcome_summary (from the store): median {ours_s:.2f} s "
          f"over {args.repeats} runs")
    print(f"pandas groupby reference (in memory, load {load_s:.2f} s not included): "
          f"median {ref_s:.2f} s")
    print(f"speed-up vs pandas: {ref_s / ours_s:.1f}x; max abs difference {worst:.1e}")


if __name__ == "__main__":
    main()
