"""What the store holds, by agent, experiment or benchmark (SQL only): ``evalatlas agents``.

One row per agent (or experiment, or benchmark) with its id, episodes, distinct tasks,
experiments and benchmarks, so a user can see the names to type before typing them.
Episodes whose experiment record was never ingested count under the agent
``?<experiment_id>`` and benchmark ``(unknown)``, as in ``summary``.
"""

from __future__ import annotations

from typing import Any

from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import id_filter

_KEYS = {
    "agents": ("coalesce(x.agent_id, '?' || e.experiment_id)",
               "coalesce(any_value(x.agent_name), '(no experiment record)')"),
    "experiments": ("e.experiment_id",
                    "coalesce(any_value(x.experiment_name), e.experiment_id)"),
    "benchmarks": ("coalesce(x.benchmark_name, '(unknown)')",
                   "coalesce(x.benchmark_name, '(unknown)')"),
}
LISTS = tuple(_KEYS)
"""What ``evalatlas agents`` can list: ``agents`` (default), ``experiments``,
``benchmarks``."""


def inventory_rows(store: StoreConnection, what: str = "agents",
                   experiment_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows ``id``, ``name``, ``episodes``, ``tasks``, ``experiments``, ``agents``,
    ``benchmarks`` (a list of names) and, for experiments, ``agent``; sorted by name.
    ``experiment_ids``: only these experiments (resolved selectors)."""
    if what not in _KEYS:
        raise ValueError(f"what must be one of {', '.join(LISTS)}, got {what!r}")
    key, name = _KEYS[what]
    where, params = id_filter(experiment_ids)
    return store.query(f"""
        SELECT {key} AS id, {name} AS name,
               count(*) AS episodes, count(DISTINCT e.task_id) AS tasks,
               count(DISTINCT e.experiment_id) AS experiments,
               count(DISTINCT coalesce(x.agent_id, '?' || e.experiment_id)) AS agents,
               list_sort(list_distinct(list(coalesce(x.benchmark_name, '(unknown)'))))
                 AS benchmarks,
               list_sort(list_distinct(list(x.agent_name))) AS agent_names
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where}
        GROUP BY {key} ORDER BY lower(name), id
    """, params)
