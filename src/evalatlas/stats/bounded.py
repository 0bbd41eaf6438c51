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
from typing import Any, NamedTuple

import numpy as np

from evalatlas.stats.standard_errors import (
    ClusterSums,
    GroupedIntervals,
    _cluster_labels,
    _cluster_totals,
    _group_index,
    _kept,
    _sums_of,
    clustered_intervals_from_sums,
    clustered_standard_error,
    t_quantile,
    t_quantiles,
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
    low, high = _wilson(np.float64(p), np.float64(n_eff), np.float64(z))
    return float(low), float(high)


def _wilson(p: Any, n_eff: Any, z: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`wilson_effective_n` on arrays (no checks): the one formula."""
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = 1 + z * z / n_eff
        centre = (p + z * z / (2 * n_eff)) / denom
        half = z * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff)) / denom
    low = np.where(p == 0.0, 0.0, np.minimum(p, np.maximum(0.0, centre - half)))
    high = np.where(p == 1.0, 1.0, np.maximum(p, np.minimum(1.0, centre + half)))
    return low, high


def _decide(p: np.ndarray, n: np.ndarray, units: np.ndarray, binary: np.ndarray,
            all_equal: np.ndarray, se: np.ndarray, *, clustered: bool,
            confidence: float, bounds_defined: bool = True
            ) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """The interval of :func:`bounded_mean_interval` (rescaled to [0, 1]) per group from
    its mean ``p``, ``n`` values, ``units`` independent units, whether every value is 0
    or 1 (``binary``) or equal (``all_equal``) and the SE of the mean: low, high (NaN:
    none) and the reason when there is none. See the module docstring."""
    size = p.size
    low, high = np.full(size, math.nan), np.full(size, math.nan)
    reasons: list[str | None] = [None] * size
    what = "one task (cluster)" if clustered else "one value"
    z = t_quantiles(confidence, units - 1)
    # independent 0/1 values: exactly Wilson (1927)
    plain = (units >= 2) & binary if not clustered else np.zeros(size, dtype=bool)
    rest = (units >= 2) & ~plain
    bound = rest & all_equal & ((p == 0.0) | (p == 1.0)) & bounds_defined  # score-type
    spread = rest & ~all_equal
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(se > 0, np.maximum(1.0, p * (1 - p) / (se * se)), n)
    for mask, ne, zz in ((plain, n, np.full(size, t_quantile(confidence, math.inf))),
                         (bound, units, z), (spread, n_eff, z)):
        if mask.any():
            low[mask], high[mask] = _wilson(p[mask], ne[mask].astype(float), zz[mask])
    for i in np.flatnonzero(n == 0):
        reasons[i] = "no values"
    for i in np.flatnonzero((n > 0) & (units < 2)):
        reasons[i] = f"{what}: no spread between independent units to estimate"
    for i in np.flatnonzero(rest & all_equal & ~bound):
        reasons[i] = "every value is equal: no spread to estimate"
    return low, high, reasons


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
    if clusters is None:
        return bounded_mean_intervals(values, confidence=confidence, lower=lower,
                                      upper=upper)[0]
    arr, labels, units = _prepare(values, clusters)
    width = _check_range(arr, lower, upper)
    n = int(arr.size)
    method = "wilson-effective-n-clustered"
    if n == 0:
        return BoundedInterval(None, None, None, method, confidence, 0, 0, "no values")
    q = np.clip((arr - lower) / width, 0.0, 1.0)
    p = float(q.mean())
    binary = bool(np.all((q == 0.0) | (q == 1.0)))
    se = (clustered_standard_error(q, labels) if units >= 2 and labels is not None
          else math.nan)
    lo, hi, why = _decide(np.array([p]), np.array([n]), np.array([units]),
                          np.array([binary]), np.array([bool(np.all(q == q[0]))]),
                          np.array([se]), clustered=True, confidence=confidence)
    return _bounded(lower + p * width, lo[0], hi[0], lower, width, method, confidence, n,
                    units, why[0])


def _check_range(arr: np.ndarray, lower: float, upper: float) -> float:
    """``upper - lower`` after checking the range and that ``arr`` lies in it."""
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    width = upper - lower
    tol = 1e-9 * width
    if arr.size and (arr.min() < lower - tol or arr.max() > upper + tol):
        raise ValueError(f"values must lie in [{lower}, {upper}]; got "
                         f"[{arr.min():g}, {arr.max():g}]")
    return width


def _bounded(est: float | None, lo: float, hi: float, lower: float, width: float,
             method: str, confidence: float, n: int, units: int,
             reason: str | None) -> BoundedInterval:
    """A :class:`BoundedInterval` from an interval on the rescaled [0, 1] (NaN: none)."""
    return BoundedInterval(est, None if math.isnan(lo) else float(lower + lo * width),
                           None if math.isnan(hi) else float(lower + hi * width), method,
                           confidence, n, units, reason)


def bounded_mean_intervals(
    values: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
) -> list[BoundedInterval]:
    """:func:`bounded_mean_interval` (independent values, no clusters) of many groups at
    once: value ``i`` belongs to group ``groups[i]`` (numbers ``0 .. n_groups - 1``;
    None: one group) and counts ``weights[i]`` times (a whole number; None: once), so a
    table of distinct values and how often each occurs gives the interval of the values
    it lists. One result per group. The single-group function calls this: the CLT SE
    ``sqrt(sum w (q - p)^2 / (n (n - 1)))`` with ``n = sum w``, then the same method.
    A summary's pass@k over 2,000 groups x 10 k is a handful of array passes, not
    20,000 calls."""
    check_confidence(confidence)
    raw = np.asarray(values, dtype=float).ravel()
    g, n_groups = _group_index(groups, raw.size, n_groups)
    w = np.ones(raw.size) if weights is None else np.asarray(weights, dtype=float).ravel()
    if w.size != raw.size:
        raise ValueError(f"weights ({w.size}) and values ({raw.size}) differ in length")
    keep = ~np.isnan(raw) & (w > 0)
    arr, g, w = raw[keep], g[keep], w[keep]
    width = _check_range(arr, lower, upper)
    q = np.clip((arr - lower) / width, 0.0, 1.0)
    n = np.bincount(g, weights=w, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.bincount(g, weights=w * q, minlength=n_groups) / n
        d = q - p[g]
        se = np.sqrt(np.bincount(g, weights=w * d * d, minlength=n_groups) / (n * (n - 1)))
    se = np.where(n >= 2, se, math.nan)
    binary = np.bincount(g, weights=((q != 0.0) & (q != 1.0)).astype(float),
                         minlength=n_groups) == 0
    q_min, q_max = np.full(n_groups, np.inf), np.full(n_groups, -np.inf)
    np.minimum.at(q_min, g, q)
    np.maximum.at(q_max, g, q)
    lo, hi, why = _decide(p, n, n, binary, q_min == q_max, se, clustered=False,
                          confidence=confidence)
    counts = n.astype(np.int64)
    return [_bounded(None if counts[i] == 0 else lower + float(p[i]) * width, lo[i], hi[i],
                     lower, width, "wilson-effective-n", confidence, int(counts[i]),
                     int(counts[i]), why[i]) for i in range(n_groups)]


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
    :func:`clustered_mean_interval`'s (computed for all groups at once by
    :func:`bounded_intervals_from_totals`), every value equal means zero within-group
    variance, and ``binary=True`` says the values are 0/1 (successes), where the
    all-equal case at 0% or 100% still gets a (worst-case) interval.
    """
    return bounded_intervals_from_totals(counts, sums, sums_of_squares,
                                         confidence=confidence, lower=lower, upper=upper,
                                         binary=binary)[0]


def bounded_intervals_from_totals(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
    binary: bool = False,
) -> list[BoundedInterval]:
    """:func:`bounded_interval_from_totals` of many groups at once: cluster ``i`` belongs
    to group ``groups[i]`` (numbers ``0 .. n_groups - 1``; None: one group); one result
    per group. The one definition (the single-group function calls this): per group,
    ``p`` the rescaled mean, every value equal when ``Q/n - p^2 <= 1e-12 max(1, p)``,
    the SE :func:`~evalatlas.stats.standard_errors.clustered_mean_intervals`', then the
    method of :func:`bounded_mean_interval`."""
    return bounded_intervals_and_clustered_from_totals(
        counts, sums, sums_of_squares, groups=groups, n_groups=n_groups,
        confidence=confidence, lower=lower, upper=upper, binary=binary)[0]


def bounded_intervals_and_clustered_from_totals(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
    binary: bool = False,
    weights: Sequence[float] | np.ndarray | None = None,
) -> tuple[list[BoundedInterval], GroupedIntervals]:
    """:func:`bounded_intervals_from_totals` and the
    :func:`~evalatlas.stats.standard_errors.clustered_mean_intervals` it computes on the
    way (of the values rescaled to ``[0, 1]``: the values themselves for the default
    range), so that a caller that reports both (a summary's success rate: the bounded
    interval and the clustered SE) passes over its millions of clusters once.
    ``weights[i]``: how many clusters have cluster ``i``'s totals (a whole number; None:
    one), as in :func:`clustered_mean_intervals`: a summary's 10M (task, agent) cells of
    0/1 outcomes are a few thousand distinct (attempts, successes) per group."""
    check_confidence(confidence)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    nc, sc, qc, g, n_groups, w = _cluster_totals(counts, sums, sums_of_squares, groups,
                                                  n_groups, weights)
    width = upper - lower
    # rescale the totals to q = (v - lower) / width (nothing to do on [0, 1])
    if lower == 0.0 and width == 1.0:
        s_q, q_q = sc, qc
    else:
        s_q = (sc - lower * nc) / width
        q_q = (qc - 2 * lower * sc + lower * lower * nc) / (width * width)
    return _bounded_from_sums(_sums_of(nc, s_q, q_q, g, n_groups, w), lower=lower,
                              width=width, binary=binary, confidence=confidence)


def bounded_intervals_and_clustered_from_sums(
    sums: ClusterSums,
    *,
    confidence: float = 0.95,
    lower: float = 0.0,
    upper: float = 1.0,
    binary: bool = False,
) -> tuple[list[BoundedInterval], GroupedIntervals]:
    """:func:`bounded_intervals_and_clustered_from_totals` from the groups'
    :class:`~evalatlas.stats.standard_errors.ClusterSums` (of the values on their own
    scale) instead of their clusters: a database can compute those per group
    (:mod:`evalatlas.store.summary_scan`), so 10M (group, task) cells never leave it.
    The sums are rescaled to ``[0, 1]`` (``S' = (S - lower n)/w``,
    ``Q' = (Q - 2 lower S + lower^2 n)/w^2``, ``spread' = spread/w^2``), then the same
    method."""
    check_confidence(confidence)
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"need finite lower < upper, got [{lower}, {upper}]")
    width = upper - lower
    n, s_sum, q_sum, spread = (np.asarray(a, dtype=float)
                               for a in (sums.n, sums.sums, sums.squares, sums.spread))
    if not (lower == 0.0 and width == 1.0):
        s_sum, q_sum = ((s_sum - lower * n) / width,
                        (q_sum - 2 * lower * s_sum + lower * lower * n) / (width * width))
        spread = spread / (width * width)
    return _bounded_from_sums(ClusterSums(n, np.asarray(sums.clusters), s_sum, q_sum, spread),
                              lower=lower, width=width, binary=binary, confidence=confidence)


def _bounded_from_sums(sums: ClusterSums, *, lower: float, width: float, binary: bool,
                       confidence: float) -> tuple[list[BoundedInterval], GroupedIntervals]:
    """The one method of the bounded clustered intervals, from the rescaled groups' sums:
    per group ``p`` the rescaled mean, every value equal when
    ``Q/n - p^2 <= 1e-12 max(1, p)``, the clustered SE, then :func:`_decide`."""
    n, units, s_sum, q_sum = (np.asarray(a, dtype=float) for a in sums[:4])
    n_groups = n.size
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.clip(s_sum / n, 0.0, 1.0)
        spread = q_sum / n - p * p
    clustered = clustered_intervals_from_sums(sums, confidence=confidence)
    units_i = units.astype(np.int64)
    lo, hi, why = _decide(p, n, units_i, np.zeros(n_groups, dtype=bool),
                          spread <= 1e-12 * np.maximum(1.0, p), clustered.se,
                          clustered=True, confidence=confidence, bounds_defined=binary)
    counts_n = n.astype(np.int64)
    return [_bounded(None if counts_n[i] == 0 else lower + float(p[i]) * width, lo[i],
                     hi[i], lower, width, "wilson-effective-n-clustered", confidence,
                     int(counts_n[i]), int(units_i[i]) if counts_n[i] else 0, why[i])
            for i in range(n_groups)], clustered


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


class RatioSums(NamedTuple):
    """Per group (arrays, one entry per group), all that the clustered ratio interval
    needs from its clusters: ``clusters`` C, ``numerators`` ``sum a_c``,
    ``denominators`` ``sum b_c`` and ``spread = sum_c (a_c - R b_c)^2`` with
    ``R = sum a / sum b`` (two passes: exactly 0 when every cluster has the same ratio;
    NaN where ``sum b = 0``). A database computes them without handing out its clusters
    (:mod:`evalatlas.store.summary_scan`)."""

    clusters: np.ndarray
    numerators: np.ndarray
    denominators: np.ndarray
    spread: np.ndarray


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
    return nonnegative_ratio_intervals(numerators, denominators, confidence=confidence)[0]


def nonnegative_ratio_intervals(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    confidence: float = 0.95,
) -> list[BoundedInterval]:
    """:func:`nonnegative_ratio_interval` of many groups at once: cluster ``i`` belongs to
    group ``groups[i]`` (numbers ``0 .. n_groups - 1``; None: one group); one result per
    group. The one definition (the single-group function calls this): per group
    ``R = sum a / sum b``, ``SE = sqrt(C / (C - 1) sum (a_c - R b_c)^2) / sum b`` and
    ``R exp(-/+ t_{C-1} SE / R)`` (:func:`nonnegative_ratio_intervals_from_sums` of
    :func:`ratio_sums`)."""
    return nonnegative_ratio_intervals_from_sums(
        ratio_sums(numerators, denominators, groups=groups, n_groups=n_groups),
        confidence=confidence)


def ratio_sums(
    numerators: Sequence[float] | np.ndarray,
    denominators: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
) -> RatioSums:
    """The :class:`RatioSums` of clusters with totals ``numerators`` (``a_c >= 0``) and
    ``denominators`` (``b_c >= 0``) in groups ``groups`` (numbers; None: one group);
    clusters with a NaN total are left out."""
    a = np.asarray(numerators, dtype=float).ravel()
    b = np.asarray(denominators, dtype=float).ravel()
    if a.size != b.size:
        raise ValueError(f"numerators ({a.size}) and denominators ({b.size}) differ in "
                         "length")
    g, n_groups = _group_index(groups, a.size, n_groups)
    a, b, g = _kept(~(np.isnan(a) | np.isnan(b)), a, b, g)
    if a.size and (a.min() < 0 or b.min() < 0):
        raise ValueError("numerators and denominators must be >= 0")
    units = np.bincount(g, minlength=n_groups)
    sa = np.bincount(g, weights=a, minlength=n_groups)
    sb = np.bincount(g, weights=b, minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(sb > 0, sa / sb, math.nan)
        z = a - est[g] * b
    return RatioSums(units, sa, sb, np.bincount(g, weights=z * z, minlength=n_groups))


def nonnegative_ratio_intervals_from_sums(sums: RatioSums, *, confidence: float = 0.95
                                          ) -> list[BoundedInterval]:
    """:func:`nonnegative_ratio_intervals` from the groups' :class:`RatioSums`: the one
    formula, ``R = sum a / sum b``, ``SE = sqrt(C / (C - 1) spread) / sum b`` and
    ``R exp(-/+ t_{C-1} SE / R)``, and the reasons where there is no interval."""
    check_confidence(confidence)
    method = "ratio-delta-log-clustered"
    units = np.asarray(sums.clusters)
    sa, sb, zz = (np.asarray(v, dtype=float)
                  for v in (sums.numerators, sums.denominators, sums.spread))
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(sb > 0, sa / sb, math.nan)
        se = np.sqrt(units / (units - 1) * zz) / sb
        half = t_quantiles(confidence, units - 1) * se / est
    out = []
    for i in range(units.size):
        k, n = int(units[i]), round(float(sb[i]))
        e = float(est[i])

        def iv(estimate: float | None, reason: str | None, low: float | None = None,
               high: float | None = None, k: int = k, n: int = n) -> BoundedInterval:
            return BoundedInterval(estimate, low, high, method, confidence, n, k, reason)

        if k == 0:
            out.append(iv(None, "no values", k=0, n=0))
        elif sb[i] <= 0:
            out.append(iv(math.inf, "no success: the ratio is infinite") if sa[i] > 0
                       else iv(None, "nothing spent and nothing counted"))
        elif k < 2:
            out.append(iv(e, "one task (cluster): no spread between independent units to "
                             "estimate"))
        elif e <= 0:
            out.append(iv(e, "the ratio is 0: no spread to estimate on the log scale"))
        elif not se[i] > 1e-12 * e:
            out.append(iv(e, "every task has the same ratio: no spread to estimate"))
        else:
            h = float(half[i])
            out.append(iv(e, None, e * math.exp(-h), e * math.exp(h)))
    return out
