"""Per (group, task) outcome counts from the store (SQL only): the input of pass@k and the
task-clustered success interval (:mod:`evalatlas.analysis.summary`).

One DuckDB aggregation to (group, task, attempts, successes) keeps millions of episodes
out of Python (see ``benchmarks/bench_outcomes.py`` and BENCHMARKS.md). Episodes whose
outcome is unknown (null success) are left out.
"""

from __future__ import annotations

from typing import Any

from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import GROUPS, episodes_source, experiment_filter, group_expr


def task_outcome_counts(
    store: StoreConnection, by: str = "agent", *, experiment: list[str] | None = None,
    outcome: str = "any",
) -> tuple[dict[str, Any], dict[Any, str]]:
    """(arrays ``k`` group key, ``agent_k`` agent key, ``task``, ``n`` attempts, ``c``
    successes, sorted by group, agent and task; group key -> display label).

    Counts are per (group, agent, task): attempts of different agents on one task are
    not attempts of one agent, so pass@k never pools them (issue 10)."""
    _, key, disp = group_expr(by)
    agent_key = GROUPS["agent"][0]
    where, params = experiment_filter(experiment)
    agg = store.query_arrays(f"""
        SELECT {key} AS k, {agent_key} AS agent_k, e.task_id AS task, count(*) AS n,
               sum(CASE WHEN e.success THEN 1 ELSE 0 END) AS c
        FROM {episodes_source(outcome)} LEFT JOIN experiments x USING (experiment_id)
        {where} {"AND" if where else "WHERE"} e.success IS NOT NULL
        GROUP BY k, agent_k, task ORDER BY k, agent_k, task
    """, params)
    labels = {r["k"]: r["label"] for r in store.query(f"""
        SELECT {key} AS k, {disp} AS label FROM episodes e
        LEFT JOIN experiments x USING (experiment_id) {where} GROUP BY k
    """, params)}
    return agg, labels
