"""Clustered interval from per-cluster totals == the per-value definition; t quantile."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as t_dist

from evalatlas.stats.standard_errors import (
    clustered_mean_interval,
    mean_with_interval,
    t_quantile,
)


def test_t_quantile_matches_scipy_stats() -> None:
    """Exact series (df < 300), Cornish-Fisher (df >= 300), stdtrit (fractional df)."""
    for conf in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        for df in (*range(1, 40), 99, 100, 199, 299, 300, 301, 650, 4999, 10**6, 2.5):
            assert t_quantile(conf, df) == pytest.approx(t_dist.ppf(0.5 + conf / 2, df),
                                                         rel=1e-9), (conf, df)
    assert t_quantile(0.95, math.inf) == pytest.approx(1.959963984540054)
    with pytest.raises(ValueError, match="confidence"):
        t_quantile(95, 3)


@pytest.mark.parametrize("binary", [True, False])
def test_totals_form_equals_per_value_form(binary: bool) -> None:
    rng = np.random.default_rng(7)
    tasks = rng.integers(0, 40, size=500)
    values = (rng.random(500) < 0.4).astype(float) if binary else rng.normal(0.3, 1, 500)
    ref = mean_with_interval(values, clusters=tasks, confidence=0.9)
    n = np.bincount(tasks, minlength=40)
    s = np.bincount(tasks, weights=values, minlength=40)
    q = np.bincount(tasks, weights=values * values, minlength=40)
    got = clustered_mean_interval(n, s, q, confidence=0.9)
    assert got.estimate == pytest.approx(ref.estimate, rel=1e-12)
    assert got.se == pytest.approx(ref.se, rel=1e-9)
    assert (got.low, got.high) == (pytest.approx(ref.low, rel=1e-9),
                                   pytest.approx(ref.high, rel=1e-9))
    assert got.n_clusters == ref.n_clusters == int((n > 0).sum())


def test_totals_form_edge_cases_and_validation() -> None:
    empty = clustered_mean_interval([], [], [])
    assert empty.n == 0 and math.isnan(empty.estimate)
    one_cluster = clustered_mean_interval([3], [2], [2])
    assert one_cluster.estimate == pytest.approx(2 / 3) and math.isnan(one_cluster.low)
    with pytest.raises(ValueError, match="confidence"):
        clustered_mean_interval([1], [1], [1], confidence=95)
    with pytest.raises(ValueError, match="differ in length"):
        clustered_mean_interval([1, 2], [1], [1])
