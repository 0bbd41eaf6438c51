"""ProjectScylla's tier table, composed once for ``ea.tiers``, ``evalatlas tiers`` and the
report's tier views (store -> runs per tier (:func:`evalatlas.store.tiers.load_tier_runs`)
-> :func:`evalatlas.analysis.tiers.tier_table`)."""

from __future__ import annotations

from typing import Any

from evalatlas.analysis.tiers import TierReport, tier_table
from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import select_experiments
from evalatlas.store.tiers import load_tier_runs


def tiers_of(store: StoreConnection, *, baseline: str | None = "T0", label: str = "tier",
             experiment: object = None, **options: Any) -> TierReport:
    """The :class:`TierReport` of the selected experiments (names or ids, matched by
    :mod:`evalatlas.store.selection`; None: all), tier = the experiment label
    ``label``; ``options`` are :func:`tier_table`'s (confidence, weights, scale, ddof,
    n_resamples, seed)."""
    runs = load_tier_runs(store, label, select_experiments(store, experiment))
    return tier_table(runs, baseline=baseline, label=label, **options)
