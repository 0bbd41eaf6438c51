"""Sample size and minimum detectable difference (Miller 2024 formula)."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from evalatlas.stats import minimum_detectable_difference, tasks_needed


def test_tasks_needed_hand_value() -> None:
    # (1.959964 + 0.841621)^2 * 0.25 / 0.05^2 = 784.89 -> 785
    assert tasks_needed(0.25, 0.05) == 785
    assert tasks_needed(0.25, -0.05) == 785
    z = norm.ppf(0.995) + norm.ppf(0.9)
    assert tasks_needed(0.1, 0.1, alpha=0.01, power=0.9) == math.ceil(z * z * 0.1 / 0.01)


def test_repeated_attempts_add_within_task_variance() -> None:
    # omega^2 = 0.2 + 0.1/5 + 0.3/3 = 0.32
    n = tasks_needed(0.2, 0.05, within_variance_a=0.1, attempts_a=5,
                     within_variance_b=0.3, attempts_b=3)
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert n == math.ceil(z * z * 0.32 / 0.0025)


def test_mdd_inverts_tasks_needed() -> None:
    mdd = minimum_detectable_difference(0.25, 785)
    assert mdd == pytest.approx(0.05, rel=1e-3)
    assert mdd <= 0.05
    assert minimum_detectable_difference(0.25, 784) > 0.05
    assert math.isnan(minimum_detectable_difference(0.25, 0))


def test_power_input_errors() -> None:
    with pytest.raises(ValueError):
        tasks_needed(0.25, 0.0)
    with pytest.raises(ValueError):
        tasks_needed(-1.0, 0.1)
    with pytest.raises(ValueError):
        tasks_needed(0.25, 0.1, alpha=1.5)
    with pytest.raises(ValueError):
        minimum_detectable_difference(0.25, 10, attempts_a=0)
    assert tasks_needed(0.0, 0.1) == 1
