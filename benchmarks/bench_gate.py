"""The CI gate by simulation, larger than the test suite's (issue 25): false alarms with no
change, power at the reported mde, peeking with the sequential and the fixed-sample test,
`gate plan` against simulated power, beside what other tools do on the same suites (an
unpaired two-proportion z-test on pooled attempts, as lm-eval's comparator, and a raw
"candidate mean below baseline mean" threshold), and the time of one `evalatlas gate`.

    .venv/bin/python benchmarks/bench_gate.py [--suites 5000] [--peek-suites 1000]
        [--plan-suites 1000] [--resamples 1999]

Prints Markdown tables for BENCHMARKS.md. Fixed seeds; every number is a rate over
simulated suites with its Monte Carlo standard error.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalatlas.analysis.gate import decide, paired_numbers, plan_sides
from evalatlas.stats.sequential import sequential_drop_test

ALPHA = 0.05


def suite(rng: np.random.Generator, n: int, max_attempts: int, drop: float = 0.0
          ) -> tuple[np.ndarray, ...]:
    """Heterogeneous tasks (p = 0.3 + 0.7 Beta(2, 1.5): 0.3 to 1, none so low that a drop of
    the mde would be cut at 0), 1..max_attempts attempts a side."""
    p = 0.3 + 0.7 * rng.beta(2, 1.5, n)
    kb = rng.integers(1, max_attempts + 1, n)
    kc = rng.integers(1, max_attempts + 1, n)
    q = np.clip(p - drop, 0, 1)
    return rng.binomial(kb, p) / kb, rng.binomial(kc, q) / kc, kb, kc


RESAMPLES = [1_999]
"""Sign flips per simulated gate (the CLI's default is 9,999; any count keeps the test
valid, Phipson & Smyth 2010; set by --resamples)."""


def gate_regression(vb: np.ndarray, vc: np.ndarray, kb: np.ndarray, kc: np.ndarray,
                    n_resamples: int | None = None) -> tuple[bool, dict]:
    n_resamples = n_resamples or RESAMPLES[0]
    row = paired_numbers(vb, vc, base_attempts=kb, cand_attempts=kc, n_resamples=n_resamples)
    verdict = decide(row["p_value"], row["diff"], row["mde"], max_drop=0.0, alpha=ALPHA)
    return verdict == "regression", row


def unpaired_z(vb: np.ndarray, vc: np.ndarray, kb: np.ndarray, kc: np.ndarray) -> bool:
    """Pooled attempts as independent Bernoulli draws, one-sided two-proportion z-test."""
    sb, sc = float(np.sum(vb * kb)), float(np.sum(vc * kc))
    nb, nc = float(kb.sum()), float(kc.sum())
    pool = (sb + sc) / (nb + nc)
    se = math.sqrt(pool * (1 - pool) * (1 / nb + 1 / nc))
    return se > 0 and (sc / nc - sb / nb) / se < -1.6448536269514722


def se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def design_rows(rng: np.random.Generator, sims: int) -> list[str]:
    out = ["| design | gate's test | no change: gate | unpaired z | mean below baseline "
           "| mde (median) | drop = mde: gate | unpaired z |",
           "|---|---|---|---|---|---|---|---|"]
    for n, k in ((50, 1), (200, 1), (50, 5), (200, 5), (500, 3)):
        alarms = z_alarms = raw_alarms = 0
        mdes, test = [], ""
        for _ in range(sims):
            vb, vc, kb, kc = suite(rng, n, k)
            hit, row = gate_regression(vb, vc, kb, kc)
            alarms += hit
            z_alarms += unpaired_z(vb, vc, kb, kc)
            raw_alarms += vc.mean() < vb.mean()
            mdes.append(row["mde"])
            test = row["test"]
        mde = float(np.median([m for m in mdes if m is not None]))
        hits = z_hits = 0
        for _ in range(sims):
            vb, vc, kb, kc = suite(rng, n, k, drop=mde)
            hits += gate_regression(vb, vc, kb, kc)[0]
            z_hits += unpaired_z(vb, vc, kb, kc)
        fa, pw = alarms / sims, hits / sims
        attempts = "1" if k == 1 else f"1-{k}"
        out.append(
            f"| {n} tasks x {attempts} attempt(s) a side | {test} | **{fa:.3f}** +/- "
            f"{se(fa, sims):.3f} "
            f"| {z_alarms / sims:.3f} | {raw_alarms / sims:.3f} | {100 * mde:.1f} pts | "
            f"**{pw:.3f}** +/- {se(pw, sims):.3f} | {z_hits / sims:.3f} |")
    return out


def peeking_rows(rng: np.random.Generator, sims: int) -> list[str]:
    suites = [suite(rng, 500, 5) for _ in range(sims)]
    seq = sum(sequential_drop_test(vc - vb, alpha=ALPHA).rejected_at is not None
              for vb, vc, _, _ in suites)
    stopped = np.zeros(sims, dtype=bool)
    for t in range(10, 501, 10):  # looks outer: the random sign flips are reused per size
        for i, (vb, vc, kb, kc) in enumerate(suites):
            if not stopped[i]:
                stopped[i] = gate_regression(vb[:t], vc[:t], kb[:t], kc[:t])[0]
    fixed = int(stopped.sum())
    s, f = seq / sims, fixed / sims
    return ["| looks | suites | sequential (`--sequential`) | fixed-sample gate at every look |",
            "|---|---|---|---|",
            f"| every 10 tasks up to 500, 1-5 attempts a side | {sims:,} | **{s:.3f}** +/- "
            f"{se(s, sims):.3f} | {f:.3f} +/- {se(f, sims):.3f} |"]


def plan_rows(rng: np.random.Generator, sims: int) -> list[str]:
    out = ["| baseline | drop | attempts | plan: tasks | simulated power at plan's N "
           "| at 0.9 N | at 1.1 N |", "|---|---|---|---|---|---|---|"]
    p_true = rng.beta(2, 1.5, 400)
    for drop, k in ((0.05, 1), (0.05, 3), (0.03, 5)):
        obs = {"task": [], "success": []}
        for i, p in enumerate(p_true):
            for o in rng.binomial(1, p, 5):
                obs["task"].append(f"t{i}")
                obs["success"].append(float(o))
        side = {"task": np.array(obs["task"], dtype=object),
                "success": np.array(obs["success"]), "reward": np.array(obs["success"]),
                "benchmark": np.full(len(obs["task"]), "b", dtype=object),
                "split": np.full(len(obs["task"]), None, dtype=object),
                "timestamp": np.zeros(len(obs["task"]))}
        need = plan_sides(side, drop=drop, attempts=k).meta["tasks_needed"]

        def power(n: int, k: int = k, drop: float = drop) -> float:
            hits = 0
            for _ in range(sims):
                p = rng.choice(p_true, n)
                kk = np.full(n, k)
                vb = rng.binomial(k, p) / k
                vc = rng.binomial(k, np.clip(p - drop, 0, 1)) / k
                hits += gate_regression(vb, vc, kk, kk, n_resamples=999)[0]
            return hits / sims

        out.append(f"| 400 tasks x 5 attempts | {100 * drop:.0f} pts | {k} | {need:,} | "
                   f"**{power(need):.3f}** | {power(round(0.9 * need)):.3f} | "
                   f"{power(round(1.1 * need)):.3f} |")
    return out


def timing_rows(repeats: int) -> list[str]:
    """Wall time of `evalatlas gate` and of `evalatlas compare` (the baseline: the same
    store, the same two sides) from the shell, medians."""
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for agent, drop in (("base", 0.0), ("cand", 0.02)):
            lines = [{"experiment_id": f"x-{agent}", "experiment_name": agent,
                      "agent": {"name": agent, "config_type": "T", "config": {}},
                      "benchmark_name": "bench",
                      "benchmark_subset": {"name": "bench", "n_tasks": 2000}}]
            for t in range(2000):
                p = 0.3 + 0.6 * (t % 7) / 6 - drop
                for a in range(5):
                    lines.append({"experiment_id": f"x-{agent}", "task_id": f"t{t}",
                                  "trajectory_id": f"{agent}-{t}-{a}", "attempt": a,
                                  "success": bool(rng.random() < p), "timestamp": t + a})
            (d / f"{agent}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        db = d / "s.duckdb"
        exe = str(Path(sys.executable).with_name("evalatlas"))
        subprocess.run([exe, "--db", str(db), "ingest", str(d / "base.jsonl"),
                        str(d / "cand.jsonl")], check=True, capture_output=True)
        out = ["| command (2,000 tasks x 5 attempts a side) | median s |", "|---|---|"]
        for label, args in (
                ("evalatlas compare base cand (baseline)", ["compare", "base", "cand"]),
                ("evalatlas gate --baseline base --candidate cand",
                 ["gate", "--baseline", "base", "--candidate", "cand"]),
                ("evalatlas gate ... --sequential",
                 ["gate", "--baseline", "base", "--candidate", "cand", "--sequential"])):
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                subprocess.run([exe, "--db", str(db), *args, "--format", "json"],
                               capture_output=True)
                times.append(time.perf_counter() - t0)
            out.append(f"| {label} | {statistics.median(times):.2f} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suites", type=int, default=5_000)
    ap.add_argument("--peek-suites", type=int, default=1_000)
    ap.add_argument("--plan-suites", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--resamples", type=int, default=1_999)
    args = ap.parse_args()
    RESAMPLES[0] = args.resamples
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    for title, rows in (
            ("No change and a drop equal to the mde", lambda: design_rows(rng, args.suites)),
            ("Peeking", lambda: peeking_rows(rng, args.peek_suites)),
            ("gate plan against simulation", lambda: plan_rows(rng, args.plan_suites)),
            ("Time", lambda: timing_rows(args.repeats))):
        print(f"\n### {title}\n")
        print("\n".join(rows()), flush=True)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
