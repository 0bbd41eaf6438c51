"""Pareto frontier of cost against accuracy (HAL's cost-accuracy frontier).

A point is on the frontier when no other point is at least as cheap *and* at least as
accurate while strictly better in one of the two (Kapoor et al. 2024, "AI Agents That
Matter", arXiv 2407.01502, section 3: "a Pareto frontier of accuracy and cost"). Points
with an unknown cost or accuracy are not on it (``None``), never treated as free or as 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalatlas.metrics.missing import known


def pareto_frontier(
    costs: Sequence[float | None], accuracies: Sequence[float | None]
) -> list[bool | None]:
    """For each point: True on the frontier, False dominated, None (unknown cost/accuracy).

    Minimise cost, maximise accuracy. Duplicated points are both on the frontier (neither
    is strictly better). O(n log n): sort by cost ascending, accuracy descending, and keep
    each point whose accuracy beats the best accuracy of every cheaper point.
    """
    if len(costs) != len(accuracies):
        raise ValueError(f"costs ({len(costs)}) and accuracies ({len(accuracies)}) differ "
                         "in length")
    out: list[bool | None] = [None] * len(costs)
    points = [(c, a, i) for i, (c, a) in enumerate(zip(map(known, costs), map(known, accuracies),
                                                        strict=True))
              if c is not None and a is not None]
    best = -math.inf
    best_cost = None
    for c, a, i in sorted(points, key=lambda p: (p[0], -p[1])):
        if a > best:
            out[i] = True
            best, best_cost = a, c
        elif a == best and c == best_cost:
            out[i] = True  # identical point: not strictly dominated
        else:
            out[i] = False
    return out
