"""Pareto frontier of cost against accuracy."""

from __future__ import annotations

import math

import pytest

from evalatlas.metrics.pareto import pareto_frontier


def test_frontier_keeps_undominated_points() -> None:
    costs = [1.0, 2.0, 3.0, 2.5, 0.5]
    acc = [0.5, 0.7, 0.9, 0.6, 0.2]
    # 2.5/0.6 is dominated by 2.0/0.7; every other point buys accuracy with cost
    assert pareto_frontier(costs, acc) == [True, True, True, False, True]


def test_unknown_cost_or_accuracy_is_not_on_it_nor_free() -> None:
    assert pareto_frontier([None, 1.0, math.nan], [0.99, 0.5, 0.9]) == [None, True, None]


def test_equal_cost_keeps_only_the_more_accurate_and_ties_both() -> None:
    assert pareto_frontier([1.0, 1.0], [0.4, 0.6]) == [False, True]
    assert pareto_frontier([1.0, 1.0], [0.6, 0.6]) == [True, True]


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="differ"):
        pareto_frontier([1.0], [0.1, 0.2])
