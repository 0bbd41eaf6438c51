"""What the store holds, per experiment (SQL only): the inputs of selection by agent or
benchmark, of the run status (finished or not, :mod:`evalatlas.analysis.run_status`) and
of the per-task cost totals behind cost intervals (:mod:`evalatlas.analysis.summary`).
"""

from __future__ import annotations

from typing import Any

from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import episodes_source, experiment_filter, group_expr


def experiment_catalog(store: StoreConnection, *, tasks: bool = True
                       ) -> list[dict[str, Any]]:
    """One row per experiment (episodes without an experiment record included, agent
    ``?<experiment_id>``): experiment_id, experiment_name, agent_id, agent_name, benchmark
    (``(unknown)`` when none), framework, planned tasks (``subset_n_tasks``), the source's
    run status as the adapter kept it (Inspect: ``status``, ``epochs``, read from
    ``_journal/``; cube: episodes whose ``status.json`` says queued/running), and what
    was observed: episodes, tasks, attempts per task (max), episodes per status.

    ``tasks=False``: ``tasks`` is None (not counted). Counting each experiment's distinct
    tasks hashes every (experiment, task) pair: 29 of the 175 s of a 100M-episode
    summary, which never reads it (the run status reads planned tasks and attempts)."""
    distinct = "count(DISTINCT task_id)" if tasks else "NULL::BIGINT"
    return store.query(f"""
        WITH ep AS (
            SELECT experiment_id, count(*) AS episodes, {distinct} AS tasks,
                   max(attempt) AS max_attempt,
                   count(*) FILTER (WHERE status = 'incomplete') AS unfinished_episodes,
                   count(*) FILTER (WHERE status = 'cancelled') AS cancelled_episodes
            FROM episodes GROUP BY experiment_id)
        SELECT coalesce(x.experiment_id, ep.experiment_id) AS experiment_id,
               coalesce(x.experiment_name, ep.experiment_id) AS experiment_name,
               coalesce(x.agent_id, '?' || ep.experiment_id) AS agent_id,
               coalesce(x.agent_name, '(no experiment record)') AS agent_name,
               coalesce(x.benchmark_name, '(unknown)') AS benchmark,
               x.framework_name AS framework, x.subset_n_tasks AS planned_tasks,
               json_extract_string(x.extra, '$.inspect.status') AS inspect_status,
               TRY_CAST(json_extract_string(x.extra, '$.inspect.epochs') AS BIGINT)
                   AS inspect_epochs,
               coalesce(TRY_CAST(json_extract_string(x.extra, '$.inspect.from_journal')
                                 AS BOOLEAN), false) AS from_journal,
               coalesce(ep.episodes, 0) AS episodes,
               {"coalesce(ep.tasks, 0)" if tasks else "NULL::BIGINT"} AS tasks,
               ep.max_attempt, coalesce(ep.unfinished_episodes, 0) AS unfinished_episodes,
               coalesce(ep.cancelled_episodes, 0) AS cancelled_episodes
        FROM experiments x FULL OUTER JOIN ep ON ep.experiment_id = x.experiment_id
        ORDER BY experiment_id""")


def cost_totals(
    store: StoreConnection, by: str, *, experiment: list[str] | None = None, outcome: str = "any",
) -> dict[str, Any]:
    """Per (group, task): ``cost`` summed over episodes with a known cost, ``n`` those
    episodes, and over episodes with a known cost *and* outcome ``cost_o`` (their cost)
    and ``s`` (their successes); arrays ``k`` (group key), ``task``, ``cost``, ``n``,
    ``cost_o``, ``s``, sorted by group. The input of cost per episode and per success
    with task-clustered intervals."""
    _, key, _ = group_expr(by)
    where, params = experiment_filter(experiment)
    return store.query_arrays(f"""
        SELECT {key} AS k, e.task_id AS task, sum(e.cost_usd) AS cost,
               count(*) AS n,
               coalesce(sum(e.cost_usd) FILTER (WHERE e.success IS NOT NULL), 0) AS cost_o,
               count(*) FILTER (WHERE e.success) AS s
        FROM {episodes_source(outcome)} LEFT JOIN experiments x USING (experiment_id)
        {where} {"AND" if where else "WHERE"} e.cost_usd IS NOT NULL
        GROUP BY k, task ORDER BY k, task
    """, params)


def group_experiments(
    store: StoreConnection, by: list[str], *, experiment: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Which experiments each group holds: rows ``k0..`` (the group keys of
    :func:`~evalatlas.store.queries.summary_totals`) and ``experiment_id``, one per
    (group, experiment) with episodes."""
    exprs = [group_expr(b) for b in by]
    keys = ", ".join(f"{k} AS k{i}" for i, (_, k, _) in enumerate(exprs))
    where, params = experiment_filter(experiment)
    return store.query(f"""
        SELECT DISTINCT {keys}, e.experiment_id
        FROM episodes e LEFT JOIN experiments x USING (experiment_id) {where}
        ORDER BY ALL""", params)
