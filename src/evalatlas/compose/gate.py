"""The CI gate and its planner, composed once for ``ea.gate`` / ``ea.gate_plan`` and
``evalatlas gate`` (store -> per-task outcome arrays of each side
(:func:`evalatlas.store.gate.load_gate_side`) -> :mod:`evalatlas.analysis.gate`).

A side is read by :func:`gate_side` from whichever store holds it (the baseline may come
from another store than the candidate), then :func:`gate_of` compares the two."""

from __future__ import annotations

from typing import Any

from evalatlas.analysis.gate import GatePlanResult, GateResult, SideData, gate_sides, plan_sides
from evalatlas.store.db import StoreConnection
from evalatlas.store.gate import load_gate_side
from evalatlas.store.sides import resolve

GateSide = tuple[str, SideData]
"""A side's display name and its episodes' arrays."""


def gate_side(store: StoreConnection, selector: str) -> GateSide:
    """The side ``selector`` names (as :func:`evalatlas.store.sides.resolve` matches it)
    with its arrays, read from ``store``."""
    side = resolve(store, selector)
    return side.name, load_gate_side(store, side)


def gate_of(baseline: GateSide, candidate: GateSide, *, baseline_selector: str,
            candidate_selector: str, **options: Any) -> GateResult:
    """The gate's verdict of ``candidate`` against ``baseline``; ``options`` are
    :func:`evalatlas.analysis.gate.gate_sides`'s (metric, max_drop, alpha, by,
    exclude_flaky, sequential, power), checked by the caller. Sides with the same name
    are told apart as ``[baseline]`` and ``[candidate]``."""
    names = (baseline[0], candidate[0])
    if names[0] == names[1]:
        names = (f"{names[0]} [baseline]", f"{names[1]} [candidate]")
    result = gate_sides(baseline[1], candidate[1], baseline_name=names[0],
                        candidate_name=names[1], **options)
    result.meta.update(baseline_selector=baseline_selector,
                       candidate_selector=candidate_selector)
    return result


def gate_plan_of(store: StoreConnection, baseline: str, **options: Any) -> GatePlanResult:
    """Tasks (and attempts) a gate needs, from the ``baseline``'s own per-task outcomes;
    ``options`` are :func:`evalatlas.analysis.gate.plan_sides`'s (drop, power, alpha,
    attempts)."""
    name, arrays = gate_side(store, baseline)
    result = plan_sides(arrays, baseline_name=name, **options)
    result.meta["baseline_selector"] = baseline
    return result
