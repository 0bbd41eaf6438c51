"""One-sided paired tests for "the candidate is worse by more than a margin", and their power.

The CI gate's questions (issue 25). Per shared task ``i``, ``d_i = candidate_i -
baseline_i`` (success proportions over each side's attempts, or mean rewards). The null
hypothesis is *non-inferiority*, ``H0: E[d] >= -margin`` ("the candidate is at most
``margin`` worse"); a regression is its rejection in favour of ``H1: E[d] < -margin``
(the usual non-inferiority set-up, e.g. Wellek 2010, *Testing Statistical Hypotheses of
Equivalence and Noninferiority*, ch. 1-2). Everything here is one-sided at ``alpha``.

- :func:`mcnemar_drop_pvalue`: exact one-sided McNemar test for one binary attempt a side
  and ``margin = 0`` (McNemar 1947, conditional binomial form);
- :func:`sign_flip_drop_pvalue`: sign-flip permutation test of the mean of ``d + margin``
  for every other case (Fisher 1935; Good 2005, *Permutation, Parametric and Bootstrap
  Tests of Hypotheses*, 3.1); with binary single attempts and no margin it is exactly the
  McNemar test above;
- :func:`detectable_drop` / :func:`tasks_for_drop`: the drop a suite detects with a given
  power, and the tasks needed for a given drop, from the large-sample power of the
  studentised sign-flip statistic, which for binary single attempts is Connor's (1987)
  McNemar sample-size formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from statistics import NormalDist

import numpy as np

EXACT_SIGN_FLIPS = 16
"""Up to this many non-zero differences the sign-flip p-value is exact (2^k sign vectors)."""

_CACHE_LIMIT = 2_500_000
"""Largest sign matrix (resamples x tasks) kept between calls (20 MB of float64)."""


def _check_alpha(alpha: float, name: str = "alpha") -> None:
    if not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise ValueError(f"{name} must be a fraction in (0, 1), e.g. 0.05; got {alpha!r}")


def mcnemar_drop_pvalue(baseline_only: int, candidate_only: int) -> float:
    """Exact one-sided McNemar p-value for "the candidate fails more tasks than the baseline".

    ``baseline_only``: tasks the baseline passed and the candidate failed; ``candidate_only``
    the reverse. Conditional on the ``n = b + c`` discordant pairs, ``b ~ Binomial(n, 1/2)``
    when neither side is better, so ``p = P[X >= b] = sum_{i=b}^{n} C(n, i) / 2^n``
    (McNemar 1947; Fagerland, Lydersen & Laake 2013, BMC Med. Res. Methodol. 13:91, the
    exact conditional test). No discordant pair: ``p = 1``. Exact in integers.

    E.g. 9 baseline-only and 1 candidate-only pairs: ``(C(10,9) + C(10,10)) / 1024 =
    11/1024 = 0.0107``.
    """
    b, c = int(baseline_only), int(candidate_only)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b} and {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(b, n + 1))
    outcomes: int = 2**n
    return min(1.0, tail / outcomes)


@lru_cache(maxsize=8)
def _all_signs(k: int) -> np.ndarray:
    """Every vector of ``k`` signs (+1/-1) as rows: 2^k x k."""
    bits = (np.arange(2**k, dtype=np.int64)[:, None] >> np.arange(k)) & 1
    return (2.0 * bits - 1.0)


@lru_cache(maxsize=2)
def _random_signs(n: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random((n_resamples, n)) < 0.5, -1.0, 1.0)


def _signs(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """Random sign vectors from a fixed seed; kept between calls when small (a gate over
    many groups of the same size, or a simulation, reuses them)."""
    if n * n_resamples <= _CACHE_LIMIT:
        return _random_signs(n, n_resamples, seed)
    return _random_signs.__wrapped__(n, n_resamples, seed)


def sign_flip_drop_pvalue(
    differences: Sequence[float] | np.ndarray,
    *,
    margin: float = 0.0,
    n_resamples: int = 9_999,
    seed: int = 0,
) -> float:
    """One-sided sign-flip permutation p-value for ``H0: E[d] >= -margin``.

    ``x_i = d_i + margin``; statistic ``T = sum x_i``. If each ``x_i`` is symmetric about 0
    (the boundary of H0 for paired exchangeable outcomes), flipping signs leaves the
    distribution of ``T`` unchanged, so ``p = P*[T* <= T]`` over the sign flips (Fisher
    1935; Good 2005, 3.1). Exact over all ``2^k`` flips of the ``k`` non-zero ``x_i`` when
    ``k <= 16`` (zeros do not move ``T``); otherwise ``n_resamples`` random flips from a
    fixed ``seed`` with ``p = (1 + #{T* <= T}) / (n_resamples + 1)``, which keeps the
    test valid (Phipson & Smyth 2010). Ties count as "at least as extreme" (a tolerance
    of 1e-9 times the scale absorbs rounding). No non-zero ``x``: ``p = 1``.

    With ``d`` in {-1, 0, 1} (one binary attempt a side) and ``margin = 0`` this equals
    :func:`mcnemar_drop_pvalue`. NaN differences are an error (the caller pairs tasks).
    """
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    if n_resamples < 99:
        raise ValueError(f"n_resamples must be at least 99, got {n_resamples}")
    d = np.asarray(differences, dtype=float).ravel()
    if np.isnan(d).any():
        raise ValueError("differences contain NaN; pair the tasks first")
    x = d + margin
    scale = float(np.abs(x).max()) if x.size else 0.0
    nonzero = x[np.abs(x) > 1e-12 * max(scale, 1.0)]
    if nonzero.size == 0:
        return 1.0
    t = float(nonzero.sum())
    tol = 1e-9 * max(float(np.abs(nonzero).sum()), 1.0)
    if nonzero.size <= EXACT_SIGN_FLIPS:
        stats = _all_signs(int(nonzero.size)) @ np.abs(nonzero)
        return float(np.mean(stats <= t + tol))
    # every x keeps its place (a zero's sign moves nothing), so the random signs depend
    # on the number of tasks only and are reused across calls of the same size
    stats = _signs(int(x.size), int(n_resamples), int(seed)) @ np.abs(x)
    return float((1 + np.sum(stats <= t + tol)) / (n_resamples + 1))


def _z(alpha: float, power: float) -> tuple[float, float]:
    _check_alpha(alpha)
    _check_alpha(power, "power")
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha), nd.inv_cdf(power)


def _second_moment(variance: float | None, discordance: float | None, attempts: float,
                   baseline_rate: float | None = None, margin: float = 0.0
                   ) -> Callable[[float], tuple[float, float]]:
    """``delta -> (E[x^2], Var(x))`` under a drop ``delta`` beyond the margin.

    Discordance form (one binary attempt a side, Connor 1987): the discordant share
    ``psi`` stays fixed, ``E[x^2] = psi``, ``Var = psi - delta^2``, with ``psi >= delta``
    (a drop of ``delta`` needs that many discordant pairs). Variance form: ``Var(d)``
    plus, with ``baseline_rate`` (success rates), what a uniform drop ``D = margin +
    delta`` adds to the candidate's binomial variance: a task at ``p`` falling to ``p - D``
    has ``q(1-q) = p(1-p) + D (2p - 1) - D^2``, so ``Var(d)`` grows by ``(D (2 pbar - 1) -
    D^2) / attempts`` (``attempts``: the candidate's attempts per task, harmonic mean);
    at least ``delta (1 - delta) / attempts`` (a drop of ``delta`` on a task solved every
    time makes its candidate proportion vary by that much); ``E[x^2] = Var + delta^2``."""
    if discordance is not None:
        if not 0 <= discordance <= 1:
            raise ValueError(f"discordance must lie in [0, 1], got {discordance!r}")

        def by_discordance(delta: float) -> tuple[float, float]:
            psi = max(discordance, delta)
            return psi, max(psi - delta * delta, 0.0)

        return by_discordance
    if variance is None or not math.isfinite(variance) or variance < 0:
        raise ValueError(f"variance must be a finite number >= 0, got {variance!r}")
    if not attempts >= 1:
        raise ValueError(f"attempts must be >= 1, got {attempts!r}")

    def by_variance(delta: float) -> tuple[float, float]:
        floor = delta * (1 - delta) / attempts if delta < 1 else 0.0
        grow = 0.0
        if baseline_rate is not None:
            drop = margin + delta
            grow = (drop * (2 * baseline_rate - 1) - drop * drop) / attempts
        var = max(variance + grow, floor, 0.0)
        return var + delta * delta, var

    return by_variance


def _power_gap(n: float, delta: float, za: float, zb: float,
               moments: Callable[[float], tuple[float, float]]) -> float:
    """``sqrt(n) delta - z_alpha sqrt(E[x^2]) - z_power sd(x)``: >= 0 when ``n`` tasks give
    at least the wanted power against a drop ``delta`` beyond the margin."""
    second, var = moments(delta)
    return math.sqrt(n) * delta - za * math.sqrt(second) - zb * math.sqrt(var)


@lru_cache(maxsize=4096)
def _mcnemar_critical(m: int, alpha: float) -> int:
    """Smallest ``k`` with ``P[Binomial(m, 1/2) >= k] < alpha`` (``m + 1``: never); the gate
    rejects when ``p < alpha``."""
    from scipy.special import betainc  # here: scipy.special costs ~0.3 s of start-up

    if m == 0:
        return 1
    k = np.arange(1, m + 1)
    tail = betainc(k, m - k + 1, 0.5)  # P[X >= k] = I_{1/2}(k, m - k + 1)
    ok = np.flatnonzero(tail < alpha)
    return int(k[ok[0]]) if ok.size else m + 1


def mcnemar_drop_power(n: int, discordance: float, drop: float, alpha: float = 0.05,
                       baseline_rate: float | None = None) -> float:
    """Exact power of the one-sided exact McNemar test (:func:`mcnemar_drop_pvalue`) with
    ``n`` tasks against a drop ``drop``, the discordant share being ``discordance``.

    Unconditional on the number of discordant pairs (Suissa & Shuster 1991, Stat. Med.
    10:1941): ``M ~ Binomial(n, psi)``; given ``M = m``, the baseline-only count is
    ``Binomial(m, (psi + drop) / (2 psi))`` and the test rejects from ``k_m``, the exact
    critical value at ``alpha``; power ``= sum_m P[M = m] P[B >= k_m]`` (``P[B >= k] =
    I_pi(k, m - k + 1)``). Unlike Connor's normal formula it counts the exact test's
    discreteness, which costs power at small counts.

    ``psi``: ``discordance`` as given (the share under the drop), or, with
    ``baseline_rate`` (``discordance`` then observed with no drop), the share a uniform
    drop makes: a task at ``p`` falling to ``p - drop`` is discordant with probability
    ``2p(1-p) + drop (2p - 1)``, so ``psi = discordance + drop (2 pbar - 1)``; always in
    ``[drop, 1]``.
    """
    from scipy.special import betainc, gammaln

    psi = float(discordance)
    if baseline_rate is not None:
        psi += float(drop) * (2 * float(baseline_rate) - 1)
    psi = min(1.0, max(psi, float(drop)))
    if n < 1 or psi <= 0 or drop <= 0:
        return 0.0 if drop > 0 else alpha
    pi = min(1.0, (psi + drop) / (2 * psi))
    m = np.arange(n + 1)
    if psi >= 1:
        weights = (m == n).astype(float)
    else:
        logw = (gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1)
                + m * math.log(psi) + (n - m) * math.log1p(-psi))
        weights = np.exp(logw)
    keep = np.flatnonzero(weights > 1e-10)
    ms = m[keep]
    crit = np.array([_mcnemar_critical(int(v), alpha) for v in ms])
    possible = crit <= ms
    sf = np.zeros(ms.size)
    sf[possible] = betainc(crit[possible], ms[possible] - crit[possible] + 1, pi)
    return float(np.sum(weights[keep] * sf))


@lru_cache(maxsize=4096)
def _mcnemar_detectable(n: int, discordance: float, alpha: float, power: float,
                        top: float, baseline_rate: float | None) -> float | None:
    """:func:`detectable_drop` for the exact McNemar test (cached: a gate, or a
    simulation, sees the same task and discordant counts again and again)."""
    if mcnemar_drop_power(n, discordance, top, alpha, baseline_rate) < power:
        return None
    # bracket from the normal formula (the exact test needs a little more), then bisect
    lo_d, hi_d = 0.0, top
    normal = detectable_drop(n, alpha=alpha, power=power, variance=0.0, attempts=1.0,
                             limit=top)
    if normal is not None:
        guess = min(top, 1.5 * normal)
        if mcnemar_drop_power(n, discordance, guess, alpha, baseline_rate) >= power:
            hi_d = guess
    for _ in range(30):
        mid = (lo_d + hi_d) / 2
        if mcnemar_drop_power(n, discordance, mid, alpha, baseline_rate) >= power:
            hi_d = mid
        else:
            lo_d = mid
    return hi_d


def detectable_drop(
    n: int,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    variance: float | None = None,
    discordance: float | None = None,
    attempts: float = 1.0,
    margin: float = 0.0,
    limit: float | None = 1.0,
    baseline_rate: float | None = None,
) -> float | None:
    """The drop (``margin`` included) that ``n`` paired tasks detect with ``power`` at
    one-sided ``alpha``: the minimum detectable effect, as a positive fraction.

    The studentised sign-flip statistic ``sum x / sqrt(sum x^2)`` (``x = d + margin``) is
    asymptotically standard normal under H0, so against a drop ``D = margin + delta`` its
    power is ``Phi((sqrt(n) delta - z_{1-alpha} sqrt(E[x^2])) / sd(x))``. Setting it to
    ``power`` gives ``sqrt(n) delta = z_{1-alpha} sqrt(E[x^2]) + z_power sd(x)``, solved for
    ``delta`` by bisection; ``variance`` is ``Var(d)`` per task (the sample variance of the
    paired differences), and ``E[x^2] = Var + delta^2``; ``attempts`` (the candidate's
    attempts per task) sets the variance floor described in :func:`_second_moment`.

    With ``discordance`` (one binary attempt a side, ``margin = 0``: the share of
    discordant tasks ``psi``) the test is the exact McNemar test, and the drop is found by
    bisection on its exact power (:func:`mcnemar_drop_power`); Connor's (1987, Biometrics
    43:207) normal formula ``n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2``
    (the same large-sample form) overstates the exact test's power by several points at a
    few hundred tasks. ``baseline_rate`` (the baseline's success rate, for rates only):
    under a uniform drop the discordant share grows (:func:`mcnemar_drop_power`), and so
    does ``Var(d)`` (:func:`_second_moment`); without it both stay as observed.

    E.g. ``n = 100``, ``variance = 0.1``, ``alpha = 0.05``: ``10 delta = 1.645 sqrt(0.1 +
    delta^2) + 0.842 sqrt(0.1)`` gives ``delta = 0.0803``.

    ``limit``: the largest possible drop (1 for rates); None when no drop up to it is
    detectable. ``limit=None``: unbounded (rewards of any scale).
    """
    za, zb = _z(alpha, power)
    if n < 1:
        return None
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number >= 0, got {margin!r}")
    moments = _second_moment(variance, discordance, attempts, baseline_rate, margin)
    if discordance is not None:
        if margin:
            raise ValueError("discordance (the McNemar case) needs margin = 0")
        return _mcnemar_detectable(
            int(n), float(discordance), float(alpha), float(power),
            1.0 if limit is None else float(limit),
            None if baseline_rate is None else float(baseline_rate))
    hi = (limit - margin) if limit is not None else max(1.0, 10 * math.sqrt(variance or 1))
    if hi <= 0:
        return None
    if limit is None:
        while _power_gap(n, hi, za, zb, moments) < 0:
            hi *= 2
    elif _power_gap(n, hi, za, zb, moments) < 0:
        return None
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _power_gap(n, mid, za, zb, moments) >= 0:
            hi = mid
        else:
            lo = mid
    return margin + hi


def tasks_for_drop(
    drop: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    variance: float | None = None,
    discordance: float | None = None,
    attempts: float = 1.0,
    margin: float = 0.0,
    baseline_rate: float | None = None,
) -> int:
    """Paired tasks needed to detect a drop ``drop`` (``> margin``) with ``power`` at one-sided
    ``alpha``: ``ceil(((z_{1-alpha} sqrt(E[x^2]) + z_power sd(x)) / delta)^2)`` with
    ``delta = drop - margin``, the inverse of :func:`detectable_drop` (same moments).

    E.g. ``variance = 0.1``, ``drop = 0.05``: ``((1.645 sqrt(0.1025) + 0.842 sqrt(0.1)) /
    0.05)^2 = 251.5 -> 252`` tasks. With ``discordance``: the smallest ``n`` whose exact
    McNemar power (:func:`mcnemar_drop_power`) reaches ``power``.
    """
    za, zb = _z(alpha, power)
    delta = drop - margin
    if not math.isfinite(delta) or delta <= 0:
        raise ValueError(f"drop must exceed the margin ({margin:g}), got {drop!r}")
    second, var = _second_moment(variance, discordance, attempts, baseline_rate,
                                 margin)(delta)
    n = max(1, math.ceil(((za * math.sqrt(second) + zb * math.sqrt(var)) / delta) ** 2 - 1e-9))
    if discordance is None:
        return n
    # the exact McNemar test: the smallest n whose exact power reaches ``power``
    lo, hi = 0, max(2 * n, 2)
    while mcnemar_drop_power(hi, discordance, delta, alpha) < power:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mcnemar_drop_power(mid, discordance, delta, alpha) >= power \
            else (mid, hi)
    return hi


def uniform_drop_variance(
    rates: Sequence[float] | np.ndarray,
    observed_attempts: Sequence[int] | np.ndarray,
    drop: float,
    attempts: int,
) -> tuple[float, float]:
    """``(Var(d), mean drop)`` of the per-task difference when every task's success
    probability falls by ``drop`` and each side makes ``attempts`` attempts per task.

    ``rates`` are the baseline's observed per-task success proportions over
    ``observed_attempts``. Task ``i`` has ``p_i``, the candidate ``q_i = max(p_i - drop,
    0)`` (a task cannot drop below 0, so the mean drop can be smaller than ``drop``);
    ``d_i = qhat_i - phat_i`` has ``Var(d) = mean_i [p_i(1-p_i) + q_i(1-q_i)] / attempts +
    var_i(q_i - p_i)``. Estimated without bias from ``n`` observed attempts:
    ``u = phat(1-phat) n/(n-1)`` for ``p(1-p)`` (the plug-in is low by ``(n-1)/n``) and
    ``q(1-q) = p(1-p) + drop (2p - 1) - drop^2`` (linear in ``p`` beyond ``p(1-p)``), each
    task's sum floored at 0. Tasks seen once cannot show their own variance, so they
    share their pooled rate ``pbar`` (``pbar(1-pbar)``: the homogeneous case, an upper
    bound).

    E.g. rates 0.5 and 1.0 over 4 attempts, drop 0.1, 2 attempts a side: ``u = 1/3`` and
    0; the sums are ``2/3 - 0.01`` and ``0.1 - 0.01``; ``Var(d) = (0.65667 + 0.09) / 2 / 2
    = 0.18667``, mean drop 0.1.
    """
    p = np.asarray(rates, dtype=float).ravel()
    n = np.asarray(observed_attempts, dtype=float).ravel()
    if p.size == 0 or p.size != n.size:
        raise ValueError(f"need one rate per task and one attempt count per task, got "
                         f"{p.size} and {n.size}")
    if np.isnan(p).any() or p.min() < 0 or p.max() > 1 or n.min() < 1:
        raise ValueError("rates must lie in [0, 1] and attempt counts be >= 1")
    if not 0 < drop < 1:
        raise ValueError(f"drop must be a fraction in (0, 1), e.g. 0.03; got {drop!r}")
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts!r}")
    single = n < 2
    if single.any():
        p = p.copy()
        p[single] = p[single].mean()
    q = np.maximum(p - drop, 0.0)
    u = p * (1 - p) * np.where(single, 1.0, n / np.maximum(n - 1, 1))
    uq = np.where(p >= drop, u + drop * (2 * p - 1) - drop * drop, 0.0)
    within = np.maximum(u + uq, 0.0) / attempts
    between = float(np.var(q - p)) if p.size > 1 else 0.0
    return float(within.mean() + between), float(np.mean(p - q))
