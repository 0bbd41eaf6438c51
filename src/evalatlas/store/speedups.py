"""FC-Eval speedup queries: per-task payloads and per-agent run summaries from the store.

Reads ``measurements`` (effective speedups, i.e. after the revert-to-baseline fallback,
as the adapters store them) and ``episodes``/``experiments``. Every number comes from
the pure functions of :mod:`evalatlas.metrics.speedup`,
:mod:`evalatlas.metrics.speedup_summary`, :mod:`evalatlas.metrics.outcomes` and
:func:`evalatlas.stats.bootstrap_ci`; this module only selects and groups rows.

FC-Eval episodes are those whose ``extra`` has ``agent_model`` (set by the fceval, asv and
fc-website adapters) or that have measurements. Agents are grouped by the experiment's
agent name, which these adapters set to the full ``agent:model``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from evalatlas.metrics.outcomes import default_k_values, pass_at_k_over_tasks
from evalatlas.metrics.speedup import level_advantages, task_speedup
from evalatlas.metrics.speedup_summary import agent_metrics_summary, beat_oracle_share
from evalatlas.stats.bootstrap import bootstrap_ci
from evalatlas.store.db import Store

_EPISODES = """
    SELECT e.experiment_id, e.trajectory_id, e.task_id, e.attempt,
           coalesce(x.agent_name, e.extra->>'$.agent_model', '?' || e.experiment_id) AS agent,
           e.cost_usd, e.n_steps, e.extra->>'$.correctness_known' AS correctness_known,
           e.extra->>'$.pytest_failed' AS pytest_failed,
           e.extra->>'$.snapshot_failed' AS snapshot_failed,
           e.extra->>'$.fallback_to_baseline' AS fallback,
           TRY_CAST(e.scores->>'$.num_benchmarks' AS DOUBLE) AS num_benchmarks,
           x.experiment_name
    FROM episodes e LEFT JOIN experiments x USING (experiment_id)
    WHERE (e.extra->>'$.agent_model' IS NOT NULL
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


def _flag(v: Any) -> bool | None:
    if v is None:
        return None
    return str(v).lower() == "true"


def _filter(rows: list[dict[str, Any]], experiment: list[str] | None,
            agent: list[str] | None, task: list[str] | None) -> list[dict[str, Any]]:
    out = rows
    if experiment:
        out = [r for r in out if r["experiment_id"] in experiment
               or r["experiment_name"] in experiment]
    if agent:
        out = [r for r in out if r["agent"] in agent]
    if task:
        out = [r for r in out if r["task_id"] in task]
    return out


def task_payloads(
    store: Store,
    *,
    experiment: list[str] | None = None,
    agent: list[str] | None = None,
    task: list[str] | None = None,
) -> list[dict[str, Any]]:
    """One payload per FC-Eval episode (the seed's per-agent task payload fields).

    Levels and task speedup are recomputed from the stored measurements; success is
    None when the input carried no correctness information.
    """
    eps = _filter(store.query(_EPISODES), experiment, agent, task)
    if not eps:
        return []
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
    sa_all, so_all, adv_all = (_floats(arr["speedup_agent"]), _floats(arr["speedup_oracle"]),
                               _floats(arr["advantage"]))
    valid_all = np.asarray(arr["valid"], dtype=bool)
    mod, cls, fn = (_strings(arr["module"]), _strings(arr["class_name"]),
                    _strings(arr["function"]))
    out = []
    for r in eps:
        s, e = bounds.get((r["experiment_id"], r["trajectory_id"]), (0, 0))
        ok = valid_all[s:e] & np.isfinite(sa_all[s:e]) & np.isfinite(so_all[s:e])
        sa = np.where(ok, sa_all[s:e], np.nan)
        so = np.where(ok, so_all[s:e], np.nan)
        names = tuple(zip(mod[s:e], cls[s:e], fn[s:e], strict=True))
        lv = level_advantages(names, sa, so)
        adv = adv_all[s:e][ok]
        known = _flag(r["correctness_known"])
        pf, sf = _flag(r["pytest_failed"]), _flag(r["snapshot_failed"])
        success = None if known is False or (pf is None and sf is None) else \
            not (bool(pf) or bool(sf))
        nb = r["num_benchmarks"]
        out.append({
            "agent": r["agent"], "task_id": r["task_id"], "attempt": r["attempt"],
            "experiment_id": r["experiment_id"], "trajectory_id": r["trajectory_id"],
            "success": success, "pytest_failed": pf, "snapshot_failed": sf,
            "fallback_to_baseline": _flag(r["fallback"]) or False,
            "agent_advantage": lv[4], "agent_advantage_level1": lv[1],
            "agent_advantage_level2": lv[2], "agent_advantage_level3": lv[3],
            "agent_advantage_level4": lv[4],
            "num_benchmarks": int(nb) if nb is not None and math.isfinite(nb) else e - s,
            "num_valid_benchmarks": int(ok.sum()),
            "task_speedup": task_speedup(sa),
            "task_cost_usd": r["cost_usd"],
            "trajectory_length": r["n_steps"],
            "advantages": adv[np.isfinite(adv)],
        })
    return out


def _floats(col: Any) -> np.ndarray:
    """A numeric column as floats, NULL as NaN."""
    return np.ma.filled(np.ma.asarray(col).astype(float), np.nan)


def _strings(col: Any) -> list[str | None]:
    """A text column as a list, NULL as None."""
    return [None if v is None else str(v) for v in np.ma.asarray(col).tolist()]


def _ci(values: list[float], confidence: float, resamples: int) -> tuple[float, float] | None:
    if not values:
        return None
    return bootstrap_ci(values, confidence=confidence, n_resamples=resamples)


def summarise(
    payloads: list[dict[str, Any]],
    by: str = "agent",
    *,
    level: int = 4,
    confidence: float = 0.95,
    resamples: int = 2000,
) -> list[dict[str, Any]]:
    """Per agent (``by="agent"``) or per task and agent (``by="task"``) summaries.

    Fields of :func:`~evalatlas.metrics.speedup_summary.agent_metrics_summary`, plus
    ``advantage`` = the chosen level's mean advantage with a bootstrap interval over
    tasks, ``beat_oracle_share`` over all valid benchmarks, ``accuracy`` (unknown
    correctness excluded) and ``pass_at_k`` (k from ``default_k_values`` of the fewest
    attempts per task).
    """
    if by not in ("agent", "task"):
        raise ValueError(f"--by must be agent or task, got {by!r}")
    if level not in (1, 2, 3, 4):
        raise ValueError(f"--level must be 1, 2, 3 or 4, got {level!r}")
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in payloads:
        key = (p["agent"],) if by == "agent" else (p["task_id"], p["agent"])
        groups[key].append(p)
    rows = []
    lk = f"agent_advantage_level{level}"
    for key, ps in sorted(groups.items()):
        row: dict[str, Any] = {"agent": key[-1]}
        if by == "task":
            row = {"task_id": key[0], **row}
        summ = agent_metrics_summary(ps)
        row.update(summ)
        row["level"] = level
        row["advantage"] = summ[lk]
        ci = _ci([p[lk] for p in ps], confidence, resamples)
        row["advantage_ci_low"], row["advantage_ci_high"] = ci if ci else (None, None)
        row["beat_oracle_share"] = beat_oracle_share(
            np.concatenate([p["advantages"] for p in ps]))
        row["fallbacks"] = sum(1 for p in ps if p["fallback_to_baseline"])
        known = [p["success"] for p in ps if p["success"] is not None]
        row["accuracy"] = sum(known) / len(known) if known else None
        by_task: dict[str, list[bool | None]] = defaultdict(list)
        for p in ps:
            if p["success"] is not None:
                by_task[p["task_id"]].append(p["success"])
        ks = default_k_values(min(len(v) for v in by_task.values())) if by_task else []
        row["pass_at_k"] = {str(k): pass_at_k_over_tasks(by_task, k) for k in ks}
        row["tasks"] = len({p["task_id"] for p in ps})
        rows.append(row)
    return rows


def run_totals(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Run-level ``total_cost`` and ``cost_by_agent_model`` (known costs only)."""
    by: dict[str, float] = defaultdict(float)
    unknown = 0
    for p in payloads:
        c = p["task_cost_usd"]
        if c is None:
            unknown += 1
        else:
            by[p["agent"]] += c
    return {"total_cost_usd": sum(by.values()) if by else None,
            "cost_by_agent_model": dict(sorted(by.items())),
            "cost_unknown_episodes": unknown}


def benchmark_detail(
    store: Store,
    *,
    experiment: list[str] | None = None,
    agent: list[str] | None = None,
    task: list[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Per-benchmark rows (speedups, advantage, validity, fallback) for ``--detail``."""
    sql = """
        SELECT coalesce(x.agent_name, e.extra->>'$.agent_model') AS agent, e.task_id,
               e.attempt, m.benchmark, m.module, m.class_name, m.function, m.params,
               m.baseline_time, m.agent_time, m.oracle_time, m.speedup_agent,
               m.speedup_oracle, m.advantage, m.valid, m.fallback_to_baseline,
               m.extra->>'$.invalid_reason' AS invalid_reason,
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
