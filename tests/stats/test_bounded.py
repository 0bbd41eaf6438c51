"""Range-respecting intervals: values, edge cases, and coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.stats.bounded import (
    bounded_interval_from_totals,
    bounded_mean_interval,
    nonnegative_mean_interval,
    nonnegative_ratio_interval,
    wilson_effective_n,
)
from evalatlas.stats.intervals import wilson_interval


def test_unclustered_binary_is_plain_wilson() -> None:
    iv = bounded_mean_interval([1] * 15 + [0] * 5)
    assert (iv.low, iv.high) == pytest.approx(wilson_interval(15, 20), abs=1e-12)
    assert iv.estimate == 0.75 and iv.n == 20 and iv.n_units == 20


def test_fractional_values_use_effective_n_and_t() -> None:
    # CLT SE^2 of values v: sum((v - mean)^2) / (n (n - 1)); n_eff = p(1-p)/SE^2, z = t_{n-1}
    v = np.array([0.5, 1.0, 0.25, 0.75, 1.0, 0.0, 0.5, 1.0])
    p = v.mean()
    se2 = ((v - p) ** 2).sum() / (8 * 7)
    from scipy.stats import t

    lo, hi = wilson_effective_n(p, p * (1 - p) / se2, float(t.ppf(0.975, 7)))
    iv = bounded_mean_interval(v)
    assert (iv.low, iv.high) == pytest.approx((lo, hi))
    assert 0 < iv.low < p < iv.high < 1


def test_demo_like_pass_at_k_stays_below_one() -> None:
    # 19 tasks at pass@2 = 1 and one at 0: the old t interval gave [0.847, 1.053]
    v = [1.0] * 19 + [0.0]
    iv = bounded_mean_interval(v)
    assert iv.estimate == pytest.approx(0.95)
    assert 0.7 < iv.low < 0.95 < iv.high <= 1.0


def test_boundaries_are_defined_and_not_zero_width() -> None:
    all_pass = bounded_mean_interval([1.0] * 20)
    assert all_pass.high == 1.0 and 0.75 < all_pass.low < 1.0
    all_fail = bounded_mean_interval([0.0] * 60, clusters=np.repeat(np.arange(20), 3))
    # worst-case design effect: n_eff = 20 tasks, not 60 episodes
    assert all_fail.low == 0.0 and all_fail.n_units == 20
    from scipy.stats import t

    assert all_fail.high == pytest.approx(
        wilson_effective_n(0.0, 20.0, float(t.ppf(0.975, 19)))[1])


@pytest.mark.parametrize("values, clusters, reason", [
    ([], None, "no values"),
    ([1.0], None, "one value"),
    ([0.0, 1.0, 1.0], ["t", "t", "t"], "one task"),
    ([0.4, 0.4, 0.4], None, "every value is equal"),
])
def test_undefined_intervals_are_none_with_a_reason(values, clusters, reason) -> None:
    iv = bounded_mean_interval(values, clusters=clusters)
    assert iv.low is None and iv.high is None
    assert reason in (iv.reason or "")


def test_other_ranges_map_back() -> None:
    d = [1, 0, 0, -1, 1, 1, 0, 1, 0, 1]  # paired differences in [-1, 1]
    iv = bounded_mean_interval(d, lower=-1, upper=1)
    assert iv.estimate == pytest.approx(0.4)
    assert -1 <= iv.low < 0.4 < iv.high <= 1


@pytest.mark.parametrize("kwargs, message", [
    ({"confidence": 95}, "confidence"),
    ({"confidence": 0.0}, "confidence"),
    ({"lower": 1.0, "upper": 0.0}, "lower < upper"),
])
def test_argument_validation(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        bounded_mean_interval([0.5, 0.2], **kwargs)


def test_values_outside_the_range_are_an_error() -> None:
    with pytest.raises(ValueError, match=r"\[0.0, 1.0\]"):
        bounded_mean_interval([0.5, 1.2])
    with pytest.raises(ValueError, match="differ in length"):
        bounded_mean_interval([0.5, 1.0], clusters=["a"])
    with pytest.raises(ValueError, match=">= 0"):
        nonnegative_mean_interval([1.0, -0.1])


def test_nonnegative_interval_never_below_zero_for_skewed_costs() -> None:
    # one expensive run among cheap ones: mean - t*SE would be negative
    costs = [0.0] * 9 + [5.0]
    iv = nonnegative_mean_interval(costs)
    assert iv.estimate == pytest.approx(0.5)
    assert iv.low == 0.0 and iv.high > 0.5
    again = nonnegative_mean_interval(costs)
    assert (again.low, again.high) == (iv.low, iv.high)  # fixed seed


def test_nonnegative_clustered_resamples_tasks() -> None:
    rng = np.random.default_rng(1)
    tasks = np.repeat(np.arange(30), 4)
    task_cost = rng.exponential(1.0, 30)
    costs = task_cost[tasks] * rng.uniform(0.9, 1.1, tasks.size)
    clustered = nonnegative_mean_interval(costs, clusters=tasks)
    naive = nonnegative_mean_interval(costs)
    assert clustered.low >= 0 and clustered.n_units == 30
    # attempts of a task are nearly identical: the task bootstrap is about 2x wider
    assert (clustered.high - clustered.low) > 1.5 * (naive.high - naive.low)
    for bad in ([3.0], [2.0, 2.0, 2.0]):
        iv = nonnegative_mean_interval(bad)
        assert iv.low is None and iv.reason


# --------------------------------------------------------------------------- coverage


def _coverage(rng: np.random.Generator, n_tasks: int, attempts: int, centre: float,
              reps: int, icc: float = 0.1) -> float:
    """Share of ``reps`` simulated evaluations whose 95% interval covers the true rate.

    The true rate is drawn uniformly from ``centre +/- 0.02`` per replicate ("near 0.05":
    averaging over a small neighbourhood removes the binomial's sawtooth, as Brown, Cai &
    DasGupta 2001 do). With several attempts, task difficulty varies (Beta, intra-task
    correlation ``icc``) and the interval is the task-clustered one.
    """
    truth = rng.uniform(centre - 0.02, centre + 0.02, reps)
    if attempts > 1:
        s = 1 / icc - 1
        p_task = rng.beta(truth[:, None] * s, (1 - truth[:, None]) * s, (reps, n_tasks))
    else:
        p_task = np.broadcast_to(truth[:, None], (reps, n_tasks))
    outcomes = rng.uniform(size=(reps, n_tasks, attempts)) < p_task[:, :, None]
    clusters = np.repeat(np.arange(n_tasks), attempts) if attempts > 1 else None
    covered = 0
    for r in range(reps):
        iv = bounded_mean_interval(outcomes[r].ravel().astype(float), clusters=clusters)
        covered += iv.low <= truth[r] <= iv.high
    return covered / reps


@pytest.mark.parametrize("n_tasks, attempts", [(20, 1), (50, 1), (200, 1), (20, 5), (100, 3)])
@pytest.mark.parametrize("centre", [0.05, 0.95])
def test_coverage_near_the_boundaries(n_tasks: int, attempts: int, centre: float) -> None:
    rng = np.random.default_rng(20261123 + n_tasks * 10 + attempts + int(centre * 100))
    cov = _coverage(rng, n_tasks, attempts, centre, reps=2500)
    assert 0.93 <= cov <= 0.97, f"coverage {cov:.3f}"


def test_old_symmetric_interval_undercovers_where_the_new_one_does_not() -> None:
    """The t interval it replaces covers well under 93% at 20 tasks near 5%."""
    rng = np.random.default_rng(7)
    truth = rng.uniform(0.03, 0.07, 4000)
    x = rng.binomial(20, truth)
    p = x / 20
    se = np.sqrt(p * (1 - p) / 19)
    from scipy.stats import t

    half = float(t.ppf(0.975, 19)) * se
    old = np.mean((p - half <= truth) & (truth <= p + half))
    assert old < 0.8
    assert math.isfinite(old)


# --- ratio of sums (cost per episode, cost per success) -------------------------------


def test_ratio_interval_is_the_ratio_of_sums_with_the_clustered_delta_method() -> None:
    from evalatlas.stats.bounded import nonnegative_ratio_interval
    from evalatlas.stats.standard_errors import t_quantile

    a = np.array([1.0, 3.0, 2.0, 6.0])  # per-task cost
    b = np.array([1.0, 1.0, 2.0, 2.0])  # per-task successes
    iv = nonnegative_ratio_interval(a, b)
    r = 12.0 / 6.0
    # Cochran's linearised variance, clusters as units: C/(C-1) sum (a - R b)^2 / B^2
    se = math.sqrt(4 / 3 * float(np.sum((a - r * b) ** 2))) / 6.0
    half = t_quantile(0.95, 3) * se / r
    assert iv.estimate == r
    assert (iv.low, iv.high) == pytest.approx((r * math.exp(-half), r * math.exp(half)))
    assert 0 < iv.low < r < iv.high and iv.reason is None and iv.n_units == 4


def test_ratio_interval_covers_skewed_costs() -> None:
    """Coverage by simulation: gamma-distributed task costs, 40 tasks, 95% nominal."""
    from evalatlas.stats.bounded import nonnegative_ratio_interval

    rng = np.random.default_rng(7)
    true_ratio = 2.0 * 1.5 / 1.0  # E[cost] / E[successes]
    hits = 0
    for _ in range(400):
        succ = rng.poisson(1.0, size=40).astype(float)
        cost = rng.gamma(2.0, 1.5, size=40)
        iv = nonnegative_ratio_interval(cost, succ)
        hits += iv.low is not None and iv.low <= true_ratio <= iv.high
    assert 0.90 <= hits / 400 <= 0.99


def test_ratio_interval_undefined_cases_say_why() -> None:
    from evalatlas.stats.bounded import nonnegative_ratio_interval

    never = nonnegative_ratio_interval([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    assert never.estimate == math.inf and never.low is None and "no success" in never.reason
    same = nonnegative_ratio_interval([2.0, 4.0], [1.0, 2.0])
    assert same.estimate == 2.0 and same.low is None and "no spread" in same.reason
    one = nonnegative_ratio_interval([2.0], [1.0])
    assert one.low is None and "one task" in one.reason
    free = nonnegative_ratio_interval([0.0, 0.0], [1.0, 2.0])
    assert free.estimate == 0.0 and free.low is None
    assert nonnegative_ratio_interval([], []).reason == "no values"
    with pytest.raises(ValueError, match=">= 0"):
        nonnegative_ratio_interval([-1.0, 1.0], [1.0, 1.0])


def test_grouped_forms_equal_one_call_per_group() -> None:
    """bounded_mean_intervals (values with multiplicities), bounded_intervals_from_totals
    and nonnegative_ratio_intervals of many groups at once == one call per group on that
    group's expanded values (issue 23: a summary's 2,000 groups in one pass)."""
    from evalatlas.stats.bounded import (
        bounded_intervals_from_totals,
        bounded_mean_intervals,
        nonnegative_ratio_intervals,
    )

    rng = np.random.default_rng(3)
    groups = rng.integers(0, 9, 400)
    # group 7 binary, group 8 all equal, group 9 one value; values on a grid; NaN dropped
    values = rng.choice([0.0, 0.25, 0.5, 1.0, np.nan], 400)
    values[groups == 7] = rng.choice([0.0, 1.0], int((groups == 7).sum()))
    values[groups == 8] = 0.5
    groups[0], values[0] = 9, 0.5
    weights = rng.integers(1, 4, 400)
    got = bounded_mean_intervals(values, groups=groups, n_groups=10, weights=weights,
                                 confidence=0.9)
    for g in range(10):
        mine = groups == g
        ref = bounded_mean_interval(np.repeat(values[mine], weights[mine]), confidence=0.9)
        assert got[g].reason == ref.reason and got[g].n == ref.n, g
        for a, b in ((got[g].estimate, ref.estimate), (got[g].low, ref.low),
                     (got[g].high, ref.high)):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), g
    counts = rng.integers(0, 6, 400).astype(float)
    sums = np.minimum(counts, rng.integers(0, 6, 400))
    for binary in (True, False):
        got = bounded_intervals_from_totals(counts, sums, sums, groups=groups, n_groups=10,
                                            confidence=0.9, binary=binary)
        for g in range(10):
            ref = bounded_interval_from_totals(counts[groups == g], sums[groups == g],
                                               sums[groups == g], confidence=0.9,
                                               binary=binary)
            assert (got[g].reason, got[g].n, got[g].n_units) == (ref.reason, ref.n,
                                                                ref.n_units)
            for a, b in ((got[g].estimate, ref.estimate), (got[g].low, ref.low),
                         (got[g].high, ref.high)):
                assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), g
    cost = rng.gamma(2.0, 1.0, 400)
    cost[groups == 3] = 0.0
    got = nonnegative_ratio_intervals(cost, sums, groups=groups, n_groups=10)
    for g in range(10):
        ref = nonnegative_ratio_interval(cost[groups == g], sums[groups == g])
        assert (got[g].reason, got[g].n, got[g].n_units) == (ref.reason, ref.n, ref.n_units)
        for a, b in ((got[g].estimate, ref.estimate), (got[g].low, ref.low),
                     (got[g].high, ref.high)):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), g


def test_cluster_weights_equal_the_clusters_repeated() -> None:
    """weights=k stands for k clusters with those totals (issue 23: a summary's 10M
    cells of 0/1 outcomes as a table of distinct (attempts, successes) per group):
    clustered_mean_intervals and bounded_intervals_and_clustered_from_totals give the
    numbers of the clusters written out, zero-count and zero-weight clusters ignored."""
    from evalatlas.stats.bounded import bounded_intervals_and_clustered_from_totals
    from evalatlas.stats.standard_errors import clustered_mean_intervals

    rng = np.random.default_rng(11)
    groups = rng.integers(0, 6, 300)
    counts = rng.integers(0, 5, 300).astype(float)
    sums = np.minimum(counts, rng.integers(0, 5, 300)).astype(float)
    weights = rng.integers(0, 4, 300)
    groups[groups == 5] = 4
    # group 5: three clusters, every value 1 (all equal at the bound)
    groups[:3], counts[:3], sums[:3], weights[:3] = 5, [2.0, 3.0, 1.0], [2.0, 3.0, 1.0], 1
    rep = np.repeat(np.arange(300), weights)
    ref = clustered_mean_intervals(counts[rep], sums[rep], sums[rep], groups=groups[rep],
                                   n_groups=7, confidence=0.9)
    got = clustered_mean_intervals(counts, sums, sums, groups=groups, n_groups=7,
                                   confidence=0.9, weights=weights)
    for field in ("estimate", "low", "high", "se"):
        np.testing.assert_allclose(getattr(got, field), getattr(ref, field), rtol=1e-12)
    assert list(got.n) == list(ref.n) and list(got.n_clusters) == list(ref.n_clusters)
    for binary in (True, False):
        ref_b, ref_c = bounded_intervals_and_clustered_from_totals(
            counts[rep], sums[rep], sums[rep], groups=groups[rep], n_groups=7,
            confidence=0.9, binary=binary)
        got_b, got_c = bounded_intervals_and_clustered_from_totals(
            counts, sums, sums, groups=groups, n_groups=7, confidence=0.9, binary=binary,
            weights=weights)
        np.testing.assert_allclose(got_c.se, ref_c.se, rtol=1e-12)
        for a, b in zip(got_b, ref_b, strict=True):
            assert (a.reason, a.n, a.n_units) == (b.reason, b.n, b.n_units)
            for x, y in ((a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)):
                assert (x is None and y is None) or x == pytest.approx(y, rel=1e-12)
    assert got.n_clusters[6] == 0 and np.isnan(got.se[6])  # a group without clusters
    with pytest.raises(ValueError, match="weights"):
        clustered_mean_intervals(counts, sums, sums, weights=weights[:5])


def _same_bounded(got: list, ref: list) -> None:
    for a, b in zip(got, ref, strict=True):
        assert (a.reason, a.n, a.n_units, a.method) == (b.reason, b.n, b.n_units, b.method)
        for x, y in ((a.estimate, b.estimate), (a.low, b.low), (a.high, b.high)):
            assert (x is None and y is None) or x == pytest.approx(y, rel=1e-12)


def test_group_sums_give_the_numbers_of_the_clusters() -> None:
    """issue 23: a summary's cells stay in the database, which hands out per-group sums
    (ClusterSums, RatioSums) instead; from those sums the intervals are the ones of the
    clusters themselves: on any range (the sums rescaled, not the clusters), with the
    all-equal and one-cluster reasons, and a ratio that is the same in every task still
    says so (the spread is summed in two passes, no cancellation)."""
    from evalatlas.stats.bounded import (
        bounded_intervals_and_clustered_from_sums,
        bounded_intervals_and_clustered_from_totals,
        nonnegative_ratio_intervals,
        nonnegative_ratio_intervals_from_sums,
        ratio_sums,
    )
    from evalatlas.stats.standard_errors import cluster_sums

    rng = np.random.default_rng(23)
    groups = rng.integers(0, 5, 400)
    counts = rng.integers(0, 6, 400).astype(float)
    values = rng.uniform(-2.0, 3.0, (400, 6)) * (np.arange(6) < counts[:, None])
    sums, squares = values.sum(axis=1), (values * values).sum(axis=1)
    # group 5: every value 3.0 (all equal); group 6: one cluster; group 7: none
    extra = np.array([5, 5, 5, 6])
    groups = np.concatenate((groups, extra))
    counts = np.concatenate((counts, [2.0, 1.0, 4.0, 3.0]))
    sums = np.concatenate((sums, [6.0, 3.0, 12.0, 1.5]))
    squares = np.concatenate((squares, [18.0, 9.0, 36.0, 1.0]))
    summed = cluster_sums(counts, sums, squares, groups=groups, n_groups=8)
    for binary in (True, False):
        ref_b, ref_c = bounded_intervals_and_clustered_from_totals(
            counts, sums, squares, groups=groups, n_groups=8, lower=-2.0, upper=3.0,
            binary=binary)
        got_b, got_c = bounded_intervals_and_clustered_from_sums(
            summed, lower=-2.0, upper=3.0, binary=binary)
        _same_bounded(got_b, ref_b)
        np.testing.assert_allclose(got_c.se, ref_c.se, rtol=1e-9)
    assert got_b[5].reason == "every value is equal: no spread to estimate"
    assert got_b[6].reason.startswith("one task") and got_b[7].reason == "no values"
    # ratios: per group as the one-group function gives them; group 3 every task 2.5/1
    a = rng.gamma(2.0, 1.0, 400)
    b = rng.integers(0, 4, 400).astype(float)
    g = rng.integers(0, 4, 400)
    a[g == 3] = 2.5 * b[g == 3] + 0.0
    got = nonnegative_ratio_intervals_from_sums(ratio_sums(a, b, groups=g, n_groups=5))
    ref = [nonnegative_ratio_intervals(a[g == i], b[g == i])[0] for i in range(5)]
    _same_bounded(got, ref)
    assert got[3].reason == "every task has the same ratio: no spread to estimate"
    assert got[0].low is not None and got[4].reason == "no values"
