"""One-sided paired tests for a drop and their power (stats/noninferiority.py), checked
against scipy, brute-force enumeration and the docstrings' worked examples."""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

from evalatlas.stats.noninferiority import (
    detectable_drop,
    mcnemar_drop_power,
    mcnemar_drop_pvalue,
    sign_flip_drop_pvalue,
    tasks_for_drop,
    uniform_drop_variance,
)


@pytest.mark.parametrize(("b", "c"), [(9, 1), (0, 5), (5, 5), (30, 12), (1, 0), (120, 90)])
def test_mcnemar_one_sided_is_the_binomial_upper_tail(b: int, c: int) -> None:
    expected = stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    assert mcnemar_drop_pvalue(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_worked_example_and_edges() -> None:
    assert mcnemar_drop_pvalue(9, 1) == 11 / 1024
    assert mcnemar_drop_pvalue(0, 0) == 1.0
    with pytest.raises(ValueError, match="discordant counts"):
        mcnemar_drop_pvalue(-1, 3)


def test_sign_flip_equals_mcnemar_on_binary_single_attempts() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        base = rng.integers(0, 2, 40)
        cand = rng.integers(0, 2, 40)
        b = int(np.sum((base == 1) & (cand == 0)))
        c = int(np.sum((base == 0) & (cand == 1)))
        p = sign_flip_drop_pvalue(cand - base)
        if b + c <= 16:  # exact enumeration: identical
            assert p == pytest.approx(mcnemar_drop_pvalue(b, c), rel=1e-12)
        else:  # Monte Carlo with 9,999 flips: within 4 MC standard errors
            ref = mcnemar_drop_pvalue(b, c)
            assert abs(p - ref) < 4 * math.sqrt(ref * (1 - ref) / 9_999) + 1e-4


def test_sign_flip_exact_against_brute_force() -> None:
    d = np.array([-0.5, -1 / 3, 0.2, -0.8, 0.0, -0.25, 0.6, -0.1])
    for margin in (0.0, 0.05):
        x = d + margin
        nz = x[np.abs(x) > 1e-12]  # a zero's sign moves nothing
        flips = [np.dot(s, np.abs(nz)) for s in itertools.product((-1, 1), repeat=nz.size)]
        expected = np.mean(np.array(flips) <= nz.sum() + 1e-12)
        assert sign_flip_drop_pvalue(d, margin=margin) == pytest.approx(expected, rel=1e-12)


def test_sign_flip_monte_carlo_matches_scipy_permutation_test() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(-0.05, 0.3, 80).clip(-1, 1)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                 alternative="less", n_resamples=99_999,
                                 random_state=np.random.default_rng(1)).pvalue
    p = sign_flip_drop_pvalue(d)
    assert abs(p - ref) < 4 * math.sqrt(ref * (1 - ref) / 9_999) + 1e-3
    # deterministic: a fixed seed gives the same p-value
    assert sign_flip_drop_pvalue(d) == p
    # the margin shifts the null: this drop is "at most 30 points worse"
    assert p < sign_flip_drop_pvalue(d, margin=0.10) < sign_flip_drop_pvalue(d, margin=0.3)
    assert sign_flip_drop_pvalue(d, margin=0.3) > 0.99


def test_sign_flip_arguments() -> None:
    assert sign_flip_drop_pvalue(np.zeros(30)) == 1.0
    with pytest.raises(ValueError, match="NaN"):
        sign_flip_drop_pvalue([0.1, math.nan])
    with pytest.raises(ValueError, match="margin"):
        sign_flip_drop_pvalue([0.1, -0.2], margin=-0.1)


def test_detectable_drop_worked_examples() -> None:
    # docstring: n = 100, Var(d) = 0.1: 10 delta = 1.645 sqrt(0.1 + delta^2) + 0.842 sqrt(0.1)
    delta = detectable_drop(100, variance=0.1)
    za, zb = NormalDist().inv_cdf(0.95), NormalDist().inv_cdf(0.8)
    assert 10 * delta == pytest.approx(za * math.sqrt(0.1 + delta**2) + zb * math.sqrt(0.1))
    assert delta == pytest.approx(0.0803, abs=5e-5)
    # docstring: Var(d) = 0.1, drop 0.05 -> 252 tasks
    assert tasks_for_drop(0.05, variance=0.1) == 252
    # inverse of each other
    assert detectable_drop(252, variance=0.1) <= 0.05 < detectable_drop(251, variance=0.1)
    # a margin adds to the drop
    assert detectable_drop(100, variance=0.1, margin=0.02) == pytest.approx(0.02 + delta,
                                                                            abs=0.002)


