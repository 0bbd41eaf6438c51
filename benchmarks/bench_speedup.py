"""FC-Eval speedup aggregation at scale: 100 tasks x 5 agents x 500 benchmarks x 10 samples.

Times, on synthetic data with the FC-Eval shape (20 modules, classes and plain
functions, 3 parameter variants per function, log-normal timings):

1. in memory: raw samples -> per-benchmark speedups (nanmedian), validity, fallback for
   failed agents, levels 1-4 and task speedup for all 500 task payloads, then the
   per-agent run summary (target: < 2 s);
2. the same summary plus a BCa bootstrap interval per agent;
3. from the store: ingest of the records (not part of the target), then
   ``task_payloads`` + ``summarise`` (what ``evalatlas speedups`` runs).

Usage: ``.venv/bin/python benchmarks/bench_speedup.py [--repeats 5] [--no-store]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evalatlas.analysis.speedups import summarise, task_payloads
from evalatlas.metrics.speedup import speedups_from_sample_matrix, task_metrics
from evalatlas.metrics.speedup_summary import agent_metrics_summary
from evalatlas.stats.bootstrap import bootstrap_ci
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.speedups import load_speedup_rows

N_TASKS, N_AGENTS, N_BENCH, N_SAMPLES = 100, 5, 500, 10


def benchmark_names(n: int) -> list[str]:
    names = []
    i = 0
    while len(names) < n:
        mod = f"benchmarks.mod{i % 20}"
        fn = f"time_op{i}"
        base = f"{mod}.Suite{i % 7}.{fn}" if i % 3 else f"{mod}.{fn}"
        names += [f"{base}({p}, 'x')" for p in (10, 100, 1000)]
        i += 1
    return names[:n]


def make_data(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    shape = (N_TASKS, N_BENCH, N_SAMPLES)
    base = rng.lognormal(-6, 1, (N_TASKS, N_BENCH, 1))
    nop = base * rng.lognormal(0, 0.05, shape)
    oracle = base / rng.lognormal(0.2, 0.1, (N_TASKS, N_BENCH, 1)) * rng.lognormal(0, .05, shape)
    agents = [base / rng.lognormal(0.1 * a, 0.2, (N_TASKS, N_BENCH, 1))
              * rng.lognormal(0, 0.05, shape) for a in range(N_AGENTS)]
    failed = rng.random((N_AGENTS, N_TASKS)) < 0.2
    return {"nop": nop, "oracle": oracle, "agents": agents, "failed": failed,
            "names": benchmark_names(N_BENCH)}


def aggregate_in_memory(data: dict, with_ci: bool = False) -> dict[str, dict]:
    names = data["names"]
    per_agent: dict[str, list[dict]] = {f"agent{a}:model": [] for a in range(N_AGENTS)}
    for a in range(N_AGENTS):
        # medians of all tasks at once: arrays are (tasks, benchmarks, samples)
        sa_all, so_all, _ = speedups_from_sample_matrix(data["nop"], data["oracle"],
                                                        data["agents"][a])
        for t in range(N_TASKS):
            failed = bool(data["failed"][a, t])
            tm = task_metrics(names, sa_all[t], so_all[t], pytest_failed=failed,
                              snapshot_failed=False, task_cost_usd=0.1, trajectory_length=40)
            per_agent[f"agent{a}:model"].append(tm.as_dict())
    out = {k: agent_metrics_summary(v) for k, v in per_agent.items()}
    if with_ci:
        for k, v in per_agent.items():
            out[k]["ci"] = bootstrap_ci([p["agent_advantage"] for p in v], n_resamples=2000)
    return out


def write_run_dir(root: Path, data: dict) -> None:
    """The synthetic run as an FC-Eval run directory: per task, sub-trials for nop, oracle
    and the 5 agents, each ``panes/post-test.txt`` with TESTS / RESULT / SNAPSHOT blocks
    (speedups computed from the samples as the adapter's parser.py does; a failed agent
    has one more pytest failure than the oracle, so the merge makes it fall back)."""
    names = data["names"]
    tests = {"error": 0, "failed": 0, "passed": 30, "total": 30}
    snap = {"failed": 0, "passed": 50, "total": 50, "pass-to-fail": 0}
    run = "bench-run"
    for a in range(N_AGENTS):
        sa_all, so_all, _ = speedups_from_sample_matrix(data["nop"], data["oracle"],
                                                        data["agents"][a])
        data.setdefault("sa", {})[a] = sa_all
        data.setdefault("so", {})[a] = so_all
    for t in range(N_TASKS):
        task = f"task{t}"
        subs = [("nop", "nop", None, 0), ("oracle", "oracle:oracle", None, 0)]
        subs += [(f"agent{a}", f"agent{a}:model", a, int(data["failed"][a, t]))
                 for a in range(N_AGENTS)]
        for i, (agent, key, a, fails) in enumerate(subs, start=1):
            result: dict = {"last_agent": key}
            if a is not None:
                sa, so = data["sa"][a][t], data["so"][a][t]
                result["per_benchmark_speedups_by_agent"] = {key: {
                    n: {"agent/nop": float(x), "oracle/nop": float(y),
                        "advantage": float(x - y)}
                    for n, x, y in zip(names, sa, so, strict=True)}}
            d = root / task / f"{task}.1-of-1.{run}.agent-{i}-{agent}"
            (d / "panes").mkdir(parents=True)
            blocks = [("TESTS", {**tests, "failed": fails}), ("RESULT", result),
                      ("SNAPSHOT", snap)]
            (d / "panes" / "post-test.txt").write_text("\n".join(
                f"FORMULACODE_{b}_START\n{json.dumps(v)}\nFORMULACODE_{b}_END"
                for b, v in blocks))
    (root / "run_metadata.json").write_text(json.dumps({"run_id": run}))


def build_store(path: Path, run_dir: Path, data: dict) -> float:
    """Write the run directory and ingest it (adapter + validation + store); seconds."""
    write_run_dir(run_dir, data)
    t0 = time.perf_counter()
    with StoreConnection(path) as store:
        report = ingest_paths(store, [run_dir])
    if report.rejected:
        raise RuntimeError(f"unexpected problems: {report.as_dict()}")
    return time.perf_counter() - t0


def aggregate_from_store(path: Path) -> list[dict]:
    with StoreConnection(path, read_only=True) as store:
        rows = load_speedup_rows(store)
    payloads = task_payloads(rows.episodes, rows.measurements, rows.bounds)
    return summarise(payloads, "agent", level=4)


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-store", action="store_true")
    args = ap.parse_args()
    data = make_data()
    n = N_TASKS * N_AGENTS * N_BENCH
    print(f"{N_TASKS} tasks x {N_AGENTS} agents x {N_BENCH} benchmarks x {N_SAMPLES} samples"
          f" = {n:,} measurements, {3 * n * N_SAMPLES:,} samples")
    t, mem = timed(lambda: aggregate_in_memory(data), args.repeats)
    print(f"in-memory full aggregation: median {t:.3f} s over {args.repeats} runs")
    t, _ = timed(lambda: aggregate_in_memory(data, with_ci=True), max(1, args.repeats // 2))
    print(f"  + BCa bootstrap interval per agent: median {t:.3f} s")
    if args.no_store:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.duckdb"
        print(f"ingest of the FC-Eval run directory (not part of the target): "
              f"{build_store(path, Path(tmp) / 'run', data):.1f} s")
        t, rows = timed(lambda: aggregate_from_store(path), args.repeats)
        print(f"from the store (task_payloads + summarise with intervals): median {t:.3f} s")
        rows = [r for r in rows if r["agent"] in mem]  # nop and oracle rows are extra
        assert len(rows) == N_AGENTS
        for r in rows:  # the store path must agree with the in-memory one
            m = mem[r["agent"]]
            assert abs(r["agent_advantage"] - m["agent_advantage"]) < 1e-9, r["agent"]
            assert abs(r["mean_speedup"] - m["mean_speedup"]) < 1e-9, r["agent"]
        print("store and in-memory results agree; L4 advantage per agent:",
              {r["agent"]: round(r["agent_advantage"], 4) for r in rows})


if __name__ == "__main__":
    main()
