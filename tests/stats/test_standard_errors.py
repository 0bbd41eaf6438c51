"""CLT and clustered standard errors, intervals, and the Wilson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalatlas.stats import (
    clustered_standard_error,
    mean_with_interval,
    standard_error_clt,
    wilson_interval,
)


def _miller_by_loops(values: list[float], clusters: list[str]) -> float:
    """Miller 2024 clustered SE written out term by term (independent of the module)."""
    n = len(values)
    mean = sum(values) / n
    d = [v - mean for v in values]
    clt2 = sum(x * x for x in d) / (n * (n - 1))
    cross = sum(d[i] * d[j] for i in range(n) for j in range(n)
                if i != j and clusters[i] == clusters[j])
    return math.sqrt(clt2 + cross / n**2)


def test_clt_worked_example() -> None:
    # mean 0.75, sum of squares 0.75, n(n-1) = 12 -> sqrt(0.0625)
    assert standard_error_clt([1, 0, 1, 1]) == pytest.approx(0.25)
    # binary scores: sqrt(p(1-p)/(n-1))
    assert standard_error_clt([1, 0, 1, 1]) == pytest.approx(math.sqrt(0.75 * 0.25 / 3))
    assert math.isnan(standard_error_clt([1.0]))
    assert standard_error_clt([1, 0, float("nan"), 1, 1]) == pytest.approx(0.25)


def test_clustered_worked_example() -> None:
    # d = [.25, -.75, .25, .25]; cluster sums -0.5 and 0.5; sum d^2 = 0.75
    # Miller: 0.75/12 + (0.5 - 0.75)/16 = 0.046875
    v, c = [1, 0, 1, 1], ["a", "a", "b", "b"]
    assert clustered_standard_error(v, c) == pytest.approx(math.sqrt(0.046875))
    # Inspect: sqrt(C/(C-1) * sum_c S_c^2) / n = sqrt(2 * 0.5) / 4
    assert clustered_standard_error(v, c, method="inspect") == pytest.approx(0.25)


def test_clustered_matches_loop_formula_and_grows_with_correlation() -> None:
    rng = np.random.default_rng(3)
    tasks = np.repeat(np.arange(40), 5)
    task_p = rng.uniform(0, 1, 40)
    values = (rng.uniform(size=200) < task_p[tasks]).astype(float)
    labels = [f"t{t}" for t in tasks]
    got = clustered_standard_error(values, labels)
    assert got == pytest.approx(_miller_by_loops(values.tolist(), labels), rel=1e-12)
    # attempts of one task are correlated: the clustered SE exceeds the naive one
    assert got > 1.3 * standard_error_clt(values)


def test_clustered_input_checks() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        clustered_standard_error([1, 2], ["a"])
    with pytest.raises(ValueError, match="method"):
        clustered_standard_error([1, 2], ["a", "b"], method="x")  # type: ignore[arg-type]
    assert math.isnan(clustered_standard_error([1.0], ["a"]))
    assert math.isnan(clustered_standard_error([1.0, 0.0], ["a", "a"], method="inspect"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=60))
def test_hypothesis_clustered_equals_clt_with_singleton_clusters(values: list[float]) -> None:
    se = clustered_standard_error(values, list(range(len(values))))
    assert se == pytest.approx(standard_error_clt(values), rel=1e-9, abs=1e-9)


def test_mean_with_interval_clt_uses_t() -> None:
    v = [0.2, 0.5, 0.9, 0.4, 0.7, 0.6]
    iv = mean_with_interval(v)
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=np.mean(v), scale=stats.sem(v))
    assert (iv.low, iv.high) == pytest.approx((lo, hi))
    assert iv.method == "clt" and iv.n == 6 and iv.n_nan == 0


def test_mean_with_interval_clustered_and_nan() -> None:
    v = [1, 0, 1, 1, float("nan"), 0]
    c = ["a", "a", "b", "b", "b", "c"]
    iv = mean_with_interval(v, clusters=c)
    assert iv.method == "clustered-miller" and iv.n == 5 and iv.n_nan == 1
    assert iv.n_clusters == 3
    se = clustered_standard_error([1, 0, 1, 1, 0], ["a", "a", "b", "b", "c"])
    half = stats.t.ppf(0.975, 2) * se
    assert (iv.low, iv.high) == pytest.approx((0.6 - half, 0.6 + half))
    boot = mean_with_interval([0.1, 0.5, 0.9, 0.3], method="bootstrap", n_resamples=2000)
    assert boot.method == "bootstrap-BCa" and boot.low <= 0.45 <= boot.high


def test_mean_with_interval_degenerate() -> None:
    empty = mean_with_interval([])
    assert empty.n == 0 and math.isnan(empty.estimate) and math.isnan(empty.low)
    one = mean_with_interval([0.3])
    assert one.estimate == 0.3 and math.isnan(one.low)
    with pytest.raises(ValueError):
        mean_with_interval([1.0], confidence=1.5)
    with pytest.raises(ValueError, match="cluster bootstrap"):
        mean_with_interval([1.0, 0.0], clusters=["a", "a"], method="bootstrap")


def test_wilson_reference_values() -> None:
    # 8/10 at 95%: (0.4902, 0.9433), the textbook Wilson interval
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    lo0, hi0 = wilson_interval(0, 10)
    assert lo0 == 0.0 and hi0 == pytest.approx(0.2775, abs=5e-5)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
       st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]))
def test_hypothesis_wilson_contains_point_estimate(ns: tuple[int, int], conf: float) -> None:
    n, s = ns
    lo, hi = wilson_interval(s, n, conf)
    assert 0.0 <= lo <= s / n + 1e-12
    assert s / n - 1e-12 <= hi <= 1.0


def test_trial_standard_error_terminal_bench_formula() -> None:
    from evalatlas.stats import trial_standard_error

    # tasks 2/5 and 5/5: sqrt(0.4*0.6/4 + 0) / 2
    assert trial_standard_error([2, 5], [5, 5]) == pytest.approx(math.sqrt(0.06) / 2)
    assert math.isnan(trial_standard_error([1, 1], [1, 5]))  # one-trial task: NULL upstream
    assert math.isnan(trial_standard_error([], []))
    with pytest.raises(ValueError):
        trial_standard_error([6], [5])
