"""The summary's grouped numbers in two scans of ``episodes`` (SQL only; issue 23, scale).

``summary`` needs, per group: totals (episodes, successes, tokens, cost ...), and per
(group, task) the counts behind the task-clustered intervals and pass@k. Asked one by one
(:func:`~evalatlas.store.queries.summary_totals`, ``rewards_by_group``,
:func:`~evalatlas.store.outcomes.task_outcome_counts`,
:func:`~evalatlas.store.catalog.cost_totals`), that is four scans of every episode, each
joining its experiment and building the group key (a string) per episode, then millions
of (group, task) rows fetched as Python strings: about 1 CPU microsecond per episode.

Here the same numbers come from:

1. **units**: one scan grouping the selected episodes by unit (experiment, plus the
   episode columns a grouping key reads: ``llm_model`` for ``model``, ``status``,
   ``task_id``) with the partial totals of
   :func:`~evalatlas.store.queries.total_parts_sql`, and their group keys, each key and
   agent numbered in sort order (a small table). A group's **totals** are the sums of
   its units' partial totals (:func:`~evalatlas.store.queries.group_totals_sql`), so
   no second scan of the episodes; distinct experiments are counted from the units.
2. **cells**: one scan aggregating episodes per (group number, task number) with only
   the counts and sums the analysis reads. Where every group holds one agent (by agent,
   model, experiment ...) the cells stay in DuckDB (a temporary table) and only what
   the statistics need leaves it: per group, the sums of
   :class:`~evalatlas.stats.standard_errors.ClusterSums` (rewards) and
   :class:`~evalatlas.stats.bounded.RatioSums` (cost per episode, per success), and the
   outcomes' table of distinct (group, attempts, successes) with their task counts
   (:data:`_GROUP_SUMS`, :data:`_PAIR_TABLE`): a few thousand rows instead of 10M cells
   at 100M episodes, whose fetch and reshaping cost ~8 s of ~33. Where a group holds
   several agents (by benchmark ...) the cells are fetched per (group, agent, task)
   and per (group, task) as numpy arrays in no order. Distinct tasks per group are
   counted from the cells.

The arrays and rows handed on are those of the per-query functions above (or their
per-group sums, above), with groups as numbers ``g`` and their keys ``group_keys``
instead of a key string per row, and tasks and agents as integers (tasks in ``task_id``
order, agents in key order). Sums
of partial sums and sums over a group that holds several agents (``by benchmark``) are
equal to the one-pass sums up to float rounding in the last digits (tested).
Benchmark: ``benchmarks/bench_scale.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import (
    ERROR_KIND,
    ERROR_ROWS,
    GROUPS,
    JUDGE_PARTS,
    JUDGE_ROWS,
    episodes_source,
    experiment_filter,
    group_expr,
    group_totals_sql,
    total_parts_sql,
)

UNIT_COLUMNS: dict[str, tuple[str, ...]] = {
    "model": ("llm_model",), "status": ("status",), "task": ("task_id",)}
"""Episode columns (besides ``experiment_id``) a grouping key reads; every other key
(agent, experiment, benchmark, ``label:<name>``) is a function of the experiment."""

_counter = itertools.count()

_CELL_AGGREGATES = """count(e.success)::INTEGER AS n, count_if(e.success)::INTEGER AS c,
                   count(e.reward)::INTEGER AS rn, coalesce(sum(e.reward), 0) AS rs,
                   coalesce(sum(e.reward * e.reward), 0) AS rq,
                   count(e.cost_usd)::INTEGER AS cn, coalesce(sum(e.cost_usd), 0) AS cs,
                   coalesce(sum(e.cost_usd) FILTER (WHERE e.success IS NOT NULL), 0) AS co,
                   count_if(e.success AND e.cost_usd IS NOT NULL)::INTEGER AS cc"""
"""Per cell (episodes ``e`` of one group, agent and task): outcomes known ``n`` and
successes ``c`` (pass@k, clustered success rate), rewards known, their sum and sum of
squares (mean reward interval), known costs, their sum, the cost of episodes with a
known outcome and the successes with a known cost (cost intervals). Only what the
analysis reads: each aggregate costs ~15 ns an episode here, and the hash table of 10M
cells (100M episodes) is most of the summary's memory. Sums over no value are 0, not
NULL (the analysis reads a cell's sums only where its count is > 0), so no column
comes with a mask. The range of the rewards is read per unit (:data:`_UNIT_RANGE`),
not per cell."""

_UNIT_RANGE = "min(e.reward) AS _reward_lo, max(e.reward) AS _reward_hi"
"""Least and largest known reward per unit: a group's range (rewards in [0, 1] get the
bounded interval) is the range of its units' ranges."""

