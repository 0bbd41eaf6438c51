"""Intervals that stay inside the range of their quantity.

A symmetric ``mean +/- t * SE`` interval prints ``pass@2 [0.893, 1.007]`` for a rate near
1 and negative costs for skewed spend. The two functions here never leave the range:

- :func:`bounded_mean_interval` for means of values in a known range ``[lower, upper]``
  (success rates, pass@k, pass^k, mean reward in [0, 1], implementation rate, composite,
  paired differences in [-1, 1]): the **Wilson score interval on an effective sample
  size** ``n_eff = p(1 - p) / SE^2`` with ``SE`` the clustered (Miller 2024) or CLT
  standard error of the rescaled mean ``p``, and ``z`` replaced by the ``t`` quantile with
  ``C - 1`` degrees of freedom (``C`` independent units: tasks). This is the design-effect
  ("Kish effective n") adjustment of Korn & Graubard (1998, Survey Methodology 24:193) and
  Dean & Pagano (2015, J. Survey Stat. Methodol. 3:484), who found the Wilson interval with
  an effective n among the best-covering intervals for clustered proportions. For binary
  values it reduces to Wilson (1927) when there is no clustering. It is a score-type
  interval, so it stays defined at 0% and 100%: when every value sits at a bound, ``n_eff``
  is the number of independent units ``C`` (the worst-case design effect, every attempt
  of a task identical), which is conservative.
- :func:`nonnegative_mean_interval` for means of quantities that are >= 0 (cost, tokens,
  times): the **percentile bootstrap** (Efron & Tibshirani 1993, ch. 13), resampling
  whole tasks (clusters) when given. Every resampled mean of non-negative values is
  non-negative, so the interval is too.

Where no honest interval exists (fewer than two independent units, every value equal
inside the range, no values) ``low``/``high`` are None and ``reason`` says why; never a
zero-width interval. Coverage is checked by simulation in ``tests/stats/test_bounded.py``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalatlas.stats.standard_errors import (
    _cluster_labels,
    clustered_mean_interval,
    clustered_standard_error,
    standard_error_clt,
    t_quantile,
)
from evalatlas.stats.validation import check_confidence


@dataclass(frozen=True)
class BoundedInterval:
    """A point estimate and its interval; ``low``/``high`` None with ``reason`` when undefined.

    ``n`` values were used (from ``n_units`` independent units: tasks when clustered).
    """

    estimate: float | None
    low: float | None
    high: float | None
    method: str
    confidence: float
    n: int
    n_units: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wilson_effective_n(p: float, n_eff: float, z: float) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed on ``n_eff`` (possibly
    fractional) trials: ``(p + z^2/2n +/- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``.

    Always inside [0, 1]; exactly 0 (1) at the lower (upper) end when ``p`` is 0 (1).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a proportion must be in [0, 1], got {p}")
    if not n_eff > 0:
        raise ValueError(f"the effective sample size must be > 0, got {n_eff}")
    denom = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / denom
    half = z * math.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff)) / denom
    low = 0.0 if p == 0.0 else min(p, max(0.0, centre - half))
    high = 1.0 if p == 1.0 else max(p, min(1.0, centre + half))
    return low, high


def _prepare(values: Any, clusters: Any) -> tuple[np.ndarray, np.ndarray | None, int]:
    raw = np.asarray(values, dtype=float).ravel()
    labels = None
    if clusters is not None:
        labels = _cluster_labels(clusters)
        if labels.size != raw.size:
            raise ValueError(f"values ({raw.size}) and clusters ({labels.size}) differ in length")
    keep = ~np.isnan(raw)
    arr = raw[keep]
    if labels is not None:
        labels = labels[keep]
    units = int(np.unique(labels).size) if labels is not None else int(arr.size)
    return arr, labels, units


def bounded_mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
) -> BoundedInterval:
    """Mean of ``values`` (each in ``[lower, upper]``) with an interval inside that range.

    Method (module docstring): rescale to ``q = (v - lower) / (upper - lower)``, mean
    ``p``; ``SE`` = clustered SE (Miller 2024) with ``clusters``, else the CLT SE;
    ``n_eff = p(1-p)/SE^2`` (at least 1; ``n`` if the clustered variance estimate is
    0); Wilson at ``(p, n_eff)`` with ``z = t_{C-1}``; mapped back. Independent 0/1
    values (no clusters) get the plain Wilson interval (``n_eff = n``, normal ``z``),
    identical to :func:`wilson_interval`.
    Simulated coverage of a nominal 95% interval near a rate of 0.05 (0.95): 96% at 20 or
    50 single-attempt tasks, 95% at 200; 97% at 20 tasks x 3-5 attempts (conservative
    with few clusters), 95% at 100 tasks x 3 (``tests/stats/test_bounded.py``).
    NaN values are dropped. Values outside the range are an error (the range is the
    caller's claim about the quantity).
    """
    check_confidence(confidence)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    arr, labels, units = _prepare(values, clusters)
    n = int(arr.size)
    method = "wilson-effective-n" + ("-clustered" if clusters is not None else "")
    if n == 0:
        return BoundedInterval(None, None, None, method, confidence, 0, 0, "no values")
    width = upper - lower
    tol = 1e-9 * width
    if arr.min() < lower - tol or arr.max() > upper + tol:
        raise ValueError(f"values must lie in [{lower}, {upper}]; got "
                         f"[{arr.min():g}, {arr.max():g}]")
    q = np.clip((arr - lower) / width, 0.0, 1.0)
    p = float(q.mean())
    est = lower + p * width

    def out(lo: float | None, hi: float | None, reason: str | None = None) -> BoundedInterval:
        lo_v = None if lo is None else lower + lo * width
        hi_v = None if hi is None else lower + hi * width
        return BoundedInterval(est, lo_v, hi_v, method, confidence, n, units, reason)

    if units < 2:
        what = "one task (cluster)" if clusters is not None else "one value"
        return out(None, None, f"{what}: no spread between independent units to estimate")
    binary = bool(np.all((q == 0.0) | (q == 1.0)))
    if binary and labels is None:  # independent 0/1 values: exactly Wilson (1927)
        return out(*wilson_effective_n(p, float(n), t_quantile(confidence, math.inf)))
    z = t_quantile(confidence, units - 1)
    if np.all(q == q[0]):
        if p in (0.0, 1.0):  # score-type interval stays defined at 0% and 100%
            return out(*wilson_effective_n(p, float(units), z))
        return out(None, None, "every value is equal: no spread to estimate")
    se = (clustered_standard_error(q, labels) if labels is not None
          else standard_error_clt(q))
    n_eff = float(n) if not se > 0 else max(1.0, p * (1 - p) / (se * se))
    return out(*wilson_effective_n(p, n_eff, z))


def bounded_interval_from_totals(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
    binary: bool = False,
) -> BoundedInterval:
    """:func:`bounded_mean_interval` with tasks as clusters, from per-cluster totals only
    (``n_c`` values, their sum ``s_c`` and sum of squares ``q_c``, on the original
    scale), so the database can aggregate millions of episodes to one row per task.

    Same method and numbers as the per-value form (tested): the clustered SE is
    :func:`clustered_mean_interval`'s, every value equal means zero within-group
    variance, and ``binary=True`` says the values are 0/1 (successes), where the
    all-equal case at 0% or 100% still gets a (worst-case) interval.
    """
    check_confidence(confidence)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    nc = np.asarray(counts, dtype=float).ravel()
    keep = nc > 0
    nc = nc[keep]
    sc = np.asarray(sums, dtype=float).ravel()[keep]
    qc = np.asarray(sums_of_squares, dtype=float).ravel()[keep]
    n, units = int(nc.sum()), int(nc.size)
    method = "wilson-effective-n-clustered"
    if n == 0:
        return BoundedInterval(None, None, None, method, confidence, 0, 0, "no values")
    width = upper - lower
    # rescale the totals to q = (v - lower) / width
    s_q = (sc - lower * nc) / width
    q_q = (qc - 2 * lower * sc + lower * lower * nc) / (width * width)
    p = min(1.0, max(0.0, float(s_q.sum()) / n))
    est = lower + p * width

    def out(lo: float | None, hi: float | None, reason: str | None = None) -> BoundedInterval:
        return BoundedInterval(est, None if lo is None else lower + lo * width,
                               None if hi is None else lower + hi * width, method,
                               confidence, n, units, reason)

    if units < 2:
        return out(None, None, "one task (cluster): no spread between independent units "
                               "to estimate")
    z = t_quantile(confidence, units - 1)
    spread = float(q_q.sum()) / n - p * p
    if spread <= 1e-12 * max(1.0, p):
        if binary and p in (0.0, 1.0):
            return out(*wilson_effective_n(p, float(units), z))
        return out(None, None, "every value is equal: no spread to estimate")
    se = clustered_mean_interval(nc, s_q, q_q, confidence=confidence).se
    n_eff = float(n) if se is None or not se > 0 else max(1.0, p * (1 - p) / (se * se))
    return out(*wilson_effective_n(p, n_eff, z))


def nonnegative_mean_interval(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> BoundedInterval:
    """Mean of non-negative ``values`` (cost, tokens, seconds) with a percentile bootstrap
    interval, which is >= 0 because every resampled mean is.

    With ``clusters`` whole clusters are resampled (the cluster bootstrap; the mean is
    ``sum of resampled values / their count``), so repeated attempts of a task are not
    treated as independent. Fixed ``seed``: reports are reproducible. NaN values are
    dropped; negative values are an error.
    """
    check_confidence(confidence)
    if n_resamples < 100:
        raise ValueError(f"n_resamples must be >= 100, got {n_resamples}")
    arr, labels, units = _prepare(values, clusters)
    n = int(arr.size)
    method = "percentile-bootstrap" + ("-clustered" if clusters is not None else "")
    if n == 0:
        return BoundedInterval(None, None, None, method, confidence, 0, 0, "no values")
    if arr.min() < 0:
        raise ValueError(f"values must be >= 0, got {arr.min():g}")
    est = float(arr.mean())
    if units < 2:
        what = "one task (cluster)" if clusters is not None else "one value"
        return BoundedInterval(est, None, None, method, confidence, n, units,
                               f"{what}: nothing to resample")
    if np.all(arr == arr[0]):
        return BoundedInterval(est, None, None, method, confidence, n, units,
                               "every value is equal: no spread to estimate")
    if labels is not None:
        _, inverse = np.unique(labels, return_inverse=True)
        sums = np.bincount(inverse, weights=arr)
        counts = np.bincount(inverse).astype(float)
    else:
        sums, counts = arr, np.ones(n)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // units)  # bound memory: chunk x units indices at a time
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, units, (stop - start, units))
        means[start:stop] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return BoundedInterval(est, max(0.0, float(lo)), max(0.0, float(hi)), method, confidence,
                           n, units)


def nonnegative_ratio_interval(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
) -> BoundedInterval:
    """Ratio of sums ``R = sum(a_c) / sum(b_c)`` over clusters ``c`` (tasks) with a
    cluster-robust interval, from per-cluster totals ``a_c >= 0``, ``b_c >= 0``.

    Cost per episode is ``a`` = a task's summed cost, ``b`` = its episodes with a known
    cost; cost per success (cost of pass, Erol et al. 2025) is ``b`` = its successes.

    Method: the ratio estimator's linearised (delta-method) variance with clusters as
    the units (Cochran 1977, Sampling Techniques, sec. 6.4 and 11.8):
    ``Var(R) = C / (C - 1) * sum_c (a_c - R b_c)^2 / (sum b)^2``, and the interval on the
    log scale, ``R * exp(-/+ t_{C-1} * SE / R)`` (the log-ratio interval of Katz et al.
    1978), so both ends are > 0 and the upper end is longer, as for skewed spend. O(C):
    a summary over 50 agents x 2,000 tasks needs no resampling (a cluster bootstrap took
    18 s there, BENCHMARKS.md).

    ``estimate`` is ``inf`` when ``sum(b) = 0`` but ``sum(a) > 0`` (spent, never
    succeeded). No interval (None, with ``reason``) for no or one cluster, an infinite or
    zero ratio, or every cluster with the same ratio (no spread to estimate).
    """
    check_confidence(confidence)
    a = np.asarray(numerators, dtype=float).ravel()
    b = np.asarray(denominators, dtype=float).ravel()
    if a.size != b.size:
        raise ValueError(f"numerators ({a.size}) and denominators ({b.size}) differ in "
                         "length")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    method = "ratio-delta-log-clustered"
    units = int(a.size)
    if units == 0:
        return BoundedInterval(None, None, None, method, confidence, 0, 0, "no values")
    if a.min() < 0 or b.min() < 0:
        raise ValueError("numerators and denominators must be >= 0")
    n = round(float(b.sum()))
    sa, sb = float(a.sum()), float(b.sum())
    if sb <= 0:
        if sa > 0:
            return BoundedInterval(math.inf, None, None, method, confidence, n, units,
                                   "no success: the ratio is infinite")
        return BoundedInterval(None, None, None, method, confidence, n, units,
                               "nothing spent and nothing counted")
    est = sa / sb

    def none(reason: str) -> BoundedInterval:
        return BoundedInterval(est, None, None, method, confidence, n, units, reason)

    if units < 2:
        return none("one task (cluster): no spread between independent units to estimate")
    if est <= 0:
        return none("the ratio is 0: no spread to estimate on the log scale")
    z = a - est * b
    se = math.sqrt(units / (units - 1) * float(np.dot(z, z))) / sb
    if not se > 1e-12 * est:
        return none("every task has the same ratio: no spread to estimate")
    half = t_quantile(confidence, units - 1) * se / est
    return BoundedInterval(est, est * math.exp(-half), est * math.exp(half), method,
                           confidence, n, units)
