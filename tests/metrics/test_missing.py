"""The formulas' one missing-value rule (metrics/missing.py): None or NaN is missing,
0 and infinity are values."""

from __future__ import annotations

import math

import numpy as np

from evalatlas.metrics.missing import known, known_values
from evalatlas.metrics.outcomes import composite_score, cost_of_pass, letter_grade, tier_uplift
from evalatlas.metrics.pareto import pareto_frontier


def test_none_and_nan_are_missing_zero_and_infinity_are_values() -> None:
    assert known(None) is None
    assert known(math.nan) is None and known(np.float64("nan")) is None
    assert known(0) == 0.0 and isinstance(known(0), float)
    assert known(math.inf) == math.inf
    assert known(np.float32(0.25)) == 0.25
    assert known_values([1, None, math.nan, 0.0, 2.5]) == [1.0, 0.0, 2.5]


def test_formulas_read_the_rule() -> None:
    assert math.isnan(cost_of_pass(None, 0.5)) and math.isnan(cost_of_pass(1.0, math.nan))
    assert cost_of_pass(1.0, 0.0) == math.inf and cost_of_pass(0.0, 0.5) == 0.0
    assert math.isnan(composite_score(0.5, None))
    assert composite_score(0.5, 0.25) == 0.375
    assert letter_grade(math.nan) is None and letter_grade(0.0) == "F"
    assert tier_uplift(None, 0.5).reason == "missing score"
    assert tier_uplift(0.9, 0.75).value == (0.9 - 0.75) / 0.75
    # unknown cost or accuracy: not on the frontier, never read as free
    assert pareto_frontier([1.0, None, 2.0, math.nan, 0.5],
                           [0.5, 0.9, 0.8, 0.9, 0.5]) == [False, None, True, None, True]
