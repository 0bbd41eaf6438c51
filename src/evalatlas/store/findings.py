"""Storage for the investigator (``evalatlas investigate``, ``evalatlas failures``): the
episodes to investigate, writing findings back, and the findings frame. SQL only.

Findings live where seed 002 puts them: ``EpisodeRecord.findings`` (the ``findings``
JSON column) with the seed's ``difficulty``, ``feasible``, ``failure_root_cause`` plus
``failure_category`` and ``evidence``; the investigator's settings on the experiment
(``investigator_llm_config``). Writes go through :meth:`StoreConnection.write_batch`, so an
investigated episode is upserted whole, in one transaction per batch, like a judged one.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import group_expr
from evalatlas.store.rows import episode_row, experiment_row
from evalatlas.store.selection import id_filter

FAILED_SQL = ("(e.success = false OR (e.success IS NULL AND e.status IN "
              "('error', 'timeout', 'max_steps', 'incomplete')))")
"""A failed episode: the outcome says failure (``success = false``), or the outcome is
unknown because the episode ended in an error, a timeout, a step limit or incompletely.
Skipped and cancelled episodes with no outcome are not failures of the agent."""

ONLY = ("failed", "all")


def _filters(agent: list[str] | None, benchmark: list[str] | None
             ) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    for ids, column in ((agent, "x.agent_id"),
                        (benchmark, "coalesce(x.benchmark_name, '(unknown)')")):
        if ids is not None:
            clause, values = id_filter(ids, column, joiner="")
            where.append(clause.strip())
            params += values
    return where, params


def select_for_investigation(store: StoreConnection, *, only: str = "failed",
                             agent: list[str] | None = None,
                             benchmark: list[str] | None = None) -> list[dict[str, Any]]:
    """Stored episodes to investigate, in key order (experiment, trajectory): whole rows
    (``e.*``) plus ``x_agent`` (agent name), ``x_framework``, ``x_benchmark`` and
    ``investigated`` (the episode already has findings). ``only="failed"`` keeps failed
    episodes (:data:`FAILED_SQL`); ``agent``: agent ids, ``benchmark``: names, both
    resolved from what the user typed by :mod:`evalatlas.store.selection`."""
    if only not in ONLY:
        raise ValueError(f"only must be one of {', '.join(ONLY)}, got {only!r}")
    where, params = _filters(agent, benchmark)
    if only == "failed":
        where.append(FAILED_SQL)
    sql = ("SELECT e.*, x.agent_name AS x_agent, x.framework_name AS x_framework, "
           "coalesce(x.benchmark_name, '(unknown)') AS x_benchmark, "
           "e.findings IS NOT NULL AS investigated "
           "FROM episodes e LEFT JOIN experiments x USING (experiment_id) "
           f"{'WHERE ' + ' AND '.join(where) if where else ''} "
           "ORDER BY e.experiment_id, e.trajectory_id")
    return store.query(sql, params)


def experiment_records(store: StoreConnection, experiment_ids: list[str]) -> list[tuple[
        ExperimentRecord, str | None]]:
    """The stored experiment records of these ids, with their source file."""
    from evalatlas.store.rows import experiment_from_row

    if not experiment_ids:
        return []
    where, params = id_filter(experiment_ids, "experiment_id")
    rows = store.query(f"SELECT * FROM experiments {where} ORDER BY experiment_id", params)
    return [(experiment_from_row(r), r.get("source_file")) for r in rows]


def write_investigated(store: StoreConnection, episodes: list[tuple[EpisodeRecord, str | None]],
                       experiments: list[tuple[ExperimentRecord, str | None]]) -> None:
    """Upsert investigated episodes (and their experiments' ``investigator_llm_config``)
    in one transaction; each keeps its source file."""
    if not episodes and not experiments:
        return
    batch = store.next_batch_id()
    store.write_batch(
        batch_id=batch, experiments=[experiment_row(x, src, batch) for x, src in experiments],
        episodes=[episode_row(ep, src, batch) for ep, src in episodes], measurements=[],
        problems=[], sources=["evalatlas investigate"],
        started_at=_dt.datetime.now(_dt.UTC))


FINDINGS_COLUMNS = ("group_key", "group_name", "agent_id", "agent", "benchmark", "task_id",
                    "experiment_id", "trajectory_id", "failed", "investigated", "difficulty",
                    "feasible", "failure_root_cause", "failure_category", "evidence")


def findings_rows(store: StoreConnection, *, by: str = "agent", agent: list[str] | None = None,
                  benchmark: list[str] | None = None,
                  experiment: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per episode with an outcome or a finding (:data:`FINDINGS_COLUMNS`):
    the ``by`` group (``group_key``/``group_name``, see
    :func:`evalatlas.store.queries.group_expr`), the agent, task, whether it failed
    (:data:`FAILED_SQL`), and the findings' fields (None where absent). Input of
    :mod:`evalatlas.analysis.failures`. ``experiment``: experiment ids (resolved)."""
    _, key, _ = group_expr(by)
    display = {"agent": "coalesce(x.agent_name, '(no experiment record)')",
               "experiment": "coalesce(x.experiment_name, e.experiment_id)"}.get(by, key)
    where, params = _filters(agent, benchmark)
    if experiment is not None:  # ids, resolved by store/selection.py
        clause, values = id_filter(experiment, joiner="")
        where.append(clause.strip())
        params += values
    where.append(f"({FAILED_SQL} OR e.findings IS NOT NULL)")
    f = "e.findings"
    return store.query(f"""
        SELECT {key} AS group_key, {display} AS group_name,
               coalesce(x.agent_id, '?' || e.experiment_id) AS agent_id,
               coalesce(x.agent_name, '(no experiment record)') AS agent,
               coalesce(x.benchmark_name, '(unknown)') AS benchmark,
               e.task_id, e.experiment_id, e.trajectory_id,
               coalesce({FAILED_SQL}, false) AS failed,
               {f} IS NOT NULL AS investigated,
               ({f}->>'$.difficulty') AS difficulty,
               TRY_CAST({f}->'$.feasible' AS BOOLEAN) AS feasible,
               ({f}->>'$.failure_root_cause') AS failure_root_cause,
               ({f}->>'$.failure_category') AS failure_category,
               ({f}->>'$.evidence') AS evidence
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        WHERE {' AND '.join(where)}
        ORDER BY group_key, benchmark, e.task_id, e.experiment_id, e.trajectory_id""",
                       params)
