"""BCa bootstrap via scipy: seeded, degenerate cases, agreement with theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalatlas.stats import bootstrap_ci


def test_matches_scipy_with_same_seed() -> None:
    x = np.random.default_rng(5).exponential(size=60)
    got = bootstrap_ci(x, n_resamples=3000, seed=7)
    ref = stats.bootstrap((x,), np.mean, n_resamples=3000, method="BCa",
                          random_state=np.random.default_rng(7)).confidence_interval
    assert got == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert bootstrap_ci(x, n_resamples=3000, seed=7) == got  # reproducible


def test_close_to_normal_theory_for_a_large_sample() -> None:
    x = np.random.default_rng(11).normal(10.0, 2.0, size=2000)
    lo, hi = bootstrap_ci(x, n_resamples=4000, method="percentile")
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - 1.96 * se, abs=0.2 * se)
    assert hi == pytest.approx(x.mean() + 1.96 * se, abs=0.2 * se)


def test_other_statistics_and_non_vectorised() -> None:
    x = [1.0, 3.0, 2.0, 8.0, 4.0, 5.0, 7.0, 6.0]
    lo, hi = bootstrap_ci(x, statistic=np.median, n_resamples=2000)
    assert lo <= float(np.median(x)) <= hi

    def trimmed(a: np.ndarray) -> float:  # no axis argument
        return float(stats.trim_mean(a, 0.1))

    lo2, hi2 = bootstrap_ci(x, statistic=trimmed, n_resamples=500)
    assert lo2 <= trimmed(np.array(x)) <= hi2


def test_degenerate_samples_have_no_interval_not_a_zero_width_one() -> None:
    for values in ([0.7], [1.0, 1.0, 1.0], [], [2.0, float("nan"), 2.0]):
        lo, hi = bootstrap_ci(values)
        assert math.isnan(lo) and math.isnan(hi), values
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=0.0)
