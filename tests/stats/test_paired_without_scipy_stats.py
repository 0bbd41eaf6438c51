"""The p-values computed without scipy.stats equal scipy's (compare's hot path)."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest
from scipy import stats

from evalatlas.stats.paired import (
    _binomial_half_two_sided,
    _wilcoxon_pvalue,
    mcnemar_test,
    paired_difference,
)


@pytest.mark.parametrize("seed", range(6))
def test_wilcoxon_large_samples_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = [51, 60, 200, 1000, 5000, 300][seed]
    # per-task success rates of 3 attempts: many ties and zeros, as in compare
    d = (rng.integers(0, 4, n) - rng.integers(0, 4, n)) / 3.0
    if seed == 5:
        d = rng.normal(0.1, 1, n)  # no ties
    assert _wilcoxon_pvalue(d) == pytest.approx(
        stats.wilcoxon(d, zero_method="wilcox").pvalue, rel=1e-9)


def test_exact_mcnemar_and_chi2_match_scipy() -> None:
    for n in (1, 2, 5, 24, 25, 100, 1999):
        for k in sorted({0, 1, n // 3, n // 2, n}):
            assert _binomial_half_two_sided(k, n) == pytest.approx(
                stats.binomtest(k, n, 0.5).pvalue, rel=1e-9), (k, n)
    a = np.array([1, 1, 0, 0, 1, 0, 1, 1] * 20, dtype=bool)
    b = np.array([0, 1, 1, 0, 0, 0, 1, 0] * 20, dtype=bool)
    res = mcnemar_test(a, b, method="chi2")
    assert res.pvalue == pytest.approx(stats.chi2.sf(res.statistic, 1), rel=1e-12)


def _exact_big_integer(k: int, n: int) -> float:
    """The previous definition: the tail summed exactly in Python integers."""
    k = min(k, n - k)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def test_floating_point_mcnemar_equals_the_exact_integer_sum() -> None:
    """Issue #28: the float tail equals the big-integer one to 1e-12 on small inputs."""
    worst = 0.0
    for n in [*range(1, 161), 250, 499, 1000, 2001]:
        for k in range(0, n + 1, 1 if n <= 160 else 7):
            worst = max(worst, abs(_binomial_half_two_sided(k, n) - _exact_big_integer(k, n)))
    assert worst <= 1e-12, worst
    assert _binomial_half_two_sided(5, 12) == pytest.approx(2 * 1586 / 4096, abs=1e-14)  # hand sum


def test_mcnemar_on_50000_pairs_is_fast_and_matches_scipy() -> None:
    """compare's hot path (issue #28: 90 s per pair of 50,000 tasks before)."""
    rng = np.random.default_rng(7)
    a = rng.random(50_000) < 0.50
    b = rng.random(50_000) < 0.51
    t0 = time.perf_counter()
    res = mcnemar_test(a, b)
    elapsed = time.perf_counter() - t0
    disc = res.a_only + res.b_only
    assert disc > 20_000
    assert res.pvalue == pytest.approx(stats.binomtest(res.a_only, disc, 0.5).pvalue,
                                       rel=1e-9)
    assert elapsed < 1.0, elapsed  # ~5 ms; generous for a loaded machine
    for n, k in ((50_000, 24_500), (20_001, 9_500), (100_000, 49_000)):
        assert _binomial_half_two_sided(k, n) == pytest.approx(
            stats.binomtest(k, n, 0.5).pvalue, rel=1e-9)


def test_compare_path_does_not_import_scipy_stats() -> None:
    code = ("import sys, numpy as np\nfrom evalatlas.stats.paired import paired_difference, "
            "mcnemar_test\nrng = np.random.default_rng(0)\n"
            "a, b = rng.integers(0, 4, 5000) / 3, rng.integers(0, 4, 5000) / 3\n"
            "paired_difference(a, b)\nmcnemar_test(a > 0.5, b > 0.5)\n"
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_paired_difference_interval_unchanged() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(80), rng.random(80)
    res = paired_difference(a, b)
    d = a - b
    half = stats.t.ppf(0.975, 79) * d.std(ddof=1) / np.sqrt(80)
    assert (res.low, res.high) == (pytest.approx(d.mean() - half, rel=1e-9),
                                   pytest.approx(d.mean() + half, rel=1e-9))
    assert res.pvalue == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-9)
