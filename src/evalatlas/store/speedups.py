"""FC-Eval rows from the store (SQL only): episodes, measurements and per-benchmark detail.

Reads ``measurements`` (effective speedups, i.e. after the revert-to-baseline fallback,
as the adapters store them) and ``episodes``/``experiments``. Payloads and summaries are
computed by :mod:`evalatlas.analysis.speedups`.

FC-Eval episodes are those whose ``extra`` has ``agent_model`` (set by the fceval, asv and
fc-website adapters) or that have measurements. Agents are grouped by the experiment's
agent name, which these adapters set to the full ``agent:model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalatlas.selectors import Candidate, as_selectors, resolve
from evalatlas.store.db import StoreConnection

_EPISODES = """
    SELECT e.experiment_id, e.trajectory_id, e.task_id, e.attempt,
           coalesce(x.agent_name, (e.extra->>'$.agent_model'), '?' || e.experiment_id) AS agent,
           e.cost_usd, e.n_steps, (e.extra->>'$.correctness_known') AS correctness_known,
           (e.extra->>'$.pytest_failed') AS pytest_failed,
           (e.extra->>'$.snapshot_failed') AS snapshot_failed,
           (e.extra->>'$.fallback_to_baseline') AS fallback,
           TRY_CAST(e.scores->>'$.num_benchmarks' AS DOUBLE) AS num_benchmarks,
           x.experiment_name
    FROM episodes e LEFT JOIN experiments x USING (experiment_id)
    WHERE ((e.extra->>'$.agent_model') IS NOT NULL
           OR EXISTS (SELECT 1 FROM measurements m WHERE m.experiment_id = e.experiment_id
                      AND m.trajectory_id = e.trajectory_id))
"""

_EPISODE_KEYS = """
    SELECT experiment_id, trajectory_id,
           row_number() OVER (ORDER BY experiment_id, trajectory_id) - 1 AS k
    FROM (SELECT DISTINCT experiment_id, trajectory_id FROM measurements)
"""

_MEASUREMENTS = f"""
    WITH ep AS ({_EPISODE_KEYS})
    SELECT ep.k, m.module, m.class_name, m.function, m.speedup_agent, m.speedup_oracle,
           m.advantage, coalesce(m.valid, false) AS valid
    FROM measurements m JOIN ep USING (experiment_id, trajectory_id)
    ORDER BY ep.k
"""


def _filter(rows: list[dict[str, Any]], experiment: list[str] | None,
            agent: str | Sequence[str] | None,
            task: list[str] | None) -> list[dict[str, Any]]:
    out = rows
    if experiment is not None:
        keep = set(experiment)
        out = [r for r in out if r["experiment_id"] in keep]
    if agent:
        names = sorted({r["agent"] for r in rows})
        cands = [Candidate(key=n, names=(n,), kind="agent") for n in names]
        wanted = {c.key for sel in as_selectors(agent, "agent") or []
                  for c in resolve(sel, cands, argument="agent", what="agent")}
        out = [r for r in out if r["agent"] in wanted]
    if task:
        out = [r for r in out if r["task_id"] in task]
    return out


@dataclass
class SpeedupRows:
    """FC-Eval episodes (one dict each) and their measurements as column arrays.

    ``bounds[(experiment_id, trajectory_id)] = (start, end)``: the slice of the
    measurement arrays that belongs to one episode (episodes without measurements are
    absent).
    """

    episodes: list[dict[str, Any]]
    measurements: dict[str, np.ndarray]
    bounds: dict[tuple[str, str], tuple[int, int]]


def load_speedup_rows(
    store: StoreConnection,
    *,
    experiment: list[str] | None = None,
    agent: str | Sequence[str] | None = None,
    task: list[str] | None = None,
) -> SpeedupRows:
    """FC-Eval episodes (filtered by experiment id/name, agent, task) and measurements."""
    eps = _filter(store.query(_EPISODES), experiment, agent, task)
    if not eps:
        return SpeedupRows([], {}, {})
    arr = store.query_arrays(_MEASUREMENTS)
    names_of = {int(r["k"]): (r["experiment_id"], r["trajectory_id"])
                for r in store.query(_EPISODE_KEYS)}
    keys = np.asarray(arr["k"], dtype=np.int64)
    bounds: dict[tuple[str, str], tuple[int, int]] = {}
    if len(keys):
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [len(keys)]))
        bounds = {names_of[int(keys[s])]: (int(s), int(e))
                  for s, e in zip(starts, ends, strict=True)}
    return SpeedupRows(eps, dict(arr), bounds)


def benchmark_detail(
    store: StoreConnection,
    *,
    experiment: list[str] | None = None,
    agent: str | Sequence[str] | None = None,
    task: list[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Per-benchmark rows (speedups, advantage, validity, fallback) for ``--detail``."""
    sql = """
        SELECT coalesce(x.agent_name, (e.extra->>'$.agent_model')) AS agent, e.task_id,
               e.attempt, m.benchmark, m.module, m.class_name, m.function, m.params,
               m.baseline_time, m.agent_time, m.oracle_time, m.speedup_agent,
               m.speedup_oracle, m.advantage, m.valid, m.fallback_to_baseline,
               (m.extra->>'$.invalid_reason') AS invalid_reason,
               e.experiment_id, x.experiment_name
        FROM measurements m
        JOIN episodes e USING (experiment_id, trajectory_id)
        LEFT JOIN experiments x USING (experiment_id)
        ORDER BY agent, e.task_id, e.attempt, m.benchmark
    """
    rows = _filter(store.query(sql), experiment, agent, task)
    for r in rows:
        r.pop("experiment_name", None)
    return rows[:limit] if limit else rows