_UNIT_ERRORS = (f"histogram({ERROR_KIND}) FILTER (WHERE {ERROR_ROWS}) AS _error_kinds")
"""Episodes per error kind in a unit (a map, NULL when the unit has no error): the rows of
:func:`~evalatlas.store.queries.error_counts` are their sums per group and kind, read in
the units scan instead of a scan of their own (1.1 of the ~45 s of a 100M-episode
summary on a lake)."""


@dataclass
class SummaryScan:
    """What :func:`summary_scan` read, in the shapes of the per-query functions it
    replaces (see the module docstring)."""

    totals: list[dict[str, Any]]
    """Rows of :func:`~evalatlas.store.queries.summary_totals`."""
    rewards: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.queries.rewards_by_group` (tasks as numbers),
    without its per-task ``lo``/``hi``: ``group_lo``/``group_hi`` hold each group
    number's least and largest reward instead (NaN where none is known). Where every
    group holds one agent: ``group_keys``, ``group_lo``, ``group_hi`` and ``sums``, the
    fields of :class:`~evalatlas.stats.standard_errors.ClusterSums` per group number
    (tasks with a known reward as clusters) instead of the per-task arrays."""
    outcomes: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.outcomes.task_outcome_counts` (first key).
    Where every group holds one agent: ``group_keys`` and ``table``, the distinct
    (group number, attempts, successes) over the tasks with a known outcome and how many
    tasks have each (arrays, sorted)."""
    costs: dict[str, Any]
    """Arrays of :func:`~evalatlas.store.catalog.cost_totals` (first key). Where every
    group holds one agent: ``group_keys``, ``cells`` (tasks with a known cost per group
    number) and ``per_episode``/``per_success``, the fields of
    :class:`~evalatlas.stats.bounded.RatioSums` per group number."""
    members: list[dict[str, Any]]
    """Rows of :func:`~evalatlas.store.catalog.group_experiments`."""
    errors: list[dict[str, Any]] = field(default_factory=list)
    """Rows of :func:`~evalatlas.store.queries.error_counts` (same order)."""


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
    (:data:`~evalatlas.store.queries.OUTCOMES`). See the module docstring. DuckDB's
    budget is the reads' (:meth:`~evalatlas.store.db.StoreConnection.read_budget`):
    the cells' hash table is most of the summary's memory."""
    with store.read_budget():
        return _scan(store, by, experiment=experiment, outcome=outcome)


