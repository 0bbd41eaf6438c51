"""Paired comparison of two agents (or tiers) on the tasks both ran, and Holm correction.

Sources: ``shared/reference/statistics.md`` §3 (paired SE, McNemar as used in SWE-bench
issue #621) and §9 (users asked Inspect AI and lm-evaluation-harness for paired deltas,
McNemar and Holm; lm-eval's unpaired z-test on paired data is the quirk avoided here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalatlas.stats.standard_errors import t_quantile
from evalatlas.stats.validation import check_confidence

PairedTest = Literal["wilcoxon", "permutation", "t"]


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on paired pass/fail outcomes.

    ``a_only``: tasks A passed and B failed; ``b_only``: the reverse; ``n``: pairs used.
    """

    a_only: int
    b_only: int
    both: int
    neither: int
    n: int
    statistic: float
    pvalue: float
    method: str


def mcnemar_test(
    a_success: Sequence[bool] | np.ndarray,
    b_success: Sequence[bool] | np.ndarray,
    *,
    method: Literal["exact", "chi2", "auto"] = "exact",
) -> McNemarResult:
    """McNemar's test: do A and B differ on the tasks where exactly one passes?

    ``exact`` (default): two-sided exact binomial test of ``a_only`` out of the
    ``a_only + b_only`` discordant pairs at p = 1/2 (``p = min(1, 2 P[X <= min])``);
    valid for any count and the right choice when discordant pairs are few.
    ``chi2``: ``(|b - c| - 1)^2 / (b + c)`` with continuity correction, chi-square 1 df.
    ``auto``: exact below 25 discordant pairs, else chi2. No discordant pair: p = 1.
    """
    if method not in ("exact", "chi2", "auto"):
        raise ValueError(f"unknown McNemar method {method!r}; use exact, chi2 or auto")
    a = np.asarray(a_success, dtype=bool).ravel()
    b = np.asarray(b_success, dtype=bool).ravel()
    if a.size != b.size:
        raise ValueError(f"paired outcomes differ in length: {a.size} vs {b.size}")
    a_only = int(np.sum(a & ~b))
    b_only = int(np.sum(~a & b))
    both = int(np.sum(a & b))
    neither = int(np.sum(~a & ~b))
    disc = a_only + b_only
    if method == "auto":
        method = "exact" if disc < 25 else "chi2"
    if disc == 0:
        return McNemarResult(a_only, b_only, both, neither, int(a.size), 0.0, 1.0, method)
    if method == "exact":
        p = _binomial_half_two_sided(min(a_only, b_only), disc)
        stat = float(min(a_only, b_only))
    elif method == "chi2":
        stat = (abs(a_only - b_only) - 1) ** 2 / disc
        p = math.erfc(math.sqrt(stat / 2))  # chi-square 1 df survival function
    else:
        raise ValueError(f"unknown McNemar method {method!r}")
    return McNemarResult(a_only, b_only, both, neither, int(a.size), stat, min(1.0, p), method)


