"""Queries over the store that the CLI and reports share.

Grouping keys (``--by``) are SQL expressions over ``episodes e LEFT JOIN experiments x``;
episodes whose experiment record was never ingested still count, under an explicit
"(no experiment record)" group instead of vanishing.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.standard_errors import mean_with_interval
from evalatlas.store.db import Store

_LABEL = re.compile(r"^label:([A-Za-z0-9_.\-]+)$")

GROUPS: dict[str, tuple[str, str]] = {
    # name: (SQL key expression, SQL display expression)
    "agent": ("coalesce(x.agent_id, '?' || e.experiment_id)",
              "coalesce(any_value(x.agent_name), '(no experiment record)')"),
    "experiment": ("e.experiment_id",
                   "coalesce(any_value(x.experiment_name), e.experiment_id)"),
    "benchmark": ("coalesce(x.benchmark_name, '(unknown)')",
                  "coalesce(x.benchmark_name, '(unknown)')"),
    "model": ("coalesce(e.llm_model, '(unknown)')", "coalesce(e.llm_model, '(unknown)')"),
    "task": ("e.task_id", "e.task_id"),
    "status": ("e.status", "e.status"),
}


def group_expr(by: str) -> tuple[str, str, str]:
    """(name, key SQL, display SQL) for one grouping key, including ``label:<name>``."""
    if by in GROUPS:
        key, disp = GROUPS[by]
        return by, key, disp
    m = _LABEL.match(by)
    if m:
        expr = f"coalesce(json_extract_string(x.labels, '$.\"{m.group(1)}\"'), '(none)')"
        return by, expr, expr
    known = ", ".join([*GROUPS, "label:<name>"])
    raise ValueError(f"unknown grouping {by!r}; use one of {known}")


def experiment_filter(experiment: list[str] | None) -> tuple[str, list[Any]]:
    """A WHERE clause (and params) keeping experiments given by id or name."""
    if not experiment:
        return "", []
    marks = ", ".join("?" for _ in experiment)
    return (f"WHERE (e.experiment_id IN ({marks}) OR x.experiment_name IN ({marks}))",
            [*experiment, *experiment])


def summary(
    store: Store,
    by: list[str] | None = None,
    *,
    experiment: list[str] | None = None,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One row per group with counts, success rate + Wilson interval, tokens, cost, time.

    Success rate and its interval are over the episodes whose outcome is known
    (``reward`` not null); ``outcome_unknown_episodes`` counts the others.

    Mean reward carries an interval with tasks as clusters (repeated attempts of one
    task are not independent; :func:`evalatlas.stats.mean_with_interval`).

    Cost: ``total_cost_usd`` sums the episodes whose cost is known and
    ``cost_unknown_episodes`` counts the others, so an unknown cost never reads as $0.
    """
    by = by or ["agent"]
    exprs = [group_expr(b) for b in by]
    keys = ", ".join(f"{k} AS k{i}" for i, (_, k, _) in enumerate(exprs))
    disps = ", ".join(f"{d} AS g{i}" for i, (_, _, d) in enumerate(exprs))
    gb = ", ".join(f"k{i}" for i in range(len(exprs)))
    where, params = experiment_filter(experiment)
    sql = f"""
        SELECT {keys}, {disps},
          count(DISTINCT e.experiment_id) AS experiments,
          count(*) AS episodes,
          count(DISTINCT e.task_id) AS tasks,
          sum(CASE WHEN e.success THEN 1 ELSE 0 END) AS successes,
          count(e.success) AS outcome_known,
          avg(e.reward) AS mean_reward,
          sum(CASE WHEN e.status <> 'completed' OR e.error_type IS NOT NULL
              THEN 1 ELSE 0 END) AS errors,
          sum(e.total_tokens) AS total_tokens,
          avg(e.total_tokens) AS mean_tokens,
          count(e.total_tokens) AS token_episodes,
          sum(e.cost_usd) AS total_cost_usd,
          count(*) - count(e.cost_usd) AS cost_unknown_episodes,
          sum(CASE WHEN e.cost_source = 'computed' THEN 1 ELSE 0 END) AS cost_computed_episodes,
          avg(e.wall_time_s) AS mean_wall_time_s
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where}
        GROUP BY {gb}
        ORDER BY {", ".join(f"g{i}" for i in range(len(exprs)))}
    """
    rows = store.query(sql, params)
    err_sql = f"""
        SELECT {keys}, coalesce(e.error_type, e.status) AS kind, count(*) AS n
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where} {"AND" if where else "WHERE"} (e.status <> 'completed' OR e.error_type IS NOT NULL)
        GROUP BY {gb}, kind ORDER BY n DESC, kind
    """
    reward_ci = _mean_reward_intervals(store, keys, gb, len(exprs), where, params, confidence)
    errors: dict[tuple, dict[str, int]] = {}
    for r in store.query(err_sql, params):
        gk = tuple(r[f"k{i}"] for i in range(len(exprs)))
        errors.setdefault(gk, {})[r["kind"]] = int(r["n"])
    out = []
    for r in rows:
        gk = tuple(r[f"k{i}"] for i in range(len(exprs)))
        n, s, known = int(r["episodes"]), int(r["successes"]), int(r["outcome_known"])
        lo, hi = wilson_interval(s, known, confidence)
        row: dict[str, Any] = {name: r[f"g{i}"] for i, (name, _, _) in enumerate(exprs)}
        if "agent" in by and r["k" + str(by.index("agent"))]:
            row["agent_id"] = r["k" + str(by.index("agent"))]
        row.update({
            "experiments": int(r["experiments"]),
            "episodes": n,
            "tasks": int(r["tasks"]),
            "successes": s,
            "outcome_unknown_episodes": n - known,
            "success_rate": s / known if known else math.nan,
            "success_rate_ci_low": lo,
            "success_rate_ci_high": hi,
            "mean_reward": r["mean_reward"],
            "mean_reward_ci_low": reward_ci.get(gk, (math.nan, math.nan))[0],
            "mean_reward_ci_high": reward_ci.get(gk, (math.nan, math.nan))[1],
            "errors": int(r["errors"]),
            "errors_by_type": errors.get(gk, {}),
            "total_tokens": int(r["total_tokens"]) if r["total_tokens"] is not None else None,
            "mean_tokens": r["mean_tokens"],
            "total_cost_usd": r["total_cost_usd"],
            "cost_unknown_episodes": int(r["cost_unknown_episodes"]),
            "cost_computed_episodes": int(r["cost_computed_episodes"]),
            "mean_wall_time_s": r["mean_wall_time_s"],
        })
        out.append(row)
    return out


def _mean_reward_intervals(
    store: Store, keys: str, gb: str, n_keys: int, where: str, params: list[Any],
    confidence: float,
) -> dict[tuple, tuple[float, float]]:
    """group key -> (low, high) of mean reward, tasks as clusters, over known rewards."""
    arrays = store.query_arrays(f"""
        SELECT {keys}, dense_rank() OVER (ORDER BY e.task_id) AS task_code, e.reward
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where} {"AND" if where else "WHERE"} e.reward IS NOT NULL
        ORDER BY {gb}
    """, params)
    n = len(arrays["reward"])
    if n == 0:
        return {}
    cols = [np.asarray(arrays[f"k{i}"], dtype=object) for i in range(n_keys)]
    reward = np.asarray(arrays["reward"], dtype=float)
    task = np.asarray(arrays["task_code"], dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    bounds = [*np.flatnonzero(change), n]
    out: dict[tuple, tuple[float, float]] = {}
    start = 0
    for end in bounds:
        if end == start:
            continue
        iv = mean_with_interval(reward[start:end], clusters=task[start:end],
                                confidence=confidence)
        out[tuple(c[start] for c in cols)] = (iv.low, iv.high)
        start = end
    return out