def _scan(store: StoreConnection, by: list[str], *, experiment: list[str] | None,
          outcome: str) -> SummaryScan:
    exprs = [group_expr(b) for b in by]
    n_keys = len(exprs)
    ks = [f"k{i}" for i in range(n_keys)]
    keys = ", ".join(f"{k} AS k{i}" for i, (_, k, _) in enumerate(exprs))
    disps = ", ".join(f"{d} AS g{i}" for i, (_, _, d) in enumerate(exprs))
    ucols = _unit_columns(by)
    where, params = experiment_filter(experiment)
    tag = f"_ea_scan{next(_counter)}"
    units, groups, agents, tasks, cells_table = (
        f"{tag}_units", f"{tag}_groups", f"{tag}_agents", f"{tag}_tasks", f"{tag}_cells")
    con = store.con
    try:
        # per unit: the keys and the partial totals, in one scan grouping by unit (a few
        # thousand rows; no join per episode)
        # the judge's parts over the episodes with judge usage only (a filtered scan:
        # nothing to aggregate, and row groups skipped, when no episode has any)
        judge_where = f"{where} AND {JUDGE_ROWS}" if where else f"WHERE {JUDGE_ROWS}"
        judge_cols = ", ".join(
            f"coalesce(j.{name}, 0) AS {name}" if name.endswith("_episodes")
            else f"j.{name}" for name in JUDGE_PARTS)
        con.execute(f"""
            CREATE TEMP TABLE {units} AS
            SELECT e.*, {judge_cols}, {keys}, {GROUPS['agent'][0]} AS agent_k
            FROM (SELECT {', '.join(ucols)}, {total_parts_sql('episode')}, {_UNIT_RANGE},
                         {_UNIT_ERRORS}
                  FROM {episodes_source(outcome)} {where}
                  GROUP BY {', '.join(ucols)}) e
            LEFT JOIN (SELECT {', '.join(ucols)}, {total_parts_sql('judge')}
                       FROM {episodes_source(outcome)} {judge_where}
                       GROUP BY {', '.join(ucols)}) j ON {_same(ucols, 'e', 'j')}
            LEFT JOIN experiments x ON x.experiment_id = e.experiment_id""",
                    [*params, *params])
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
        one_agent = not con.execute(f"SELECT 1 FROM {units} GROUP BY g "
                                    "HAVING count(DISTINCT a) > 1 LIMIT 1").fetchall()
        n_tasks = max(1, int(con.execute(f"SELECT count(*) FROM {tasks}").fetchall()[0][0]))
        null_task = con.execute(
            f"SELECT t FROM {tasks} WHERE task_id IS NULL").fetchall()
        joins = f"""FROM {episodes_source(outcome)}
            JOIN {units} u ON {_same(ucols, 'e', 'u')}
            JOIN {tasks} tk ON e.task_id IS NOT DISTINCT FROM tk.task_id
            {where}"""
        if one_agent:
            # one integer key per (group, task) (a group's agent is its units'): hashing
            # one BIGINT per episode instead of three numbers or two strings; at 100M
            # episodes, 10M groups: a first aggregation per (experiment, task) strings
            # cost 3x more. The cells stay in DuckDB: only their per-group sums and
            # the outcomes' (group, attempts, successes) table leave it (fetching 10M
            # cells and reshaping them cost ~8 of a 100M-episode summary's ~33 s)
            con.execute(f"""
                CREATE TEMP TABLE {cells_table} AS
                SELECT (u.g::BIGINT * {n_tasks} + tk.t) AS key, {_CELL_AGGREGATES}
                {joins} GROUP BY key""", params)
            cells = _group_sums(con, cells_table, n_tasks,
                                null_task[0][0] if null_task else -1)
        else:
            # a group holding several agents (by benchmark ...) also gets its (group,
            # task) sums in one pass, as the per-query functions summed them; in one
            # order: the statistics sum the cells in the order fetched, and DuckDB's
            # grouping sets come in an order that varies from run to run (the last
            # digits of an interval differed between two runs on one store)
            cells = con.execute(f"""
                SELECT grouping(u.a)::INTEGER AS lvl, u.g, coalesce(u.a, -1) AS a, tk.t,
                       {_CELL_AGGREGATES}
                {joins} GROUP BY GROUPING SETS ((u.g, u.a, tk.t), (u.g, tk.t))
                ORDER BY lvl, u.g, a, tk.t""", params).fetchnumpy()
        group_keys = con.execute(
            f"SELECT {', '.join(ks)} FROM {groups} ORDER BY g").fetchall()
        per_group = {r["g"]: r for r in store.query(f"""
            SELECT g, count(DISTINCT experiment_id) AS experiments,
                   CASE WHEN count(DISTINCT x.benchmark_name) <= 1
                        THEN max(x.subset_n_tasks) END AS benchmark_tasks,
                   CASE WHEN count(DISTINCT x.benchmark_name) <= 1
                        THEN any_value(x.benchmark_name) END AS benchmark_name,
                   min(e._reward_lo) AS reward_lo, max(e._reward_hi) AS reward_hi,
                   {disps}
            FROM {units} e LEFT JOIN experiments x USING (experiment_id)
            GROUP BY g, {", ".join(k for _, k, _ in exprs)}""")}
        sums = store.query(f"""
            SELECT u.g, {group_totals_sql('u')}
            FROM {units} u GROUP BY u.g""")
        members = store.query(f"""
            SELECT DISTINCT {', '.join(ks)}, experiment_id FROM {units} ORDER BY ALL""")
        errors = store.query(f"""
            SELECT {', '.join(ks)}, kind, sum(n) AS n
            FROM (SELECT {', '.join(ks)}, unnest(map_keys(_error_kinds)) AS kind,
                         unnest(map_values(_error_kinds)) AS n FROM {units})
            GROUP BY ALL ORDER BY n DESC, kind""")
    finally:
        for table in (units, groups, agents, tasks, cells_table):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    scan = _shape(cells, group_keys, null_task[0][0] if null_task else None,
                  per_group, sums, members, n_keys)
    scan.errors = errors
    return scan


