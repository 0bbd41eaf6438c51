"""Cost of fitting the stored atlas on every cell (issue 21 point 7): one
``fit_matrix(..., holdout=0.1)`` on a simulated 200 x 5,000 2PL matrix (70% observed),
median of 3, CPU and wall seconds. Run it with two checkouts' ``src`` on ``PYTHONPATH``
to compare: ``PYTHONPATH=src python benchmarks/bench_atlas_refit.py``."""

from __future__ import annotations

import statistics
import time

from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.matrix import matrix_from_cells
from evalatlas.atlas.simulate import simulate_2pl


def main() -> None:
    matrix = matrix_from_cells(simulate_2pl(200, 5000, seed=0, observed=0.7).cells)
    cpu, wall = [], []
    for _ in range(3):
        t, c = time.perf_counter(), time.process_time()
        fit = fit_matrix(matrix, model="2pl", holdout=0.1, seed=0)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    d = fit.diagnostics
    print(f"cpu {statistics.median(cpu):.2f} s, wall {statistics.median(wall):.2f} s, "
          f"iterations {d['iterations']}, cells {d['cells_observed']}, "
          f"held-out AUC {d['heldout_auc']:.4f}")


if __name__ == "__main__":
    main()
