"""Standard errors of a mean score: CLT and clustered (Miller 2024), and a mean with interval.

Source: Miller 2024, "Adding Error Bars to Evals" (arXiv 2411.00640), as summarised in
``shared/reference/statistics.md`` §2, and Inspect AI's implementation (which adds a
finite-cluster correction; available here as ``method="inspect"``).

NaN scores are dropped before computing and counted by :func:`mean_with_interval`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

ClusterMethod = Literal["miller", "inspect"]


def _sumsq(x: np.ndarray) -> float:
    """``sum(x_i^2)``, by numpy's pairwise sum rather than ``np.dot``: a BLAS dot product
    spins up its thread pool per call, which on a loaded machine cost 14 ms per 20,000
    values (the report's 190 paired intervals took 7 s); this takes 15 us."""
    return float(np.sum(x * x))


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    kept: np.ndarray = arr[~np.isnan(arr)]
    return kept


def standard_error_clt(values: Sequence[float] | np.ndarray) -> float:
    """CLT standard error of the mean: ``sqrt(sum((s_i - mean)^2) / (n (n - 1)))``.

    Miller 2024 eq. for independent questions; for 0/1 scores this is
    ``sqrt(p(1-p)/(n-1))`` (the ``n - 1`` version of ``sqrt(p(1-p)/n)``).
    NaN values are dropped; fewer than 2 values give NaN.
    """
    arr = _clean(values)
    n = arr.size
    if n < 2:
        return math.nan
    d = arr - arr.mean()
    return math.sqrt(_sumsq(d) / (n * (n - 1)))


def clustered_standard_error(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[Hashable] | np.ndarray,
    *,
    method: ClusterMethod = "miller",
) -> float:
    """Clustered standard error of the mean, tasks (or any groups) as clusters.

    ``method="miller"`` (default, Miller 2024):
    ``SE = sqrt(SE_CLT^2 + (1/n^2) sum_c sum_{i in c} sum_{j in c, j != i} d_i d_j)``
    with ``d_i = s_i - mean``; with one value per cluster it equals :func:`standard_error_clt`.

    ``method="inspect"`` (Inspect AI): ``sqrt(C/(C-1) * sum_c (sum_{i in c} d_i)^2) / n``
    with ``C`` clusters; it divides the ``i = j`` terms by ``n^2`` and adds a finite-cluster
    correction, so it differs from Miller's formula (``statistics.md`` §10 quirk 2).

    Pairs whose value is NaN are dropped. Fewer than 2 values (or, for ``inspect``, fewer
    than 2 clusters) give NaN.
    """
    vals = np.asarray(values, dtype=float).ravel()
    labels = _cluster_labels(clusters)
    if vals.size != labels.size:
        raise ValueError(f"values ({vals.size}) and clusters ({labels.size}) differ in length")
    keep = ~np.isnan(vals)
    vals, labels = vals[keep], labels[keep]
    n = int(vals.size)
    if n < 2:
        return math.nan
    d = vals - vals.mean()
    _, inverse = np.unique(labels, return_inverse=True)
    sums = np.bincount(inverse, weights=d)
    n_clusters = sums.size
    if method == "miller":
        within = _sumsq(sums) - _sumsq(d)  # sum over i != j in c
        var = _sumsq(d) / (n * (n - 1)) + within / (n * n)
        return math.sqrt(max(var, 0.0))
    if method == "inspect":
        if n_clusters < 2:
            return math.nan
        return math.sqrt(n_clusters / (n_clusters - 1) * _sumsq(sums)) / n
    raise ValueError(f"unknown clustered SE method {method!r}; use 'miller' or 'inspect'")


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval and how it was made (for reports and JSON)."""

    estimate: float
    low: float
    high: float
    se: float | None
    n: int
    method: str
    confidence: float
    n_clusters: int | None = None
    n_nan: int = 0


IntervalMethod = Literal["clt", "clustered", "bootstrap"]


def mean_with_interval(
    values: Sequence[float] | np.ndarray,
    *,
    clusters: Sequence[Hashable] | np.ndarray | None = None,
    confidence: float = 0.95,
    method: IntervalMethod | None = None,
    cluster_method: ClusterMethod = "miller",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Mean of ``values`` with a ``confidence`` interval.

    - ``clt``: mean +/- t_{n-1} * SE_CLT (t with n - 1 degrees of freedom, as Inspect AI);
    - ``clustered`` (default when ``clusters`` is given): t_{C-1} * clustered SE;
    - ``bootstrap``: BCa via :func:`evalatlas.stats.bootstrap.bootstrap_ci` (``se`` None;
      independent values only - with clusters it is an error rather than a too-narrow CI).

    NaN values are excluded and counted in ``n_nan``. No values: NaN everywhere; one value
    (or zero spread) with ``clt``: the interval is NaN (no spread can be estimated).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    raw = np.asarray(values, dtype=float).ravel()
    keep = ~np.isnan(raw)
    arr = raw[keep]
    n_nan = int(raw.size - arr.size)
    n = int(arr.size)
    if method is None:
        method = "clustered" if clusters is not None else "clt"
    est = float(arr.mean()) if n else math.nan
    if method == "bootstrap":
        if clusters is not None:
            raise ValueError("a cluster bootstrap is not implemented: use method='clustered' "
                             "(or bootstrap per-cluster means yourself)")
        from evalatlas.stats.bootstrap import bootstrap_ci

        lo, hi = bootstrap_ci(arr, confidence=confidence, n_resamples=n_resamples, seed=seed)
        return Interval(est, lo, hi, None, n, "bootstrap-BCa", confidence, None, n_nan)
    if method == "clustered":
        if clusters is None:
            raise ValueError("method 'clustered' needs clusters")
        labels = _cluster_labels(clusters)
        if labels.size != raw.size:
            raise ValueError(f"values ({raw.size}) and clusters ({labels.size}) differ in length")
        labels = labels[keep]
        se = clustered_standard_error(arr, labels, method=cluster_method)
        c = int(np.unique(labels).size) if n else 0
        df = c - 1
        name = f"clustered-{cluster_method}"
    elif method == "clt":
        se = standard_error_clt(arr)
        c, df, name = None, n - 1, "clt"
    else:
        raise ValueError(f"unknown interval method {method!r}")
    if df < 1 or math.isnan(se):
        return Interval(est, math.nan, math.nan, se, n, name, confidence, c, n_nan)
    half = t_quantile(confidence, df) * se
    return Interval(est, est - half, est + half, se, n, name, confidence, c, n_nan)


@functools.lru_cache(maxsize=4096)
def t_quantile(confidence: float, df: float) -> float:
    """Two-sided Student-t quantile ``t_{df}(0.5 + confidence/2)`` (normal when df is inf).

    Memoised (a pure function of its two numbers): a summary asks for the same few
    (confidence, df) pairs thousands of times, one per group and interval, and the
    bisection below costs O(df) per step (``benchmarks/bench_scale.py``: 81 of 116 s of
    a 2,000-group summary before the cache).

    Integer ``df`` (the usual case: observations or clusters minus one) is computed
    without scipy, which costs 0.3-2 s of CLI time to import (``scipy.stats`` more than
    ``scipy.special``): for ``df < 100`` by solving the closed-form t CDF of integer
    degrees of freedom (Abramowitz & Stegun 26.7.3-4) by bisection to machine precision;
    for ``df >= 300`` by the Cornish-Fisher expansion to ``df^-4`` (A&S 26.7.5; error
    below 1e-10 there). Other ``df``: ``scipy.special.stdtrit``. Tests compare all three
    with ``scipy.stats.t.ppf``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from statistics import NormalDist

    p = 0.5 + confidence / 2
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if df != int(df):
        from scipy.special import stdtrit

        return float(stdtrit(df, p))
    nu = int(df)
    if nu >= 300:
        z = NormalDist().inv_cdf(p)
        z2 = z * z
        return (z + z * (z2 + 1) / (4 * nu)
                + z * ((5 * z2 + 16) * z2 + 3) / (96 * nu**2)
                + z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / (384 * nu**3)
                + z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945)
                / (92160 * nu**4))
    target = 2 * p - 1  # P(|T| <= t)
    lo, hi = 0.0, 1.0
    while _t_central(hi, nu) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _t_central(mid, nu) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _t_central(t: float, nu: int) -> float:
    """``P(|T| <= t)`` for Student's t with integer ``nu`` (A&S 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(nu))
    c2 = math.cos(theta) ** 2
    if nu % 2 == 1:
        if nu == 1:
            return 2 * theta / math.pi
        term, total = math.cos(theta), math.cos(theta)
        for k in range(3, nu - 1, 2):  # coefficients 2/3, 2*4/(3*5), ...
            term *= c2 * (k - 1) / k
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * total)
    term, total = 1.0, 1.0
    for k in range(2, nu - 1, 2):  # coefficients 1/2, 1*3/(2*4), ...
        term *= c2 * (k - 1) / k
        total += term
    return math.sin(theta) * total


def t_quantiles(confidence: float, df: Any) -> np.ndarray:
    """:func:`t_quantile` for each entry of ``df`` (one call per distinct value, memoised);
    NaN where ``df`` is not > 0 (no interval there)."""
    d = np.asarray(df, dtype=float)
    out = np.full(d.shape, math.nan)
    ok = d > 0
    if ok.any():
        values, inverse = np.unique(d[ok], return_inverse=True)
        out[ok] = np.array([t_quantile(confidence, float(v)) for v in values])[inverse]
    return out


@dataclass(frozen=True)
class GroupedIntervals:
    """:class:`Interval` fields as arrays, one entry per group (``intervals[g]`` is group
    ``g``'s :class:`Interval`)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    n: np.ndarray
    n_clusters: np.ndarray
    method: str
    confidence: float

    def __getitem__(self, g: int) -> Interval:
        return Interval(float(self.estimate[g]), float(self.low[g]), float(self.high[g]),
                        float(self.se[g]), int(self.n[g]), self.method, self.confidence,
                        int(self.n_clusters[g]))


def _kept(mask: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """``arrays`` at the rows where ``mask`` is true; the arrays themselves (no copy)
    when every row is: a summary's 10M cells are mostly all kept, and each boolean
    index copies 80 MB."""
    if mask.all():
        return list(arrays)
    return [a[mask] for a in arrays]


def _cluster_totals(
    counts: Any, sums: Any, sums_of_squares: Any, groups: Any, n_groups: int | None,
    weights: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, np.ndarray | None]:
    """Clusters' totals checked and as float arrays, with their group numbers and
    weights (None: one cluster each), keeping only clusters with a count (and a weight)
    > 0: the inputs of the grouped clustered intervals (this module's and
    :mod:`evalatlas.stats.bounded`'s), checked in one place."""
    nc = np.asarray(counts, dtype=float).ravel()
    sc = np.asarray(sums, dtype=float).ravel()
    qc = np.asarray(sums_of_squares, dtype=float).ravel()
    if not nc.size == sc.size == qc.size:
        raise ValueError(f"counts ({nc.size}), sums ({sc.size}) and sums_of_squares "
                         f"({qc.size}) differ in length")
    if np.any(nc < 0):
        raise ValueError("cluster counts must be >= 0")
    g, n_groups = _group_index(groups, nc.size, n_groups)
    if weights is None:
        nc, sc, qc, g = _kept(nc > 0, nc, sc, qc, g)
        return nc, sc, qc, g, n_groups, None
    w = np.asarray(weights, dtype=float).ravel()
    if w.size != nc.size:
        raise ValueError(f"weights ({w.size}) and counts ({nc.size}) differ in length")
    nc, sc, qc, g, w = _kept((nc > 0) & (w > 0), nc, sc, qc, g, w)
    return nc, sc, qc, g, n_groups, w


def _group_index(groups: Any, size: int, n_groups: int | None) -> tuple[np.ndarray, int]:
    """Group numbers ``0 .. n_groups - 1`` as an int array of ``size`` entries."""
    g = np.zeros(size, dtype=np.int64) if groups is None else np.asarray(groups).ravel()
    if g.size != size:
        raise ValueError(f"groups ({g.size}) and values ({size}) differ in length")
    if g.size and (g.dtype.kind not in "iu" or g.min() < 0):
        raise ValueError("groups must be group numbers (integers >= 0)")
    g = g.astype(np.int64, copy=False)
    if n_groups is None:
        n_groups = int(g.max()) + 1 if g.size else 1
    return g, n_groups


def clustered_mean_intervals(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    confidence: float = 0.95,
    weights: Sequence[float] | np.ndarray | None = None,
) -> GroupedIntervals:
    """:func:`clustered_mean_interval` of many groups at once: cluster ``i`` belongs to
    group ``groups[i]`` (numbers ``0 .. n_groups - 1``; None: one group) and stands for
    ``weights[i]`` clusters with the same totals (a whole number; None: one), so a table
    of distinct (count, sum, sum of squares) and how many tasks have each gives the
    interval of the tasks it lists. The one definition of the formula (the single-group
    function calls this): per group, with ``n = sum n_c``, ``m = S/n``,
    ``sum d^2 = Q - S^2/n`` and ``D_c = s_c - n_c m``,
    ``var = sum d^2 / (n (n-1)) + (sum D_c^2 - sum d^2) / n^2`` and the interval
    ``m +/- t_{C-1} sqrt(var)`` (Miller 2024). A summary's 2,000 groups of 5,000 tasks
    take one pass over their cells instead of 2,000 calls."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    nc, sc, qc, g, n_groups, w = _cluster_totals(counts, sums, sums_of_squares, groups,
                                                  n_groups, weights)
    return _clustered(nc, sc, qc, g, n_groups, confidence, w)


class ClusterSums(NamedTuple):
    """Per group (arrays, one entry per group), all that the clustered interval of a
    mean needs from its clusters: ``n = sum n_c`` values, ``clusters`` C (with
    ``n_c > 0``), ``sums`` S, ``squares`` Q and ``spread = sum_c (s_c - n_c S/n)^2`` (the
    clusters' deviations from their group's mean, in two passes: no cancellation when
    they are small). A database computes them without handing out its millions of
    clusters (:mod:`evalatlas.store.summary_scan`); :func:`cluster_sums` computes them
    from the clusters."""

    n: np.ndarray
    clusters: np.ndarray
    sums: np.ndarray
    squares: np.ndarray
    spread: np.ndarray


def cluster_sums(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    groups: Sequence[int] | np.ndarray | None = None,
    n_groups: int | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
) -> ClusterSums:
    """The :class:`ClusterSums` of clusters with totals ``counts``, ``sums`` and
    ``sums_of_squares`` in groups ``groups`` (as :func:`clustered_mean_intervals`)."""
    nc, sc, qc, g, n_groups, w = _cluster_totals(counts, sums, sums_of_squares, groups,
                                                  n_groups, weights)
    return _sums_of(nc, sc, qc, g, n_groups, w)


def _sums_of(nc: np.ndarray, sc: np.ndarray, qc: np.ndarray, g: np.ndarray, n_groups: int,
             w: np.ndarray | None) -> ClusterSums:
    """:func:`cluster_sums` of checked clusters with ``n_c > 0`` (weights ``w``, None: one
    each)."""
    n, c, s_sum, q_sum = _cluster_sums(nc, sc, qc, g, n_groups, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(n > 0, s_sum / n, math.nan)
        dc = sc - nc * m[g]
        dc2 = dc * dc if w is None else w * dc * dc
    return ClusterSums(n, c, s_sum, q_sum, np.bincount(g, weights=dc2, minlength=n_groups))


def clustered_intervals_from_sums(sums: ClusterSums, *, confidence: float = 0.95
                                  ) -> GroupedIntervals:
    """:func:`clustered_mean_intervals` from the groups' :class:`ClusterSums`: the one
    formula (see there), with ``sum D_c^2`` the sums' ``spread``."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n, s_sum, q_sum, spread = (np.asarray(a, dtype=float)
                               for a in (sums.n, sums.sums, sums.squares, sums.spread))
    c = np.asarray(sums.clusters)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(n > 0, s_sum / n, math.nan)
        dd = np.maximum(q_sum - s_sum * s_sum / n, 0.0)
        var = dd / (n * (n - 1)) + (spread - dd) / (n * n)
        se = np.where(n >= 2, np.sqrt(np.maximum(var, 0.0)), math.nan)
    half = t_quantiles(confidence, c - 1) * se  # NaN with fewer than 2 clusters
    return GroupedIntervals(m, m - half, m + half, se, n.astype(np.int64),
                            c.astype(np.int64), "clustered-miller", confidence)


def _clustered(nc: np.ndarray, sc: np.ndarray, qc: np.ndarray, g: np.ndarray,
               n_groups: int, confidence: float, w: np.ndarray | None) -> GroupedIntervals:
    """:func:`clustered_mean_intervals` on checked arrays of clusters with ``n_c > 0``
    (weights ``w``, None: one each)."""
    return clustered_intervals_from_sums(_sums_of(nc, sc, qc, g, n_groups, w),
                                         confidence=confidence)


def _cluster_sums(nc: np.ndarray, sc: np.ndarray, qc: np.ndarray, g: np.ndarray,
                  n_groups: int, w: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: values ``n``, clusters, their sum and sum of squares (weighted)."""
    if w is None:
        return (np.bincount(g, weights=nc, minlength=n_groups),
                np.bincount(g, minlength=n_groups),
                np.bincount(g, weights=sc, minlength=n_groups),
                np.bincount(g, weights=qc, minlength=n_groups))
    return (np.bincount(g, weights=w * nc, minlength=n_groups),
            np.bincount(g, weights=w, minlength=n_groups),
            np.bincount(g, weights=w * sc, minlength=n_groups),
            np.bincount(g, weights=w * qc, minlength=n_groups))


def clustered_mean_interval(
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
) -> Interval:
    """:func:`mean_with_interval` with clusters (Miller), from per-cluster totals only.

    For cluster ``c`` with ``n_c`` values, sum ``s_c`` and sum of squares ``q_c``:
    ``n = sum n_c``, mean ``m = S/n``, ``sum d^2 = Q - S^2/n`` and the cluster sums of
    deviations ``D_c = s_c - n_c m``; then, as in :func:`clustered_standard_error`,
    ``var = sum d^2 / (n (n-1)) + (sum D_c^2 - sum d^2) / n^2`` and the interval is
    ``m +/- t_{C-1} sqrt(var)`` (computed by :func:`clustered_mean_intervals`, one
    group). Same numbers as the per-value form (tested), but the per-cluster totals can
    be computed in the database: ``summary`` over millions of episodes moves one row per
    task instead of one per episode. Clusters with ``n_c = 0`` are ignored.
    """
    iv = clustered_mean_intervals(counts, sums, sums_of_squares, confidence=confidence)
    return iv[0]


def trial_standard_error(
    successes: Sequence[float] | np.ndarray, attempts: Sequence[int] | np.ndarray
) -> float:
    """Terminal-Bench 2 leaderboard SE of accuracy, conditional on the task set.

    ``accuracy = mean_t p_t`` with ``p_t = successes_t / attempts_t``;
    ``SE = sqrt(sum_t p_t (1 - p_t) / (n_t - 1)) / T`` (``statistics.md`` §5, from the
    leaderboard's ``get_agent_scores_function.sql``). It covers trial noise only, not the
    sampling of tasks, so it is smaller than Miller's clustered SE; prefer
    :func:`clustered_standard_error` for "how sure", use this to reproduce the leaderboard.
    A task with a single attempt makes it undefined (NaN), as upstream's NULL.
    """
    s = np.asarray(successes, dtype=float).ravel()
    n = np.asarray(attempts, dtype=float).ravel()
    if s.size != n.size:
        raise ValueError(f"successes ({s.size}) and attempts ({n.size}) differ in length")
    if s.size == 0 or np.any(n < 2):
        return math.nan
    if np.any((s < 0) | (s > n)):
        raise ValueError("need 0 <= successes <= attempts for every task")
    p = s / n
    return math.sqrt(float(np.sum(p * (1 - p) / (n - 1)))) / s.size


def _cluster_labels(clusters: Any) -> np.ndarray:
    """Cluster labels as a sortable array: numeric labels stay numeric (fast), anything
    else (mixed or object) is compared as strings."""
    labels = np.asarray(clusters).ravel()
    if labels.dtype.kind in "biuf":
        return labels
    return labels.astype(str)
