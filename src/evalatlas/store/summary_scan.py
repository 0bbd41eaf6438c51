"""The summary's grouped numbers in two scans of ``episodes`` (SQL only; issue 23, scale).

``summary`` needs, per group: totals (episodes, successes, tokens, cost ...), and per
(group, task) the counts behind the task-clustered intervals and pass@k. Asked one by one
(:func:`~evalatlas.store.queries.summary_totals`, ``rewards_by_group``,
:func:`~evalatlas.store.outcomes.task_outcome_counts`,
:func:`~evalatlas.store.catalog.cost_totals`), that is four scans of every episode, each
joining its experiment and building the group key (a string) per episode, then millions
of (group, task) rows fetched as Python strings: about 1 CPU microsecond per episode.

Here the same numbers come from:

1. **units**: the distinct (experiment, plus the episode columns a grouping key reads:
   ``llm_model`` for ``model``, ``status``, ``task_id``) of the selected episodes, with
   their group keys, each key and agent numbered in sort order (a small table);
2. **cells**: one scan grouping episodes by (group number, agent number, task number),
   integers, with every per-cell count and sum, fetched as numpy integers and floats;
3. **totals**: one scan grouping episodes by group number with the per-episode sums of
   ``summary_totals``; distinct tasks per group are counted from the cells and distinct
   experiments from the units (``count(DISTINCT ...)`` over every episode is what made
   ``summary_totals`` slow).

The arrays and rows handed on are those of the four functions above, in their order
(groups in key order, tasks in ``task_id`` order), so the analysis is unchanged; only
tasks come as integers in ``task_id`` order instead of strings. Sums over a group that
holds several agents (``by benchmark``) are summed per agent first: equal to the
one-pass sums up to float rounding in the last digits. Benchmark: ``benchmarks/bench_scale.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import (
    _OUTCOME_COUNTS,
    _USAGE_AGGREGATES,
    GROUPS,
    episodes_source,
    experiment_filter,
    group_expr,
)

UNIT_COLUMNS: dict[str, tuple[str, ...]] = {
    "model": ("llm_model",), "status": ("status",), "task": ("task_id",)}
"""Episode columns (besides ``experiment_id``) a grouping key reads; every other key
(agent, experiment, benchmark, ``label:<name>``) is a function of the experiment."""

_counter = itertools.count()


@dataclass
class SummaryScan:
    """What :func:`summary_scan` read, in the shapes of the per-query functions it
    replaces (see the module docstring)."""

    totals: list[dict[str, Any]]
    """Rows of :func:`~evalatlas.store.queries.summary_totals`."""
    rewards: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.queries.rewards_by_group` (tasks as numbers)."""
    outcomes: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.outcomes.task_outcome_counts` (first key)."""
    costs: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.catalog.cost_totals` (first key)."""
    members: list[dict[str, Any]]
    """Rows of :func:`~evalatlas.store.catalog.group_experiments`."""


def _unit_columns(by: list[str]) -> list[str]:
    cols = ["experiment_id"]
    for b in by:
        cols += [c for c in UNIT_COLUMNS.get(b, ()) if c not in cols]
    return cols


def _same(cols: list[str], left: str, right: str) -> str:
    return " AND ".join(f"{left}.{c} IS NOT DISTINCT FROM {right}.{c}" for c in cols)


def summary_scan(store: StoreConnection, by: list[str], *, experiment: list[str] | None = None,
                 outcome: str = "any") -> SummaryScan:
    """The summary's grouped numbers for grouping keys ``by`` over the experiments
    ``experiment`` (resolved ids; None: all), reading outcome ``outcome``
    (:data:`~evalatlas.store.queries.OUTCOMES`). See the module docstring."""
    exprs = [group_expr(b) for b in by]
    n_keys = len(exprs)
    ks = [f"k{i}" for i in range(n_keys)]
    keys = ", ".join(f"{k} AS k{i}" for i, (_, k, _) in enumerate(exprs))
    disps = ", ".join(f"{d} AS g{i}" for i, (_, _, d) in enumerate(exprs))
    ucols = _unit_columns(by)
    where, params = experiment_filter(experiment)
    tag = f"_ea_scan{next(_counter)}"
    units, groups, agents, tasks = (f"{tag}_units", f"{tag}_groups", f"{tag}_agents",
                                    f"{tag}_tasks")
    con = store.con
    try:
        con.execute(f"""
            CREATE TEMP TABLE {units} AS
            SELECT e.*, {keys}, {GROUPS['agent'][0]} AS agent_k
            FROM (SELECT DISTINCT {', '.join(ucols)} FROM episodes e {where}) e
            LEFT JOIN experiments x USING (experiment_id)""", params)
        con.execute(f"""
            CREATE TEMP TABLE {groups} AS
            SELECT *, (row_number() OVER (ORDER BY {', '.join(ks)}) - 1)::INTEGER AS g
            FROM (SELECT DISTINCT {', '.join(ks)} FROM {units})""")
        con.execute(f"""
            CREATE TEMP TABLE {agents} AS
            SELECT agent_k, (row_number() OVER (ORDER BY agent_k) - 1)::INTEGER AS a
            FROM (SELECT DISTINCT agent_k FROM {units})""")
        con.execute(f"""
            CREATE TEMP TABLE {tasks} AS
            SELECT task_id, (row_number() OVER (ORDER BY task_id) - 1)::INTEGER AS t
            FROM (SELECT DISTINCT task_id FROM episodes e {where})""", params)
        # each unit's group and agent number
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE {units} AS
            SELECT u.*, gr.g, ag.a FROM {units} u
            JOIN {groups} gr ON {_same(ks, 'u', 'gr')}
            JOIN {agents} ag ON u.agent_k IS NOT DISTINCT FROM ag.agent_k""")
        # a group holding several agents (by benchmark ...) also gets its (group, task)
        # sums in one pass, as the per-query functions summed them
        one_agent = not con.execute(f"SELECT 1 FROM {units} GROUP BY g "
                                    "HAVING count(DISTINCT a) > 1 LIMIT 1").fetchall()
        sets = ("u.g, u.a, tk.t" if one_agent
                else "GROUPING SETS ((u.g, u.a, tk.t), (u.g, tk.t))")
        cells = con.execute(f"""
            SELECT grouping(u.a)::INTEGER AS lvl, u.g, coalesce(u.a, -1) AS a, tk.t,
                   count(*)::INTEGER AS n_all,
                   count(e.success)::INTEGER AS n,
                   count(*) FILTER (WHERE e.success)::INTEGER AS c,
                   count(e.reward)::INTEGER AS rn, sum(e.reward) AS rs,
                   sum(e.reward * e.reward) AS rq, min(e.reward) AS rlo,
                   max(e.reward) AS rhi,
                   count(e.cost_usd)::INTEGER AS cn, sum(e.cost_usd) AS cs,
                   coalesce(sum(e.cost_usd) FILTER (WHERE e.success IS NOT NULL), 0) AS co,
                   count(*) FILTER (WHERE e.success AND e.cost_usd IS NOT NULL)::INTEGER
                       AS cc
            FROM {episodes_source(outcome)}
            JOIN {units} u ON {_same(ucols, 'e', 'u')}
            JOIN {tasks} tk ON e.task_id IS NOT DISTINCT FROM tk.task_id
            {where}
            GROUP BY {sets} ORDER BY lvl, u.g, a, tk.t""", params).fetchnumpy()
        group_keys = con.execute(
            f"SELECT {', '.join(ks)} FROM {groups} ORDER BY g").fetchall()
        null_task = con.execute(
            f"SELECT t FROM {tasks} WHERE task_id IS NULL").fetchall()
        per_group = {r["g"]: r for r in store.query(f"""
            SELECT g, count(DISTINCT experiment_id) AS experiments,
                   CASE WHEN count(DISTINCT x.benchmark_name) <= 1
                        THEN max(x.subset_n_tasks) END AS benchmark_tasks,
                   CASE WHEN count(DISTINCT x.benchmark_name) <= 1
                        THEN any_value(x.benchmark_name) END AS benchmark_name,
                   {disps}
            FROM {units} e LEFT JOIN experiments x USING (experiment_id)
            GROUP BY g, {", ".join(k for _, k, _ in exprs)}""")}
        sums = store.query(f"""
            SELECT u.g,
              count(*) AS episodes,
              {_OUTCOME_COUNTS},
              {_USAGE_AGGREGATES}
            FROM {episodes_source(outcome)}
            JOIN {units} u ON {_same(ucols, 'e', 'u')}
            {where}
            GROUP BY u.g""", params)
        members = store.query(f"""
            SELECT DISTINCT {', '.join(ks)}, experiment_id FROM {units} ORDER BY ALL""")
    finally:
        for table in (units, groups, agents, tasks):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return _shape(cells, group_keys, null_task[0][0] if null_task else None,
                  per_group, sums, members, n_keys)


