"""Benchmark: 2PL fits of the agent x task matrix, evalatlas vs py-irt 0.7.1.

Data (issue 13): 2PL with abilities N(0, 1), difficulties N(0, 1.5^2),
log-discriminations N(0, 0.3^2), each cell observed with probability 0.7, 10% of the
observed cells held out (seeded). Both fitters see the same training cells.

- evalatlas: :func:`evalatlas.atlas.fit_matrix` end to end (L-BFGS MAP with analytic
  gradients, EM for the ability scale, Laplace standard errors for every parameter,
  held-out AUC/log loss/ECE, broken-task check, result rows);
- baseline: py-irt 0.7.1 ``2pl`` (Pyro SVI, its default 2,000 epochs, lr 0.1), run in
  a separate venv (``--pyirt-python``, default ``.venv-pyirt/bin/python``) through
  ``benchmarks/pyirt_baseline.py``; its time covers loading the JSON-lines file and
  training. Skipped (with the reason printed) when that interpreter is missing, and by
  default for sizes above 200 x 5,000 (hours of SVI).

Reported: seconds (median of ``--repeats``), ratio, Spearman rank correlations with the
true parameters, held-out AUC vs the generating model's own AUC on the same cells, ECE.
Wall and CPU seconds are both printed: on a shared, loaded machine wall time mostly
measures the other processes; CPU time (``time.process_time``, one thread each) is the
fairer comparison of work done.

Run: ``.venv/bin/python benchmarks/bench_atlas.py [--sizes 200x5000,1000x20000]
[--repeats 3] [--pyirt-epochs 2000] [--pyirt-max-cells 1000000]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from evalatlas.atlas.diagnostics import split_holdout
from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.matrix import matrix_from_cells
from evalatlas.atlas.simulate import simulate_2pl
from evalatlas.metrics.calibration import expected_calibration_error, roc_auc

REPO = Path(__file__).resolve().parents[1]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.spearmanr(a, b)[0])


def run_ours(sim, repeats: int) -> dict:
    matrix = matrix_from_cells(sim.cells)
    times, cpu, result = [], [], None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = fit_matrix(matrix, model="2pl", holdout=0.1, seed=0)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    assert result is not None and result.irt is not None
    irt = result.irt
    d = result.diagnostics
    assert all(np.isfinite(r["ability_se"]) for r in result.agent_rows)
    assert all(np.isfinite(r["discrimination_se"]) for r in result.item_rows)
    return {"seconds": statistics.median(times), "all_seconds": times,
            "cpu_seconds": statistics.median(cpu),
            "rho_ability": _spearman(irt.ability, sim.ability),
            "rho_difficulty": _spearman(irt.difficulty, sim.difficulty),
            "rho_discrimination": _spearman(irt.discrimination, sim.discrimination),
            "auc": d["heldout_auc"], "ece": d["ece"], "log_loss": d["heldout_log_loss"],
            "iterations": d["iterations"], "converged": d["converged"]}


def truth_scores(sim, held: np.ndarray) -> dict:
    c = sim.cells
    p = sim.true_prob(c.agent[held], c.item[held])
    y = c.k[held]
    return {"auc": roc_auc(p, y, 1 - y), "ece": expected_calibration_error(p, y, 1 - y)}


def run_pyirt(sim, train: np.ndarray, held: np.ndarray, python: Path, epochs: int) -> dict:
    c = sim.cells
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "train.jsonlines"
        out = Path(tmp) / "params.json"
        rows: dict[int, dict[str, int]] = {}
        for a, j, y in zip(c.agent[train].tolist(), c.item[train].tolist(),
                           c.k[train].tolist(), strict=True):
            rows.setdefault(a, {})[f"i{j}"] = int(y)
        with data.open("w", encoding="utf-8") as fh:
            for a in sorted(rows):
                fh.write(json.dumps({"subject_id": f"s{a}", "responses": rows[a]}) + "\n")
        started = time.perf_counter()
        proc = subprocess.run([str(python), str(REPO / "benchmarks" / "pyirt_baseline.py"),
                               str(data), str(out), "--epochs", str(epochs)],
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        p = json.loads(out.read_text(encoding="utf-8"))
    N, M = sim.ability.size, sim.difficulty.size
    ab = np.array([p["ability"].get(f"s{i}", np.nan) for i in range(N)])
    diff = np.array([p["diff"].get(f"i{j}", np.nan) for j in range(M)])
    disc = np.array([p["disc"].get(f"i{j}", np.nan) for j in range(M)])
    a, j, y = c.agent[held], c.item[held], c.k[held]
    ok = np.isfinite(ab[a]) & np.isfinite(diff[j])
    prob = 1 / (1 + np.exp(-disc[j[ok]] * (ab[a[ok]] - diff[j[ok]])))
    fin = np.isfinite(diff)
    return {"seconds": p["seconds"], "cpu_seconds": p.get("cpu_seconds"),
            "wall_seconds": wall, "torch": p.get("torch"),
            "rho_ability": _spearman(ab, sim.ability),
            "rho_difficulty": _spearman(diff[fin], sim.difficulty[fin]),
            "rho_discrimination": _spearman(disc[fin], sim.discrimination[fin]),
            "auc": roc_auc(prob, y[ok], 1 - y[ok]),
            "ece": expected_calibration_error(prob, y[ok], 1 - y[ok])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="200x5000,1000x20000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pyirt-python", type=Path, default=REPO / ".venv-pyirt/bin/python")
    ap.add_argument("--pyirt-epochs", type=int, default=2000)
    ap.add_argument("--pyirt-max-cells", type=int, default=1_000_000)
    ap.add_argument("--json", type=Path, help="Also write the results here.")
    args = ap.parse_args()
    report = []
    for size in args.sizes.split(","):
        n_agents, n_items = (int(x) for x in size.lower().split("x"))
        sim = simulate_2pl(n_agents, n_items, observed=0.7, seed=0)
        train, held = split_holdout(sim.cells, 0.1, 0)
        repeats = args.repeats if sim.cells.size <= 2_000_000 else 1
        ours = run_ours(sim, repeats)
        truth = truth_scores(sim, held)
        entry = {"size": size, "cells": sim.cells.size, "ours": ours, "truth": truth}
        print(f"== {n_agents} agents x {n_items} tasks, {sim.cells.size:,} observed cells")
        print(f"evalatlas 2PL: {ours['seconds']:.2f} s wall, {ours['cpu_seconds']:.2f} s CPU "
              f"(median of {repeats}: "
              f"{', '.join(f'{t:.2f}' for t in ours['all_seconds'])}); rho ability "
              f"{ours['rho_ability']:.4f}, difficulty {ours['rho_difficulty']:.4f}, "
              f"discrimination {ours['rho_discrimination']:.4f}; held-out AUC "
              f"{ours['auc']:.4f} (generating model {truth['auc']:.4f}, diff "
              f"{ours['auc'] - truth['auc']:+.4f}); ECE {ours['ece']:.4f} (generating "
              f"model {truth['ece']:.4f}); {ours['iterations']} L-BFGS iterations")
        if not args.pyirt_python.exists():
            print(f"py-irt: skipped, no interpreter at {args.pyirt_python}")
        elif sim.cells.size > args.pyirt_max_cells:
            print(f"py-irt: skipped above {args.pyirt_max_cells:,} cells (--pyirt-max-cells)")
        else:
            base = run_pyirt(sim, train, held, args.pyirt_python, args.pyirt_epochs)
            entry["pyirt"] = base
            print(f"py-irt 0.7.1 2PL ({args.pyirt_epochs} epochs, torch {base['torch']}): "
                  f"{base['seconds']:.1f} s wall, {base['cpu_seconds']:.1f} s CPU (process "
                  f"{base['wall_seconds']:.1f} s); rho "
                  f"ability {base['rho_ability']:.4f}, difficulty {base['rho_difficulty']:.4f}"
                  f", discrimination {base['rho_discrimination']:.4f}; held-out AUC "
                  f"{base['auc']:.4f}; ECE {base['ece']:.4f}")
            print(f"ratio py-irt / evalatlas: {base['seconds'] / ours['seconds']:.1f}x wall, "
                  f"{base['cpu_seconds'] / ours['cpu_seconds']:.1f}x CPU")
        report.append(entry)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