_GROUP_SUMS = """
    WITH s AS (
        SELECT key // {n} AS g, count(*) FILTER (WHERE key % {n} <> {null_t}) AS tasks,
               sum(rn) FILTER (WHERE rn > 0)::DOUBLE AS r_n,
               count(*) FILTER (WHERE rn > 0) AS r_clusters,
               sum(rs) FILTER (WHERE rn > 0) AS r_s, sum(rq) FILTER (WHERE rn > 0) AS r_q,
               count(*) FILTER (WHERE cn > 0) AS cost_cells,
               count(*) FILTER (WHERE cn > 0 AND NOT isnan(cs)) AS e_clusters,
               sum(cs) FILTER (WHERE cn > 0 AND NOT isnan(cs)) AS e_a,
               sum(cn) FILTER (WHERE cn > 0 AND NOT isnan(cs))::DOUBLE AS e_b,
               count(*) FILTER (WHERE cn > 0 AND NOT isnan(co)) AS o_clusters,
               sum(co) FILTER (WHERE cn > 0 AND NOT isnan(co)) AS o_a,
               sum(coalesce(cc, 0)) FILTER (WHERE cn > 0 AND NOT isnan(co))::DOUBLE AS o_b
        FROM {cells} GROUP BY g),
    m AS (SELECT g, CASE WHEN r_n > 0 THEN r_s / r_n END AS r_m,
                 CASE WHEN e_b > 0 THEN e_a / e_b END AS e_r,
                 CASE WHEN o_b > 0 THEN o_a / o_b END AS o_r FROM s),
    d AS (SELECT m.g,
                 sum((c.rs - c.rn * m.r_m) ** 2) FILTER (WHERE c.rn > 0) AS r_spread,
                 sum((c.cs - c.cn * m.e_r) ** 2)
                     FILTER (WHERE c.cn > 0 AND NOT isnan(c.cs)) AS e_spread,
                 sum((c.co - coalesce(c.cc, 0) * m.o_r) ** 2)
                     FILTER (WHERE c.cn > 0 AND NOT isnan(c.co)) AS o_spread
          FROM {cells} c JOIN m ON m.g = c.key // {n} GROUP BY m.g)
    SELECT s.*, d.r_spread, d.e_spread, d.o_spread FROM s JOIN d USING (g) ORDER BY g"""
"""Per group number ``g``, from its (group, task) cells (:data:`_CELL_AGGREGATES`, key
``g * n + t``): distinct non-null tasks, the
:class:`~evalatlas.stats.standard_errors.ClusterSums` of its rewards (cells with a
known reward: values, clusters, sum, sum of squares, and the clusters' squared
deviations from the group's mean, in two passes) and the
:class:`~evalatlas.stats.bounded.RatioSums` of cost per episode (known cost / episodes
with one) and per success (cost of the episodes with a known outcome / their successes)
over the cells with a known cost (NaN totals left out, as
:func:`~evalatlas.stats.bounded.ratio_sums` does). The formulas that use them are the
stats module's; these are their inputs, summed where the cells are."""

