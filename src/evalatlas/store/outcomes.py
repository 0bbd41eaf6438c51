"""Outcome summary with error bars and pass@k per group, straight from the store.

For each group (agent by default; any ``--by`` key of :mod:`evalatlas.store.queries`):

- success rate over episodes with its Wilson interval (:func:`wilson_interval`);
- the same mean with a **clustered** interval, tasks as clusters (Miller 2024,
  :func:`mean_with_interval` with ``clusters``): repeated attempts of one task are not
  independent, so this is the honest interval when tasks have several attempts;
- pass@k for the default k values of the group's fewest attempts per task
  (:func:`default_k_values`) or the ks asked for, per task with the unbiased estimator
  (:func:`pass_at_k_counts`) averaged over tasks with at least k attempts, as
  :func:`pass_at_k_over_tasks`; each with a CLT interval over tasks.

The heavy lifting is one DuckDB aggregation to (group, task, attempts, successes); the
per-episode 0/1 outcomes the clustered SE needs are rebuilt from those counts in numpy
(exact: success is binary and order within a task does not matter). Built for millions
of episodes (see ``benchmarks/bench_outcomes.py`` and BENCHMARKS.md). Episodes whose
outcome is unknown (null reward) are left out. ``evalatlas summary`` shows its clustered
interval and pass@k columns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evalatlas.metrics.outcomes import default_k_values, pass_at_k_counts
from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.standard_errors import mean_with_interval
from evalatlas.store.db import Store
from evalatlas.store.queries import experiment_filter, group_expr


def outcome_summary(
    store: Store,
    by: str = "agent",
    *,
    experiment: list[str] | None = None,
    ks: list[int] | None = None,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One row per group: success rate with Wilson and clustered intervals, pass@k [CI]."""
    name, key, disp = group_expr(by)
    where, params = experiment_filter(experiment)
    # per (group, task): attempts and successes; one aggregation in DuckDB
    agg = store.query_arrays(f"""
        SELECT {key} AS k, e.task_id AS task, count(*) AS n,
               sum(CASE WHEN e.success THEN 1 ELSE 0 END) AS c
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where} {"AND" if where else "WHERE"} e.success IS NOT NULL
        GROUP BY k, task ORDER BY k, task
    """, params)
    labels = {r["k"]: r["label"] for r in store.query(f"""
        SELECT {key} AS k, {disp} AS label FROM episodes e
        LEFT JOIN experiments x USING (experiment_id) {where} GROUP BY k
    """, params)}
    keys = np.asarray(agg["k"], dtype=object)
    if keys.size == 0:
        return []
    n_all = np.asarray(agg["n"], dtype=np.int64)
    c_all = np.asarray(agg["c"], dtype=np.int64)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [keys.size]))
    rows: list[dict[str, Any]] = []
    for a, b in zip(starts, ends, strict=True):
        n_task, c_task = n_all[a:b], c_all[a:b]
        n, c = int(n_task.sum()), int(c_task.sum())
        lo, hi = wilson_interval(c, n, confidence)
        # per-episode 0/1 outcomes rebuilt from the counts (order inside a task is
        # irrelevant to the clustered SE), task index as the cluster
        task_of = np.repeat(np.arange(b - a), n_task)
        succ = np.zeros(n)
        first = np.concatenate(([0], np.cumsum(n_task)[:-1]))
        succ[np.repeat(first, c_task) + _ranks(c_task)] = 1.0
        clustered = mean_with_interval(succ, clusters=task_of, confidence=confidence)
        group_ks = ks if ks is not None else default_k_values(int(n_task.min()))
        row: dict[str, Any] = {
            name: labels[keys[a]], "episodes": n, "tasks": int(n_task.size),
            "min_attempts": int(n_task.min()), "successes": c,
            "success_rate": c / n,
            "success_rate_ci_low": lo, "success_rate_ci_high": hi,
            "success_rate_se_clustered": clustered.se,
            "success_rate_clustered_ci_low": clustered.low,
            "success_rate_clustered_ci_high": clustered.high,
            "pass_at_k": {},
        }
        if name == "agent":
            row["agent_id"] = keys[a]
        for k in group_ks:
            per_task = pass_at_k_counts(n_task, c_task, k)
            eligible = per_task[~np.isnan(per_task)]
            if eligible.size == 0:
                row["pass_at_k"][str(k)] = {"value": None, "ci_low": None, "ci_high": None,
                                            "tasks": 0}
                continue
            iv = mean_with_interval(eligible, confidence=confidence)
            row["pass_at_k"][str(k)] = {
                "value": iv.estimate,
                "ci_low": None if math.isnan(iv.low) else iv.low,
                "ci_high": None if math.isnan(iv.high) else iv.high,
                "tasks": int(eligible.size),
            }
        rows.append(row)
    rows.sort(key=lambda r: (str(r[name]), r.get("agent_id") or ""))
    return rows


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., count-1 for each count, concatenated (positions inside each task)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - starts
