"""Bootstrap confidence intervals via ``scipy.stats.bootstrap`` (BCa, fixed seed).

BCa (bias-corrected and accelerated, Efron 1987) is scipy's default and ProjectScylla's
choice (10,000 resamples, 95%); the seed is fixed so reports are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from evalatlas.stats.validation import check_confidence

BootstrapMethod = Literal["BCa", "percentile", "basic"]


def _vectorised(statistic: Callable[..., Any]) -> bool:
    try:
        out = statistic(np.zeros((2, 3)), axis=-1)
    except (TypeError, ValueError):
        return False
    return bool(np.shape(out) == (2,))


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[..., Any] = np.mean,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    method: BootstrapMethod = "BCa",
) -> tuple[float, float]:
    """(low, high) bootstrap interval of ``statistic`` over ``values`` (NaN dropped).

    Uses ``scipy.stats.bootstrap`` with ``method`` (default ``"BCa"``), ``n_resamples``
    and ``random_state=seed``. Degenerate samples (one value, or all values equal) have
    no sampling spread to estimate: (NaN, NaN), not a zero-width interval that would read
    as certainty (ProjectScylla collapses it to the point; issue 10 asks for none). No
    values: (NaN, NaN).
    """
    check_confidence(confidence)
    arr = np.asarray(values, dtype=float).ravel()
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return (math.nan, math.nan)
    if arr.size < 2 or np.all(arr == arr[0]):
        return (math.nan, math.nan)
    vec = _vectorised(statistic)
    from scipy import stats  # here, not at import: scipy.stats costs ~1 s of CLI start-up

    res = stats.bootstrap(
        (arr,), statistic, confidence_level=confidence, n_resamples=n_resamples,
        method=method, random_state=np.random.default_rng(seed), vectorized=vec,
        axis=-1,  # the data are one-dimensional: its only axis, vectorised or not
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))
