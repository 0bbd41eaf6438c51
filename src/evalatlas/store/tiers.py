"""Runs per tier from the store (SQL only): the rows behind ``tiers``.

A tier is the value of an experiment label (``tier`` by default); its runs are all
episodes of all experiments carrying that label value (all subtests of the tier, as
ProjectScylla's analysis does). The table is computed by :mod:`evalatlas.analysis.tiers`.
"""

from __future__ import annotations

import re

import numpy as np

from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import id_filter

_LABEL_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_TIER_NUM = re.compile(r"^[Tt](\d+)$")


def _tier_key(name: str) -> tuple[int, int, str]:
    m = _TIER_NUM.match(name)
    return (0, int(m.group(1)), name) if m else (1, 0, name)


def load_tier_runs(
    store: StoreConnection, label: str = "tier", experiment: list[str] | None = None,
    impl_score: str = "impl_rate",
) -> dict[str, dict[str, np.ndarray]]:
    """Per tier value: arrays ``success``, ``impl`` (NaN = missing), ``cost`` (NaN = unknown)
    and ``task`` (task ids, the clusters of the intervals)."""
    if not _LABEL_NAME.match(label) or not _LABEL_NAME.match(impl_score):
        raise ValueError(f"invalid label or score name: {label!r}, {impl_score!r}")
    where, params = id_filter(experiment, "e.experiment_id", "AND")
    sql = f"""
        SELECT json_extract_string(x.labels, '$."{label}"') AS tier,
               e.task_id, e.success,
               TRY_CAST(e.scores->>'$."{impl_score}"' AS DOUBLE) AS impl, e.cost_usd
        FROM episodes e JOIN experiments x USING (experiment_id)
        WHERE json_extract_string(x.labels, '$."{label}"') IS NOT NULL
          AND e.success IS NOT NULL {where}
    """
    arrays = store.query_arrays(sql, params)
    out: dict[str, dict[str, np.ndarray]] = {}
    if len(arrays["tier"]) == 0:
        return out
    tiers = np.asarray(arrays["tier"], dtype=object)
    success = np.asarray(arrays["success"], dtype=bool)
    task = np.asarray(arrays["task_id"], dtype=object)
    impl: np.ndarray = np.ma.filled(np.ma.asarray(arrays["impl"], dtype=float), np.nan)
    cost: np.ndarray = np.ma.filled(np.ma.asarray(arrays["cost_usd"], dtype=float), np.nan)
    for t in sorted(set(tiers.tolist()), key=_tier_key):
        m = tiers == t
        out[t] = {"success": success[m], "impl": impl[m], "cost": cost[m], "task": task[m]}
    return out
