"""Power and sample size for a paired difference (Miller 2024, ``statistics.md`` §4).

``n = (z_{1-alpha/2} + z_{power})^2 * omega^2 / delta^2`` with
``omega^2 = Var(d) + E[sigma_A^2]/K_A + E[sigma_B^2]/K_B``: the variance of the per-task
difference plus, when tasks are attempted K times, the within-task variances of each side
divided by the number of attempts (both extra terms default to 0). A normal approximation;
the paper's exact notation is unconfirmed (the reference says so).
"""

from __future__ import annotations

import math
from statistics import NormalDist


def _omega2(diff_variance: float, within_a: float, attempts_a: int, within_b: float,
            attempts_b: int) -> float:
    if diff_variance < 0 or within_a < 0 or within_b < 0:
        raise ValueError("variances must be >= 0")
    if attempts_a < 1 or attempts_b < 1:
        raise ValueError("attempts must be >= 1")
    return diff_variance + within_a / attempts_a + within_b / attempts_b


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def tasks_needed(
    diff_variance: float,
    d: float,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    within_variance_a: float = 0.0,
    attempts_a: int = 1,
    within_variance_b: float = 0.0,
    attempts_b: int = 1,
) -> int:
    """Tasks needed to detect a paired difference ``d`` (two-sided ``alpha``, ``power``).

    ``ceil((z_{1-alpha/2} + z_power)^2 * omega^2 / d^2)``. E.g. Var(d) = 0.25, d = 0.05:
    (1.95996 + 0.84162)^2 * 0.25 / 0.0025 = 784.9 -> 785 tasks. ``d`` must be non-zero;
    a zero variance needs 1 task.
    """
    if d == 0 or math.isnan(d):
        raise ValueError("the difference to detect must be non-zero")
    w = _omega2(diff_variance, within_variance_a, attempts_a, within_variance_b, attempts_b)
    n = _z_sum(alpha, power) ** 2 * w / (d * d)
    return max(1, math.ceil(n - 1e-9))


def minimum_detectable_difference(
    diff_variance: float,
    n: int,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    within_variance_a: float = 0.0,
    attempts_a: int = 1,
    within_variance_b: float = 0.0,
    attempts_b: int = 1,
) -> float:
    """Smallest paired difference detectable with ``n`` tasks: ``(z + z) * sqrt(omega^2 / n)``.

    The inverse of :func:`tasks_needed`. ``n < 1`` gives NaN.
    """
    if n < 1:
        return math.nan
    w = _omega2(diff_variance, within_variance_a, attempts_a, within_variance_b, attempts_b)
    return _z_sum(alpha, power) * math.sqrt(w / n)