_PAIR_TABLE = """
    SELECT key // {n} AS g, n, coalesce(c, 0) AS c, count(*) AS w FROM {cells}
    WHERE n > 0 GROUP BY ALL ORDER BY ALL"""
"""The outcomes' table: distinct (group number, attempts, successes) over the cells with
a known outcome, and how many tasks have each (:func:`evalatlas.analysis.summary.outcome_rows`)."""


def _group_sums(con: Any, cells: str, n_tasks: int, null_t: int) -> dict[str, Any]:
    """The per-group sums (:data:`_GROUP_SUMS`) and the pair table (:data:`_PAIR_TABLE`)
    of the cells in table ``cells`` as arrays (``null_t``: the null task's number, -1
    when there is none)."""
    sums = con.execute(_GROUP_SUMS.format(n=n_tasks, null_t=null_t, cells=cells)).fetchnumpy()
    table = con.execute(_PAIR_TABLE.format(n=n_tasks, cells=cells)).fetchnumpy()
    out: dict[str, Any] = {name: _plain(values) for name, values in sums.items()}
    out["table"] = tuple(np.asarray(_plain(table[c]), dtype=np.int64) for c in "gncw")
    return out


def _plain(values: Any) -> np.ndarray:
    """A fetched column as a plain array: a NULL count or sum (``count_if`` over no known
    value is NULL in DuckDB 1.5) is 0, written into the fetched buffer (no copy)."""
    data = np.ma.getdata(values)
    mask = np.ma.getmask(values)
    if mask is not np.ma.nomask and mask.any():
        data[mask] = 0
    return data


def _dropping(drop: np.ndarray) -> Any:
    """A function giving an array without the rows ``drop`` (sorted indices): the array
    itself when there are none, else one copy of the slices between them (at 100M
    episodes a few hundred of 10M cells have no known outcome)."""
    if drop.size == 0:
        return lambda values: values
    if drop.size > 10_000:
        keep = np.ones(int(drop[-1]) + 1, dtype=bool)
        keep[drop] = False

        def by_mask(values: np.ndarray) -> np.ndarray:
            return values[np.concatenate((keep, np.ones(values.size - keep.size,
                                                        dtype=bool)))]
        return by_mask

    def by_slices(values: np.ndarray) -> np.ndarray:
        parts = np.split(values, drop)
        return np.concatenate([parts[0], *(part[1:] for part in parts[1:])])
    return by_slices


