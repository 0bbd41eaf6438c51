"""Paired comparison, composed once for ``ea.compare`` and ``evalatlas compare``
(store -> sides -> :func:`evalatlas.analysis.compare.compare_sides` ->
:class:`CompareResult`).

Each selector (an agent, an experiment or ``label:<name>=<value>``) is resolved by
:func:`evalatlas.store.sides.resolve`; the score compared is ``score`` or the one the
sides share (:func:`evalatlas.store.sides.pick_score`); sides whose names collide are
told apart by their selector; an experiment of a side that did not finish adds the
run-status note. The report's paired matrix uses the same pair rule and Holm
adjustment (:func:`evalatlas.analysis.compare.compare_aligned`, ``holm_rows``).
"""

from __future__ import annotations

from collections.abc import Sequence

from evalatlas.analysis.compare import CompareResult, PairBy, compare_sides
from evalatlas.analysis.run_status import incomplete_note
from evalatlas.store.catalog import experiment_catalog
from evalatlas.store.db import StoreConnection
from evalatlas.store.sides import load_side, pick_score, resolve


def compare_of(store: StoreConnection, selectors: Sequence[str], *, pair_by: PairBy = "task",
               score: str | None = None, confidence: float = 0.95, detect: float = 0.05,
               alpha: float = 0.05) -> CompareResult:
    """The :class:`CompareResult` of two or more selectors on the tasks they share."""
    sides = [resolve(store, s) for s in selectors]
    used = score if score is not None else pick_score(store, sides)
    arrays = [load_side(store, s, used) for s in sides]
    ids = {e for s in sides for e in s.experiment_ids}
    unfinished = incomplete_note([r for r in experiment_catalog(store)
                                  if r["experiment_id"] in ids])
    names = [s.name for s in sides]
    if len(set(names)) < len(names):
        names = [f"{s.name} [{s.selector}]" for s in sides]
    rows = compare_sides(names, arrays, pair_by=pair_by, confidence=confidence,
                         detect=detect, alpha=alpha)
    return CompareResult(rows=rows, meta={
        "selectors": list(selectors), "pair_by": pair_by, "score": used or "reward",
        "confidence": confidence, "alpha": alpha, "detect": detect}, notes=unfinished)