@dataclass(frozen=True)
class PairedDifference:
    """Mean of A, mean of B, their paired difference A - B with interval and test."""

    mean_a: float
    mean_b: float
    diff: float
    se: float
    low: float
    high: float
    pvalue: float
    test: str
    n: int
    n_dropped: int
    confidence: float
    diff_variance: float


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    test: PairedTest = "wilcoxon",
    n_resamples: int = 9_999,
    seed: int = 0,
) -> PairedDifference:
    """Paired difference ``d_i = a_i - b_i`` on shared tasks (``a[i]`` and ``b[i]`` same task).

    ``diff = mean(d)``; ``se = sd(d) / sqrt(n)`` (sample sd), which equals
    ``sqrt((Var(a) + Var(b) - 2 Cov(a, b)) / n)`` of ``statistics.md`` §3; the interval is
    ``diff +/- t_{n-1} se``. The p-value comes from ``test``:

    - ``wilcoxon`` (default): Wilcoxon signed-rank (``scipy.stats.wilcoxon``, zero
      differences dropped, Wilcoxon's convention); all differences zero gives p = 1;
    - ``permutation``: sign-flip permutation test of the mean difference
      (``scipy.stats.permutation_test``, ``permutation_type="samples"``, fixed seed);
    - ``t``: paired t-test.

    Pairs where either value is NaN are dropped and counted in ``n_dropped``. Fewer than
    2 pairs give NaN se, interval and p-value.
    """
    check_confidence(confidence)
    if test not in ("wilcoxon", "permutation", "t"):
        raise ValueError(f"unknown paired test {test!r}; use wilcoxon, permutation or t")
    av = np.asarray(a, dtype=float).ravel()
    bv = np.asarray(b, dtype=float).ravel()
    if av.size != bv.size:
        raise ValueError(f"paired samples differ in length: {av.size} vs {bv.size}")
    keep = ~(np.isnan(av) | np.isnan(bv))
    av, bv = av[keep], bv[keep]
    n = int(av.size)
    dropped = int(keep.size - n)
    d = av - bv
    nan = math.nan
    if n == 0:
        return PairedDifference(nan, nan, nan, nan, nan, nan, nan, test, 0, dropped,
                                confidence, nan)
    diff = float(d.mean())
    if n < 2:
        return PairedDifference(float(av.mean()), float(bv.mean()), diff, nan, nan, nan, nan,
                                test, n, dropped, confidence, nan)
    var_d = float(d.var(ddof=1))
    se = math.sqrt(var_d / n)
    half = t_quantile(confidence, n - 1) * se
    if np.all(d == 0):
        p = 1.0
    elif test == "wilcoxon":
        p = _wilcoxon_pvalue(d)
    elif test == "permutation":
        from scipy import stats  # here: scipy.stats costs ~1 s of CLI start-up

        res = stats.permutation_test(
            (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
            vectorized=True, n_resamples=n_resamples, alternative="two-sided",
            random_state=np.random.default_rng(seed),
        )
        p = float(res.pvalue)
    elif test == "t":
        from scipy import stats

        p = float(stats.ttest_rel(av, bv).pvalue) if se > 0 else nan
    else:
        raise ValueError(f"unknown paired test {test!r}; use wilcoxon, permutation or t")
    return PairedDifference(float(av.mean()), float(bv.mean()), diff, se, diff - half,
                            diff + half, p, test, n, dropped, confidence, var_d)


def _binomial_half_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p-value of ``k`` successes in ``n`` at p = 1/2:
    ``min(1, 2 P[X <= m])`` with ``m = min(k, n - k)`` (what ``scipy.stats.binomtest``
    gives for p = 1/2, whose distribution is symmetric; tested).

    Computed in floating point: the tail's largest term ``P[X = m]`` by Loader's
    saddle-point formula (:func:`_binomial_half_pmf`, accurate to a few ulps for any
    ``n``), the smaller ones by the ratio ``P[X = i - 1] / P[X = i] = i / (n - i + 1)``
    (a cumulative product; terms that underflow are below any double anyway). Equal to
    the exact big-integer sum it replaces to 1e-12 and faster by orders of magnitude:
    that sum took 90 s for one pair of 50,000 tasks (issue #28).
    """
    m = min(k, n - k)
    if 2 * m >= n - 1:
        # P[X <= m] >= 1/2 once m reaches the middle: the two tails cover everything
        return 1.0
    top = _binomial_half_pmf(m, n)
    i = np.arange(m, 0, -1, dtype=float)
    rest = float(np.sum(np.cumprod(i / (n - i + 1.0)))) if m else 0.0
    return min(1.0, 2.0 * top * (1.0 + rest))


_STIRLERR_SMALL = [math.log(math.factorial(j)) - (j + 0.5) * math.log(j) + j
                   - 0.5 * math.log(2 * math.pi) for j in range(1, 16)]


def _stirlerr(n: int) -> float:
    """``log(n!) - log(sqrt(2 pi n) (n / e)^n)``, the error of Stirling's formula
    (Loader 2000, "Fast and accurate computation of binomial probabilities"; R's
    ``stirlerr``): from ``log(n!)`` up to 15, else the asymptotic series."""
    if n <= 15:
        return _STIRLERR_SMALL[n - 1]
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    nn = float(n) * n
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _bd0(x: float, mu: float) -> float:
    """``x log(x / mu) + mu - x`` without cancellation when ``x`` is near ``mu``
    (Loader 2000; R's ``bd0``): a series in ``v = (x - mu) / (x + mu)``."""
    if abs(x - mu) < 0.1 * (x + mu):
        v = (x - mu) / (x + mu)
        s = (x - mu) * v
        ej = 2 * x * v
        v *= v
        for j in range(1, 1000):
            ej *= v
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * math.log(x / mu) + mu - x


def _binomial_half_pmf(x: int, n: int) -> float:
    """``P[X = x]`` for ``X ~ Binomial(n, 1/2)``: Loader's saddle-point formula
    ``exp(stirlerr(n) - stirlerr(x) - stirlerr(n - x) - bd0(x, n/2) - bd0(n - x, n/2))
    * sqrt(n / (2 pi x (n - x)))``, relative error of a few ulps for every ``n``."""
    if x == 0 or x == n:
        return math.ldexp(1.0, -n)  # 2^-n, exact (0 below the smallest double)
    half = n / 2.0
    lc = (_stirlerr(n) - _stirlerr(x) - _stirlerr(n - x) - _bd0(float(x), half)
          - _bd0(float(n - x), half))
    lf = math.log(2 * math.pi) + math.log(x) + math.log1p(-x / n)
    return math.exp(lc - 0.5 * lf)


def _wilcoxon_pvalue(d: np.ndarray) -> float:
    """Two-sided p-value of ``scipy.stats.wilcoxon(d, zero_method="wilcox")``.

    More than 50 differences (scipy's switch to the normal approximation): zeros dropped,
    average ranks of ``|d|``, ``z = (R+ - n(n+1)/4) / sqrt((n(n+1)(2n+1) - sum(t^3 - t)/2)
    / 24)`` with tie sizes ``t``, no continuity correction, ``p = erfc(|z| / sqrt 2)``:
    computed here because importing ``scipy.stats`` costs about a second of CLI time
    (``compare`` of 5,000 tasks). 50 or fewer: scipy's exact/permutation paths.
    Tested against scipy.
    """
    if d.size <= 50:
        from scipy import stats

        return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)
    nz = d[d != 0]
    n = nz.size
    if n == 0:
        return math.nan
    _, inverse, counts = np.unique(np.abs(nz), return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    avg_rank = upper - (counts - 1) / 2.0  # mean of ranks upper-count+1 .. upper
    r_plus = float(avg_rank[inverse][nz > 0].sum())
    mean = n * (n + 1) / 4.0
    tie = float(np.sum(counts.astype(float) ** 3 - counts))
    se = math.sqrt((n * (n + 1) * (2 * n + 1) - tie / 2) / 24)
    if se == 0:
        return math.nan
    z = (r_plus - mean) / se
    return math.erfc(abs(z) / math.sqrt(2))


def holm_adjust(pvalues: Sequence[float] | np.ndarray) -> list[float]:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the input order.

    Sort ascending, ``p_(i) * (m - i + 1)``, running maximum, capped at 1. NaN p-values
    stay NaN and do not count in ``m``. Controls the family-wise error rate under any
    dependence, so it is safe for all-pairs comparisons that share agents.
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    bad = p[~np.isnan(p) & ((p < 0) | (p > 1))]
    if bad.size:
        raise ValueError(f"p-values must lie in [0, 1] (NaN for missing); got {bad[0]:g}")
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = idx.size
    if m == 0:
        return out.tolist()
    order = idx[np.argsort(p[idx], kind="stable")]
    adjusted = p[order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(adjusted), 1.0)
    out[order] = adjusted
    return out.tolist()