def _ratio(per: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """One ratio's per-group sums (the fields of
    :class:`~evalatlas.stats.bounded.RatioSums`). The spread is NaN, not 0, where the
    group has clusters but no ratio (``sum b = 0``: the SQL's NULL), as there."""
    clusters, denominators = per[f"{prefix}_clusters"], per[f"{prefix}_b"]
    spread = np.where((clusters > 0) & ~(denominators > 0), np.nan, per[f"{prefix}_spread"])
    return {"clusters": clusters, "numerators": per[f"{prefix}_a"],
            "denominators": denominators, "spread": spread}


def _per_group_number(sums: dict[str, Any], n_groups: int) -> dict[str, np.ndarray]:
    """The per-group sums of :func:`_group_sums` (rows by group number ``g``) as arrays
    of ``n_groups`` entries (0 for a group without such cells)."""
    g = np.asarray(sums["g"], dtype=np.int64)
    out = {}
    for name, values in sums.items():
        if name in ("g", "table"):
            continue
        full = np.zeros(n_groups, dtype=np.asarray(values).dtype)
        full[g] = values
        out[name] = full
    return out


def _shape(cells: dict[str, Any], group_keys: list[tuple], null_task: int | None,
           per_group: dict[int, dict[str, Any]], sums: list[dict[str, Any]],
           members: list[dict[str, Any]], n_keys: int) -> SummaryScan:
    """The scan's results in the shapes of the per-query functions (no statistics).
    ``cells``: level 0 rows per (group, agent, task), level 1 rows (only when a group
    holds several agents) per (group, task).

    The cells' arrays are handed on as fetched (counts as 32-bit integers, no copy)
    and a cell is left out of the outcomes, rewards or costs only where it has no
    known value of that kind: each array is copied at most once per distinct set of
    rows left out, and not at all when every cell is kept (10M cells at 100M
    episodes: each copy of each array cost ~0.1-0.2 s here)."""
    if "table" in cells:  # one agent per group: the cells' per-group sums
        per = _per_group_number(cells, len(group_keys))
        task_count = per["tasks"]
    else:
        data = {c: _plain(v) for c, v in cells.items()}
        lvl = data.get("lvl")  # None: one level (every group holds one agent)
        if lvl is not None and (lvl == 1).any():
            agent_level = {c: v[lvl == 0] for c, v in data.items()}
            task_level = {c: v[lvl == 1] for c, v in data.items()}
        else:
            agent_level = task_level = data
        tg, tt = task_level["g"], task_level["t"]
        # distinct (non-null) tasks per group: the task-level rows are one per (group,
        # task)
        task_count = np.bincount(tg if null_task is None else tg[tt != null_task],
                                 minlength=len(group_keys))
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
    # groups as numbers (g, in key order) with their keys, agents and tasks as numbers
    # (the analysis counts them): no Python object per cell
    first = [k[0] for k in group_keys]
    # the least and largest reward per group number (NaN: none known)
    ranges = [(per_group[i]["reward_lo"], per_group[i]["reward_hi"])
              for i in range(len(group_keys))]
    group_lo = np.array([np.nan if lo is None else lo for lo, _ in ranges])
    group_hi = np.array([np.nan if hi is None else hi for _, hi in ranges])
    if "table" in cells:
        return SummaryScan(
            totals=totals, members=members,
            outcomes={"group_keys": first, "table": cells["table"]},
            rewards={"group_keys": list(group_keys), "group_lo": group_lo,
                     "group_hi": group_hi,
                     "sums": {"n": per["r_n"], "clusters": per["r_clusters"],
                              "sums": per["r_s"], "squares": per["r_q"],
                              "spread": per["r_spread"]}},
            costs={"group_keys": first, "cells": per["cost_cells"],
                   "per_episode": _ratio(per, "e"), "per_success": _ratio(per, "o")})
    # the rows without a known value of each kind (few), and the arrays without them:
    # (level, drop rows, array name) -> array, so that the outcomes and the rewards
    # (mostly the same cells) share their copies of the group and task numbers
    copies: dict[tuple[int, bytes, str], np.ndarray] = {}

    def kept(level: dict[str, np.ndarray], count: str) -> Any:
        drop = np.flatnonzero(level[count] <= 0)
        without = _dropping(drop)
        tag = (id(level), drop.tobytes())

        def column(name: str) -> np.ndarray:
            key = (*tag, name)
            if key not in copies:
                copies[key] = without(level[name])
            return copies[key]
        return column

    col = kept(agent_level, "n")
    outcomes = {"g": col("g"), "group_keys": first, "agent_k": col("a"), "task": col("t"),
                "n": col("n"), "c": col("c")}
    col = kept(task_level, "rn")
    rewards: dict[str, Any] = {
        "g": col("g"), "group_keys": list(group_keys), "task": col("t"), "n": col("rn"),
        "s": col("rs"), "q": col("rq"), "group_lo": group_lo, "group_hi": group_hi}
    col = kept(task_level, "cn")
    costs = {"g": col("g"), "group_keys": first, "task": col("t"), "cost": col("cs"),
             "n": col("cn"), "cost_o": col("co"), "s": col("cc")}
    return SummaryScan(totals=totals, rewards=rewards, outcomes=outcomes, costs=costs,
                       members=members)
