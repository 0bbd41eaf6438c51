"""Run-level aggregation of FC-Eval task payloads per ``agent:model``.

Source: seed ``000_4831be6494944efa`` ("Run-Level Aggregation") and fc-eval 0.1.0
``BenchmarkResults.agent_metrics_summary`` (reference fc-eval.md section 9). Pure: the
per-task payloads (see :func:`evalatlas.metrics.speedup.task_metrics`) in, numbers out.

Where evalatlas differs from upstream, because a missing value must stay missing:
an unknown task cost or trajectory length is left out of its mean (upstream counts it
as 0), and ``mean_cost_per_task`` / ``cost_weighted_advantage`` are None when no task
of the agent has a known cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from evalatlas.metrics.speedup import gmean


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _known(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]


def task_success(payload: Mapping[str, Any]) -> bool | None:
    """``success`` when it is a bool, else derived from the failed flags (as upstream);
    None when neither is known (e.g. published speedup tables without test results)."""
    s = payload.get("success")
    if isinstance(s, bool):
        return s
    pf, sf = payload.get("pytest_failed"), payload.get("snapshot_failed")
    if pf is None and sf is None:
        return None
    return not (bool(pf) or bool(sf))


def cost_weighted_advantage(mean_advantage: float, mean_cost: float | None) -> float | None:
    """``mean_advantage / mean_cost`` when the mean cost is > 0, else 0.0 (a ratio, not a
    product; upstream quirk 15). None when the cost is unknown."""
    if mean_cost is None:
        return None
    return mean_advantage / mean_cost if mean_cost > 0 else 0.0


def agent_metrics_summary(payloads: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate one agent's task payloads exactly as the seed's table.

    - ``mean_speedup``: arithmetic mean of ``task_speedup`` (a missing one counts 1.0);
    - ``mean_success_rate``: mean of :func:`task_success` over the tasks where it is
      known (None when it is known for none);
    - ``num_benchmarks`` / ``num_valid_benchmarks``: sums;
    - ``agent_advantage`` and ``agent_advantage_level1..4``: arithmetic means (missing
      counts 0.0, as upstream);
    - ``mean_cost_per_task``: mean of the known ``task_cost_usd``;
    - ``cost_weighted_advantage``: see :func:`cost_weighted_advantage`;
    - ``mean_trajectory_length``: mean of the known trajectory lengths.
    """
    n = len(payloads)
    out: dict[str, Any] = {"n_tasks": n}
    if n == 0:
        return out

    def num(p: Mapping[str, Any], key: str, default: float) -> float:
        v = p.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
        return default

    out["mean_speedup"] = sum(num(p, "task_speedup", 1.0) for p in payloads) / n
    known = [s for s in (task_success(p) for p in payloads) if s is not None]
    out["mean_success_rate"] = sum(known) / len(known) if known else None
    out["num_benchmarks"] = int(sum(num(p, "num_benchmarks", 0) for p in payloads))
    out["num_valid_benchmarks"] = int(sum(num(p, "num_valid_benchmarks", 0) for p in payloads))
    for key in ("agent_advantage", "agent_advantage_level1", "agent_advantage_level2",
                "agent_advantage_level3", "agent_advantage_level4"):
        out[key] = sum(num(p, key, 0.0) for p in payloads) / n
    costs = _known(p.get("task_cost_usd") for p in payloads)
    out["mean_cost_per_task"] = _mean(costs)
    out["total_cost_usd"] = sum(costs) if costs else None
    out["cost_weighted_advantage"] = cost_weighted_advantage(
        out["agent_advantage"], out["mean_cost_per_task"])
    out["mean_trajectory_length"] = _mean(_known(p.get("trajectory_length") for p in payloads))
    return out


def advantages_gmean(advantages: Iterable[float]) -> float | None:
    """Upstream ``agent_advantages_gmean``: ``gmean(1 + adv) - 1`` when every
    ``1 + adv > 0``, else the arithmetic mean; None for no values."""
    vals = _known(advantages)
    if not vals:
        return None
    if all(1 + v > 0 for v in vals):
        g = gmean([1 + v for v in vals])
        return None if g is None else g - 1
    return sum(vals) / len(vals)


def beat_oracle_share(advantages: Iterable[float | None]) -> float | None:
    """Share of valid benchmarks where the agent beat the oracle (``advantage > 0``).

    evalatlas extension (not in the seed). None when there is no valid benchmark.
    """
    if isinstance(advantages, np.ndarray):
        arr = advantages.astype(float)
        arr = arr[np.isfinite(arr)]
        return float((arr > 0).mean()) if arr.size else None
    vals = _known(advantages)
    if not vals:
        return None
    return sum(1 for v in vals if v > 0) / len(vals)