def test_mcnemar_power_by_enumeration() -> None:
    """Exact power against enumerating every (baseline-only, candidate-only) count of 25
    tasks: a task is baseline-only with (psi + delta)/2, candidate-only with (psi -
    delta)/2."""
    n, psi, delta = 25, 0.4, 0.2
    pb, pc = (psi + delta) / 2, (psi - delta) / 2
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            prob = (math.comb(n, b) * math.comb(n - b, c) * pb**b * pc**c
                    * (1 - psi) ** (n - b - c))
            total += prob * (mcnemar_drop_pvalue(b, c) < 0.05)
    assert mcnemar_drop_power(n, psi, delta) == pytest.approx(total, rel=1e-9)


def test_mcnemar_power_with_the_baseline_rate() -> None:
    """A uniform drop from p = 0.6 by 0.25 makes a task discordant with probability
    2 (0.6)(0.4) + 0.25 (2 (0.6) - 1) = 0.53 (not the 0.48 seen with no drop)."""
    assert mcnemar_drop_power(80, 0.48, 0.25, baseline_rate=0.6) == pytest.approx(
        mcnemar_drop_power(80, 0.53, 0.25), rel=1e-12)
    assert mcnemar_drop_power(80, 0.48, 0.25, baseline_rate=0.6) < mcnemar_drop_power(
        80, 0.48, 0.25)


def test_detectable_drop_discordance_uses_exact_mcnemar_power() -> None:
    psi, n = 0.2, 150
    delta = detectable_drop(n, discordance=psi)
    assert mcnemar_drop_power(n, psi, delta) == pytest.approx(0.8, abs=1e-6)
    # more than Connor's normal formula, which ignores the exact test's discreteness
    za, zb = NormalDist().inv_cdf(0.95), NormalDist().inv_cdf(0.8)
    connor = (za * math.sqrt(psi) + zb * math.sqrt(psi - delta**2)) ** 2 / delta**2
    assert connor < n
    need = tasks_for_drop(delta, discordance=psi)
    assert mcnemar_drop_power(need, psi, delta) >= 0.8 > mcnemar_drop_power(need - 1, psi,
                                                                             delta)


def test_detectable_drop_limits() -> None:
    assert detectable_drop(0, variance=0.1) is None
    assert detectable_drop(2, variance=0.25) is None  # nothing up to 100 points
    # no spread observed: the floor delta (1 - delta) / attempts applies, not zero
    assert detectable_drop(400, variance=0.0) > 0.01
    assert detectable_drop(100, variance=4.0, limit=None) > 0.5  # unbounded rewards
    with pytest.raises(ValueError, match="alpha"):
        detectable_drop(10, variance=0.1, alpha=5)


def test_uniform_drop_variance_hand_example() -> None:
    # docstring: two tasks seen 4 times at 0.5 and 1.0; drop 0.1, 2 attempts a side
    var, eff = uniform_drop_variance([0.5, 1.0], [4, 4], 0.1, 2)
    u = 0.25 * 4 / 3
    within = ((2 * u - 0.01) + (0.1 - 0.01)) / 2 / 2
    assert var == pytest.approx(within) and within == pytest.approx(0.186667, abs=1e-6)
    assert eff == pytest.approx(0.1)
    # a task at 0 cannot drop: the mean drop shrinks and the difference varies by task
    var0, eff0 = uniform_drop_variance([0.0, 0.5], [3, 3], 0.2, 1)
    assert eff0 == pytest.approx(0.1)
    # task 1 stays at 0 (no variance); task 2: u = 0.25 * 3/2, 2u - 0.04 = 0.71; between
    # tasks var([0, -0.2]) = 0.01
    assert var0 == pytest.approx((0.0 + 0.71) / 2 + 0.01)
    with pytest.raises(ValueError, match="drop"):
        uniform_drop_variance([0.5], [2], 1.5, 1)
