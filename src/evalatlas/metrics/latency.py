"""Latency percentiles of the framework comparison (seed 003, reference section 12).

- Percentiles use linear interpolation between closest ranks: ``pos = (n - 1) * p``,
  ``value = x[lo] * (1 - w) + x[hi] * w`` with ``w = pos - lo`` - numpy's default
  ``"linear"`` method, as upstream ``compare.py``.
- A timed-out question enters at the timeout value (the seed: the question is marked as
  timed out and scores 0; its latency is the guardrail's limit), see
  :func:`effective_latency`.
- Missing latencies (``None`` / NaN) are left out; an empty list gives NaN, where upstream
  prints 0 (pass ``empty=0.0`` to get upstream's value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def effective_latency(
    latency_s: float | None, *, timed_out: bool = False, timeout_s: float | None = None
) -> float | None:
    """The latency a question counts with: the timeout value when it timed out.

    When it timed out but no timeout value is known, the measured latency is kept.
    """
    if timed_out and timeout_s is not None:
        return float(timeout_s)
    return None if latency_s is None else float(latency_s)


def _clean(values: Sequence[float | None]) -> list[float]:
    return sorted(float(v) for v in values if v is not None and not math.isnan(float(v)))


def percentile(values: Sequence[float | None], p: float, *, empty: float = math.nan) -> float:
    """The ``p``-quantile (0 <= p <= 1) by linear interpolation (numpy "linear").

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5)
    2.5
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"percentile p must be in [0, 1], got {p}")
    xs = _clean(values)
    if not xs:
        return empty
    pos = (len(xs) - 1) * p
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    w = pos - lo
    return xs[lo] * (1.0 - w) + xs[hi] * w


def latency_p50_p95(values: Sequence[float | None], *, empty: float = math.nan
                    ) -> tuple[float, float]:
    """(p50, p95) of per-question latencies, as the comparison report prints them."""
    return percentile(values, 0.5, empty=empty), percentile(values, 0.95, empty=empty)
