"""The group x task matrix and its paired comparisons, composed once for the report
(store -> per (group, task) counts (:func:`evalatlas.store.task_cells.task_cells`) ->
arrays -> ``evalatlas compare``'s pair rule and Holm adjustment).

The report draws the matrix (heatmap, drill-down order) and shows the pairs; the numbers
of each pair are :func:`evalatlas.analysis.compare.aligned_pair` on the two groups'
per-task success rates and :func:`~evalatlas.analysis.compare.holm_rows` across the
pairs, the functions behind ``evalatlas compare``, so the report's paired matrix is the
command's by construction (tests/report/test_specs.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from evalatlas.analysis.compare import aligned_pair, holm_rows
from evalatlas.store.db import StoreConnection
from evalatlas.store.task_cells import task_cells


@dataclass
class TaskMatrix:
    """Per group x task: attempts with a known outcome, successes, reward and cost sums.

    Rows are the groups (``keys``, sorted; ``names`` as stored, not yet made unique for
    display), columns the tasks (``tasks``, sorted ids as stored)."""

    keys: list[str]
    names: list[str]
    tasks: list[str]
    known: np.ndarray       # (groups, tasks) int
    succ: np.ndarray        # (groups, tasks) int
    reward_sum: np.ndarray  # (groups, tasks) float
    reward_n: np.ndarray
    cost_sum: np.ndarray
    cost_n: np.ndarray
    ran: np.ndarray         # (groups, tasks) bool: any episode at all
    episodes: np.ndarray    # (groups, tasks) int: all episodes, outcome known or not

    def rates(self) -> np.ndarray:
        """Each cell's mean success over its attempts with a known outcome (NaN: none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.known > 0, self.succ / np.maximum(self.known, 1), np.nan)


def task_matrix(store: StoreConnection, by: str, ids: Sequence[str] | None) -> TaskMatrix:
    """The matrix of the experiments ``ids`` (None: all) grouped by ``by``."""
    arr, names = task_cells(store, by, ids)
    k_all = np.asarray(arr["k"], dtype=object)
    t_all = np.asarray(arr["task"], dtype=object)
    keys = sorted(set(k_all.tolist()), key=str)
    tasks = sorted(set(t_all.tolist()), key=str)
    ki = {k: i for i, k in enumerate(keys)}
    ti = {t: i for i, t in enumerate(tasks)}
    gi = np.fromiter((ki[k] for k in k_all), dtype=np.int64, count=k_all.size)
    tj = np.fromiter((ti[t] for t in t_all), dtype=np.int64, count=t_all.size)
    shape = (len(keys), len(tasks))

    def grid(col: str, dtype: Any) -> np.ndarray:
        g = np.zeros(shape, dtype=dtype)
        g[gi, tj] = np.asarray(arr[col], dtype=dtype)
        return g

    ran = np.zeros(shape, dtype=bool)
    ran[gi, tj] = True
    return TaskMatrix(keys=[str(k) for k in keys], names=[str(names[k]) for k in keys],
                      tasks=[str(t) for t in tasks], known=grid("n", np.int64),
                      succ=grid("c", np.int64), reward_sum=grid("rs", float),
                      reward_n=grid("rn", np.int64), cost_sum=grid("cs", float),
                      cost_n=grid("cn", np.int64), ran=ran,
                      episodes=grid("n_all", np.int64))


PAIR_FIELDS = ("diff", "diff_ci_low", "diff_ci_high", "diff_ci_note", "test", "p")
"""The numbers of :func:`~evalatlas.analysis.compare.aligned_pair` a matrix pair keeps."""


def paired_matrix(matrix: TaskMatrix, rows: Sequence[int], *, confidence: float = 0.95,
                  alpha: float = 0.05) -> list[dict[str, Any]]:
    """Every pair of the matrix rows ``rows`` (indices, in that order: A is the earlier):
    ``a_key``, ``b_key``, ``shared_tasks`` (tasks both have a known outcome on), the
    numbers of :data:`PAIR_FIELDS` (A - B of the per-task success rates), ``p_holm``
    (Holm across all the pairs; the raw ``p`` for a single pair) and ``significant``
    (``p_holm`` below ``alpha`` and a non-zero difference, the verdict of ``compare``'s
    sentence)."""
    rate = matrix.rates()
    out = []
    for i, j in combinations(rows, 2):
        both = (matrix.known[i] > 0) & (matrix.known[j] > 0)
        r = aligned_pair(rate[i][both], rate[j][both], confidence=confidence, alpha=alpha)
        out.append({"a_key": matrix.keys[i], "b_key": matrix.keys[j],
                    "shared_tasks": int(both.sum()), **{k: r[k] for k in PAIR_FIELDS}})
    holm_rows(out)
    for r in out:
        r.setdefault("p_holm", r["p"])  # one comparison: nothing to adjust
        r["significant"] = bool(r["p_holm"] is not None and r["p_holm"] < alpha
                                and r["diff"])
    return out
