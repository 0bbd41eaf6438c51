"""Anytime-valid test and confidence sequence for a mean paired difference (betting).

Why: a CI gate that re-runs after every batch of finished tasks and stops at the first
"significant" result inflates false alarms far beyond ``alpha`` when it uses a
fixed-sample test (every look is another chance). A test supermartingale does not: by
Ville's inequality ``P(sup_t K_t >= 1/alpha) <= alpha`` under the null, however often one
looks and whenever one stops.

Method: Waudby-Smith & Ramdas (2023), "Estimating means of bounded random variables by
betting", JRSS-B 86(1):1-27, section 4 (one-sided capital processes) with the predictable
plug-in bets of their eq. (26). Values ``d_i`` in ``[-bound, bound]`` are rescaled to
``x_i = (d_i + bound) / (2 bound)`` in [0, 1]. For a hypothesised mean ``m`` (of ``x``):

- ``K_t^-(m) = prod_{i<=t} (1 - lambda_i(m) (x_i - m))`` bets that the mean is below
  ``m``; with ``lambda_i(m) = min(lambda_i, c / (1 - m))``, ``c = 1/2``, every factor is
  at least ``1 - c`` and, under ``H0: E[x_i | past] >= m`` for every ``i``, ``K^-`` is a
  non-negative supermartingale. Tasks need not be identically distributed: each may
  have its own mean, which is what heterogeneous tasks are.
- ``lambda_i = sqrt(2 log(1/alpha) / (sigma_{i-1}^2 i log(1 + i)))`` with
  ``mu_i = (1/2 + sum_{j<=i} x_j) / (i + 1)`` and ``sigma_i^2 = (1/4 + sum_{j<=i} (x_j -
  mu_j)^2) / (i + 1)``, ``sigma_0^2 = 1/4`` (predictable: uses tasks before ``i`` only).
- ``K^+`` is the mirror image (bets on a mean above ``m``, ``lambda_i(m) = min(lambda_i,
  c / m)``).

Each factor of ``K^-(m)`` increases with ``m`` (and ``K^+`` decreases), so the
anytime-valid upper bound ``U_t = inf{m: max_{s<=t} K_s^-(m) >= 1/alpha}`` is found by
bisection and "the mean is below ``m0``" is rejected exactly when ``U_t <= m0``: the
interval and the test always agree. The reported interval is ``[L_t, U_t]``, each side at
``alpha`` (a two-sided ``1 - 2 alpha`` confidence sequence, matching the fixed-sample
gate's ``1 - 2 alpha`` interval); it is the running intersection over all looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BET_CAP = 0.5
"""``c`` of Waudby-Smith & Ramdas (their default): bets never risk more than half."""


@dataclass(frozen=True)
class SequentialDrop:
    """The anytime-valid test of ``H0: E[d] >= -margin`` after ``n`` values.

    ``e_value``: the largest capital ``max_{s<=n} K_s^-`` at ``-margin`` (evidence of a
    drop beyond the margin; reject when ``>= 1/alpha``); ``p_value = min(1, 1/e_value)``
    (an anytime-valid p-value); ``low``/``high``: the confidence sequence for the mean
    difference after ``n`` values (``d`` units); ``rejected_at``: the first ``n`` at which
    the test rejected (None: not yet)."""

    n: int
    e_value: float
    p_value: float
    low: float | None
    high: float | None
    rejected_at: int | None
    alpha: float


def _bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in bets ``lambda_i`` (before the per-``m`` cap), WSR eq. (26)."""
    t = np.arange(1, x.size + 1, dtype=float)
    mu = (0.5 + np.cumsum(x)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    prev = np.concatenate(([0.25], sigma2[:-1]))
    bets: np.ndarray = np.sqrt(2 * math.log(1 / alpha) / (prev * t * np.log1p(t)))
    return bets


def _max_log_capital(x: np.ndarray, lam: np.ndarray, m: float, below: bool) -> float:
    """``max_s log K_s(m)``: ``K^-`` when ``below`` (bets on a mean below ``m``), else ``K^+``."""
    if below:
        cap = BET_CAP / (1 - m) if m < 1 else math.inf
        factors = 1 - np.minimum(lam, cap) * (x - m)
    else:
        cap = BET_CAP / m if m > 0 else math.inf
        factors = 1 + np.minimum(lam, cap) * (x - m)
    return float(np.max(np.cumsum(np.log(factors))))


def _bound(x: np.ndarray, lam: np.ndarray, alpha: float, below: bool) -> float:
    """The confidence-sequence bound in ``x`` units (upper when ``below``) by bisection."""
    level = math.log(1 / alpha)
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        rejected = _max_log_capital(x, lam, mid, below) >= level
        if below:
            lo, hi = (lo, mid) if rejected else (mid, hi)
        else:
            lo, hi = (mid, hi) if rejected else (lo, mid)
    return hi if below else lo


def sequential_drop_test(
    differences: Sequence[float] | np.ndarray,
    *,
    margin: float = 0.0,
    alpha: float = 0.05,
    bound: float = 1.0,
) -> SequentialDrop:
    """Anytime-valid test that the mean of ``differences`` (in time order, each in
    ``[-bound, bound]``) is below ``-margin``, and its confidence sequence.

    See the module docstring for the method (Waudby-Smith & Ramdas 2023). Valid at every
    prefix at once: call it after every batch and stop at the first rejection; the
    false-alarm probability stays at most ``alpha``. ``bound`` = 1 for differences of
    rates or of rewards in [0, 1]. Fewer than one value: nothing is rejected, no interval.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be a fraction in (0, 1), e.g. 0.05; got {alpha!r}")
    if not (math.isfinite(bound) and bound > 0):
        raise ValueError(f"bound must be a positive number, got {bound!r}")
    if not (math.isfinite(margin) and 0 <= margin < bound):
        raise ValueError(f"margin must lie in [0, {bound:g}), got {margin!r}")
    d = np.asarray(differences, dtype=float).ravel()
    if np.isnan(d).any():
        raise ValueError("differences contain NaN; pair the tasks first")
    if d.size and (d.min() < -bound - 1e-9 or d.max() > bound + 1e-9):
        raise ValueError(f"differences must lie in [-{bound:g}, {bound:g}]; got "
                         f"[{d.min():g}, {d.max():g}]")
    if d.size == 0:
        return SequentialDrop(0, 1.0, 1.0, None, None, None, alpha)
    x = np.clip((d + bound) / (2 * bound), 0.0, 1.0)
    lam = _bets(x, alpha)
    m0 = (bound - margin) / (2 * bound)
    cap = BET_CAP / (1 - m0)
    log_k = np.cumsum(np.log(1 - np.minimum(lam, cap) * (x - m0)))
    level = math.log(1 / alpha)
    hits = np.flatnonzero(log_k >= level)
    # K_0 = 1: the capital before any task counts as a look too
    e_value = math.exp(min(max(float(log_k.max()), 0.0), 700.0))
    high = _bound(x, lam, alpha, below=True)
    low = _bound(x, lam, alpha, below=False)
    return SequentialDrop(
        n=int(d.size), e_value=e_value,
        p_value=min(1.0, 1.0 / e_value),
        low=float(2 * bound * low - bound), high=float(2 * bound * high - bound),
        rejected_at=int(hits[0]) + 1 if hits.size else None, alpha=alpha)