def _shape(cells: dict[str, Any], group_keys: list[tuple], null_task: int | None,
           per_group: dict[int, dict[str, Any]], sums: list[dict[str, Any]],
           members: list[dict[str, Any]], n_keys: int) -> SummaryScan:
    """The scan's results in the shapes of the per-query functions (no statistics).
    ``cells``: level 0 rows per (group, agent, task), level 1 rows (only when a group
    holds several agents) per (group, task)."""
    # NULLs (a sum over no value) come masked; every use below filters them out
    data = {c: np.ma.getdata(v) for c, v in cells.items()}
    lvl = data["lvl"]
    if (lvl == 1).any():
        agent_level = {c: v[lvl == 0] for c, v in data.items()}
        task_level = {c: v[lvl == 1] for c, v in data.items()}
    else:
        agent_level = task_level = data
    g = agent_level["g"].astype(np.int64)
    t = agent_level["t"].astype(np.int64)
    key_cols = [np.empty(len(group_keys), dtype=object) for _ in range(n_keys)]
    for j, kt in enumerate(group_keys):
        for i in range(n_keys):
            key_cols[i][j] = kt[i]
    # distinct (non-null) tasks per group: the task-level rows are one per (group, task)
    tg = task_level["g"].astype(np.int64)
    tt = task_level["t"].astype(np.int64)
    named = tt != null_task if null_task is not None else np.ones(tt.size, dtype=bool)
    task_count = np.bincount(tg[named], minlength=len(group_keys))
    totals = []
    for r in sums:
        gi = int(r.pop("g"))
        info = per_group[gi]
        row = {f"k{i}": group_keys[gi][i] for i in range(n_keys)}
        row.update({f"g{i}": info[f"g{i}"] for i in range(n_keys)})
        row.update(experiments=info["experiments"], episodes=r.pop("episodes"),
                   tasks=int(task_count[gi]))
        row.update(r)
        row.update(benchmark_tasks=info["benchmark_tasks"],
                   benchmark_name=info["benchmark_name"])
        totals.append(row)
    # by display names, as summary_totals (ties, one name for two keys: by key)
    totals.sort(key=lambda r: tuple((r[f"{c}{i}"] is None, str(r[f"{c}{i}"] or ""))
                                    for c in "gk" for i in range(n_keys)))
    known = agent_level["n"] > 0
    # agents as numbers: the analysis only counts them per group
    outcomes = {"k": key_cols[0][g[known]], "agent_k": agent_level["a"][known],
                "task": t[known], "n": agent_level["n"][known].astype(np.int64),
                "c": agent_level["c"][known].astype(np.int64)}
    rk = task_level["rn"] > 0
    rewards: dict[str, Any] = {f"k{i}": key_cols[i][tg[rk]] for i in range(n_keys)}
    rewards.update(task=tt[rk], n=task_level["rn"][rk].astype(np.int64),
                   s=task_level["rs"][rk].astype(float), q=task_level["rq"][rk].astype(float),
                   lo=task_level["rlo"][rk].astype(float),
                   hi=task_level["rhi"][rk].astype(float))
    ck = task_level["cn"] > 0
    costs = {"k": key_cols[0][tg[ck]], "task": tt[ck], "cost": task_level["cs"][ck].astype(float),
             "n": task_level["cn"][ck].astype(np.int64),
             "cost_o": task_level["co"][ck].astype(float),
             "s": task_level["cc"][ck].astype(np.int64)}
    return SummaryScan(totals=totals, rewards=rewards, outcomes=outcomes, costs=costs,
                       members=members)
