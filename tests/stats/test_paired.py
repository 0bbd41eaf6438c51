"""McNemar, paired differences, Holm: hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalatlas.stats import holm_adjust, mcnemar_test, paired_difference


def _pairs(a_only: int, b_only: int, both: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * a_only + [False] * b_only + [True] * both + [False] * neither
    b = [False] * a_only + [True] * b_only + [True] * both + [False] * neither
    return a, b


def test_mcnemar_exact_hand_values() -> None:
    r = mcnemar_test(*_pairs(5, 0, 2, 1))
    assert (r.a_only, r.b_only, r.both, r.neither, r.n) == (5, 0, 2, 1, 8)
    assert r.pvalue == pytest.approx(2 * 0.5**5)  # 0.0625
    # 10 vs 2 discordant: 2 * P(X <= 2 | 12, 1/2) = 2 * (1 + 12 + 66) / 4096
    r2 = mcnemar_test(*_pairs(10, 2, 50, 30))
    assert r2.pvalue == pytest.approx(158 / 4096)
    assert mcnemar_test(*_pairs(2, 10, 0, 0)).pvalue == pytest.approx(158 / 4096)


def test_mcnemar_chi2_and_auto() -> None:
    r = mcnemar_test(*_pairs(10, 2, 5, 5), method="chi2")
    assert r.statistic == pytest.approx(49 / 12)
    assert r.pvalue == pytest.approx(stats.chi2.sf(49 / 12, 1))
    assert mcnemar_test(*_pairs(10, 2, 0, 0), method="auto").method == "exact"
    assert mcnemar_test(*_pairs(20, 10, 0, 0), method="auto").method == "chi2"


def test_mcnemar_no_discordant_pairs_and_errors() -> None:
    r = mcnemar_test(*_pairs(0, 0, 5, 5))
    assert r.pvalue == 1.0
    with pytest.raises(ValueError, match="length"):
        mcnemar_test([True], [True, False])


def test_paired_difference_se_formula() -> None:
    a = np.array([0.5, 0.6, 0.7, 0.9, 0.3, 0.8])
    b = np.array([0.4, 0.6, 0.5, 0.5, 0.2, 0.9])
    r = paired_difference(a, b)
    cov = np.cov(a, b, ddof=1)
    se = math.sqrt((cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]) / a.size)  # statistics.md §3
    assert r.diff == pytest.approx(a.mean() - b.mean())
    assert r.se == pytest.approx(se)
    half = stats.t.ppf(0.975, a.size - 1) * se
    assert (r.low, r.high) == pytest.approx((r.diff - half, r.diff + half))
    assert r.pvalue == pytest.approx(stats.wilcoxon(a - b).pvalue)
    assert r.diff_variance == pytest.approx(np.var(a - b, ddof=1))
    assert paired_difference(a, b, test="t").pvalue == pytest.approx(
        stats.ttest_rel(a, b).pvalue)


def test_permutation_test_exact_small_sample() -> None:
    # 4 positive differences: of the 16 sign patterns only all-+ and all-- are as extreme
    r = paired_difference([1.1, 1.2, 1.4, 1.1], [1.0, 1.0, 1.0, 1.0], test="permutation")
    assert r.pvalue == pytest.approx(2 / 16)


def test_paired_difference_missing_and_degenerate() -> None:
    r = paired_difference([1.0, float("nan"), 0.5, 0.7], [0.5, 0.2, float("nan"), 0.1])
    assert r.n == 2 and r.n_dropped == 2 and r.diff == pytest.approx(0.55)
    same = paired_difference([0.5, 0.6], [0.5, 0.6])
    assert same.diff == 0.0 and same.pvalue == 1.0 and same.se == 0.0
    one = paired_difference([1.0], [0.0])
    assert one.diff == 1.0 and math.isnan(one.pvalue) and math.isnan(one.low)
    none = paired_difference([], [])
    assert none.n == 0 and math.isnan(none.diff)
    with pytest.raises(ValueError, match="length"):
        paired_difference([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="unknown paired test"):
        paired_difference([1.0, 2.0], [0.0, 0.5], test="z")  # type: ignore[arg-type]


def test_holm_hand_example() -> None:
    # sorted: .005*4 = .02, .01*3 = .03, .03*2 = .06, .04*1 = .04 -> running max .06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm_adjust([0.5, float("nan"), 0.4])
    assert out[0] == pytest.approx(0.8) and math.isnan(out[1]) and out[2] == pytest.approx(0.8)
    assert holm_adjust([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1 after max
    assert holm_adjust([]) == []
