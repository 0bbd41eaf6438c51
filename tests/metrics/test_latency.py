"""Latency p50/p95 with linear interpolation; timeouts enter at the timeout value."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.metrics.latency import effective_latency, latency_p50_p95, percentile


def test_linear_interpolation_worked_example():
    # pos = (n-1) p: n=4, p=0.5 -> 1.5 -> 2 + 0.5 (3 - 2) = 2.5; p=0.95 -> 2.85 -> 3.85
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.95) == pytest.approx(3.85)


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 0.95, 1.0])
def test_matches_numpy_linear(p):
    rng = np.random.default_rng(3)
    xs = rng.exponential(20.0, size=37).tolist()
    assert percentile(xs, p) == pytest.approx(float(np.percentile(xs, 100 * p)))


def test_timeouts_enter_at_the_timeout():
    # multihop_qa capability, smolagents: three questions timed out at 120 s -> p95 120
    lat = [120.0, 117.58, 95.58, 113.10, 120.0, 120.0, 117.51, 98.98, 116.25]
    p50, p95 = latency_p50_p95(lat)
    assert round(p50, 2) == 117.51
    assert round(p95, 2) == 120.00
    assert effective_latency(33.0, timed_out=True, timeout_s=120.0) == 120.0
    assert effective_latency(33.0, timed_out=False, timeout_s=120.0) == 33.0
    assert effective_latency(None) is None


def test_empty_and_missing():
    assert math.isnan(percentile([], 0.5))
    assert percentile([], 0.5, empty=0.0) == 0.0  # upstream's value
    assert percentile([None, 2.0, float("nan"), 4.0], 0.5) == 3.0
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)
