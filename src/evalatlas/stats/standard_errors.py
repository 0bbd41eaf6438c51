"""Standard errors of a mean score: CLT and clustered (Miller 2024), and a mean with interval.

Source: Miller 2024, "Adding Error Bars to Evals" (arXiv 2411.00640), as summarised in
``shared/reference/statistics.md`` §2, and Inspect AI's implementation (which adds a
finite-cluster correction; available here as ``method="inspect"``).

NaN scores are dropped before computing and counted by :func:`mean_with_interval`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

ClusterMethod = Literal["miller", "inspect"]


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[~np.isnan(arr)]


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
    return math.sqrt(float(np.dot(d, d)) / (n * (n - 1)))


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
    n = vals.size
    if n < 2:
        return math.nan
    d = vals - vals.mean()
    _, inverse = np.unique(labels, return_inverse=True)
    sums = np.bincount(inverse, weights=d)
    n_clusters = sums.size
    if method == "miller":
        within = float(np.dot(sums, sums)) - float(np.dot(d, d))  # sum over i != j in c
        var = float(np.dot(d, d)) / (n * (n - 1)) + within / (n * n)
        return math.sqrt(max(var, 0.0))
    if method == "inspect":
        if n_clusters < 2:
            return math.nan
        return math.sqrt(n_clusters / (n_clusters - 1) * float(np.dot(sums, sums))) / n
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
    from scipy.stats import t as t_dist  # here: scipy.stats costs ~1 s of CLI start-up

    half = float(t_dist.ppf(0.5 + confidence / 2, df)) * se
    return Interval(est, est - half, est + half, se, n, name, confidence, c, n_nan)


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
