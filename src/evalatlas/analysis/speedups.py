"""FC-Eval speedups: per-task payloads and per-agent run summaries (the ``speedups`` numbers).

Input: FC-Eval episodes (dicts), their measurements as column arrays and each episode's
slice of them (:func:`evalatlas.store.speedups.load_speedup_rows`). Every number comes from
the pure functions of :mod:`evalatlas.metrics.speedup`,
:mod:`evalatlas.metrics.speedup_summary`, :mod:`evalatlas.metrics.outcomes` and
:func:`evalatlas.stats.bootstrap_ci`; this module only groups.

Agents are grouped by the experiment's agent name, which the FC-Eval adapters set to the
full ``agent:model``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalatlas.analysis.results import TableResult
from evalatlas.metrics.outcomes import default_k_values, pass_at_k_over_tasks
from evalatlas.metrics.speedup import LEVEL_NAMES, level_advantages, task_speedup
from evalatlas.metrics.speedup_summary import agent_metrics_summary, beat_oracle_share
from evalatlas.stats.bootstrap import bootstrap_ci


def _flag(v: Any) -> bool | None:
    if v is None:
        return None
    return str(v).lower() == "true"


def task_payloads(
    episodes: list[dict[str, Any]],
    measurements: dict[str, np.ndarray],
    bounds: dict[tuple[str, str], tuple[int, int]],
) -> list[dict[str, Any]]:
    """One payload per FC-Eval episode (the seed's per-agent task payload fields).

    Levels and task speedup are recomputed from the stored measurements; success is
    None when the input carried no correctness information.
    """
    eps, arr = episodes, measurements
    if not eps:
        return []
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
    """Bootstrap interval over tasks; None when there is no spread (one task, all equal)."""
    if not values:
        return None
    lo, hi = bootstrap_ci(values, confidence=confidence, n_resamples=resamples)
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)


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
    tasks, ``beat_oracle_share`` over all valid benchmarks, ``success_rate`` (the seed's
    ``mean_success_rate``, renamed to the one name every command uses; unknown
    correctness excluded) and ``pass_at_k`` (k from ``default_k_values`` of the fewest
    attempts per task).
    """
    if by not in ("agent", "task"):
        raise ValueError(f"--by must be agent or task, got {by!r}")
    if level not in (1, 2, 3, 4):
        raise ValueError(f"--level must be 1, 2, 3 or 4, got {level!r}")
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for p in payloads:
        key: tuple[str, ...] = (p["agent"],) if by == "agent" else (p["task_id"], p["agent"])
        groups[key].append(p)
    rows = []
    lk = f"agent_advantage_level{level}"
    for key, ps in sorted(groups.items()):
        row: dict[str, Any] = {"agent": key[-1]}
        if by == "task":
            row = {"task_id": key[0], **row}
        summ = agent_metrics_summary(ps)
        summ["success_rate"] = summ.pop("mean_success_rate")
        row.update(summ)
        row["level"] = level
        row["advantage"] = summ[lk]
        ci = _ci([p[lk] for p in ps], confidence, resamples)
        row["advantage_ci_low"], row["advantage_ci_high"] = ci if ci else (None, None)
        row["beat_oracle_share"] = beat_oracle_share(
            np.concatenate([p["advantages"] for p in ps]))
        row["fallbacks"] = sum(1 for p in ps if p["fallback_to_baseline"])
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


@dataclass
class SpeedupResult(TableResult):
    """Rows of :func:`summarise`; ``meta``: by, level, confidence and :func:`run_totals`."""

    SCHEMA: ClassVar[str] = "evalatlas.speedups/1"
    LEVEL_NAMES: ClassVar[dict[int, str]] = LEVEL_NAMES
    """What each advantage level aggregates over (1 module ... 4 overall)."""


def speedup_result(
    payloads: list[dict[str, Any]], by: str = "agent", *, level: int = 4,
    confidence: float = 0.95, resamples: int = 2000,
) -> SpeedupResult:
    """:func:`summarise` and :func:`run_totals` of the payloads, with the reader's notes."""
    rows = summarise(payloads, by, level=level, confidence=confidence, resamples=resamples)
    totals = run_totals(payloads)
    notes = []
    if not rows:
        notes.append("the store has no FC-Eval episodes; run `evalatlas ingest PATH` first")
    else:
        total = totals["total_cost_usd"]
        notes.append("total cost: " + ("unknown" if total is None else f"${total:,.4f}")
                     + (f" ({totals['cost_unknown_episodes']} episodes with unknown cost)"
                        if totals["cost_unknown_episodes"] else ""))
    return SpeedupResult(rows=rows, meta={"by": by, "level": level, "confidence": confidence,
                                          **totals}, notes=notes)


@dataclass
class SpeedupDetail(TableResult):
    """Per-benchmark rows (speedups, advantage, validity, fallback) as stored."""

    SCHEMA: ClassVar[str] = "evalatlas.speedups.detail/1"
