"""Recompute a number a source published (Inspect results, EEE aggregates) from episodes.

An input that carries its own summary next to its per-sample results can disagree with
them: a log cut short, samples dropped, a reducer other than the mean, a score Inspect
could not read and counted as 0. :func:`recompute_published` takes one published metric
(as a dict of :class:`~evalatlas.records.models.PublishedMetric` fields) and the
per-task values of the quantity it summarises, recomputes it the way the source defines
it, and says whether the two agree and, if not, the likely reason.

Definitions (Inspect AI ``scorer/_metrics`` and ``scorer/_reducer``, the source of
the ``accuracy``/``stderr`` digits in its logs):

- a task's attempts (epochs) are first combined by the **reducer**: ``mean``
  (``statistics.mean``), ``median``, ``max``, ``min``, ``mode``; no reducer means every
  episode counts on its own (EEE aggregates);
- ``accuracy`` and ``mean``: the mean of the reduced values;
- ``stderr``: ``std(values, ddof=1) / sqrt(n)``, the CLT standard error
  (:func:`evalatlas.stats.standard_errors.standard_error_clt`) computed with Inspect's
  numpy expression so the digits match; Inspect reports 0 for a single value,
  evalatlas None;
- ``std``: ``std(values, ddof=1)``; ``var``: its square.

Missing values (None: an errored sample, a score Inspect could not map) are left out,
as Inspect leaves out unscored samples. Agreement: equal to 1e-9 relative.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

REL_TOL = 1e-9
_MEANS = {"accuracy", "mean", "score", "success_rate", "mean_reward", "pass_rate"}
_REDUCERS: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": statistics.mean, "median": statistics.median, "max": max, "min": min,
    "mode": statistics.mode,
}


@dataclass(frozen=True)
class PublishedCheck:
    """One published metric next to evalatlas's recomputation of it."""

    value: float | None
    """evalatlas's number; None when it cannot be recomputed (see ``note``)."""
    n: int
    """Tasks (reduced samples) with a known value that went into ``value``."""
    agrees: bool | None
    """None when either side is missing."""
    note: str | None


def reduce_attempts(values: Sequence[float], reducer: str | None) -> float:
    """Combine one task's attempt values with an Inspect epochs reducer (see module doc)."""
    if reducer is None:
        raise ValueError("no reducer: attempts are not combined")
    fn = _REDUCERS.get(reducer)
    if fn is None:
        raise ValueError(f"reducer {reducer!r} is not recomputed by evalatlas")
    return float(fn(values))


def metric_value(metric: str, values: Sequence[float]) -> float | None:
    """The metric over the (reduced) values; None when undefined or not known here."""
    if not values:
        return None
    name = metric.rsplit("/", 1)[-1].lower()
    if name in _MEANS:
        return math.fsum(values) / len(values)
    if name == "stderr":
        if len(values) < 2:
            return None
        arr = np.asarray(values, dtype=float)
        # = standard_error_clt(values); numpy's expression, as Inspect, for equal digits
        return float(np.std(arr, ddof=1) / np.sqrt(arr.size))
    if name in ("std", "var"):
        if len(values) < 2:
            return None
        sd = float(np.std(np.asarray(values, dtype=float), ddof=1))
        return sd if name == "std" else sd * sd
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def recompute_published(
    published: Mapping[str, Any],
    values_by_task: Mapping[str, Sequence[float | None]],
) -> PublishedCheck:
    """Recompute ``published`` (PublishedMetric fields) from the per-task episode values.

    ``values_by_task``: for each task, the values of the published metric's ``score``
    (reward or a named score) over its attempts, None where unknown.
    """
    # a source may say how its metric is computed (EEE: every score is a mean)
    params = published.get("params") or {}
    metric = str(params.get("recompute_as") or published.get("metric") or "")
    reducer = published.get("reducer")
    pub_value = published.get("value")
    pub_n = published.get("n")
    missing = sum(1 for vs in values_by_task.values() for v in vs if v is None)
    reduced: list[float] = []
    if reducer is None:
        reduced = [v for vs in values_by_task.values() for v in vs if v is not None]
    else:
        if reducer not in _REDUCERS:
            return PublishedCheck(None, 0, None, f"reducer {reducer!r} is not recomputed")
        for vs in values_by_task.values():
            known = [v for v in vs if v is not None]
            if known:
                reduced.append(reduce_attempts(known, reducer))
    value = metric_value(metric, reduced)
    n = len(reduced)
    if value is None:
        why = ("no episode with a known value" if not reduced else
               f"metric {metric!r} is not recomputed" if metric_value(metric, [0.0, 1.0])
               is None else f"undefined for {n} value(s)")
        return PublishedCheck(None, n, None, why)
    if pub_value is None:
        return PublishedCheck(value, n, None, "the source published no number")
    agrees = _close(float(pub_value), value)
    note = None
    if not agrees:
        reasons = []
        if isinstance(pub_n, int) and pub_n != n:
            reasons.append(f"the source scored {pub_n} samples, the data holds {n}")
        elif pub_n is None:
            reasons.append(f"the source does not say how many samples it scored; the data "
                           f"holds {n}")
        if missing:
            reasons.append(f"{missing} episode(s) without a value (errors or scores "
                           "Inspect would count as 0) left out")
        if reducer not in (None, "mean"):
            reasons.append(f"reducer {reducer}")
        note = "; ".join(reasons) or "the numbers differ for a reason the data does not show"
    elif missing:
        note = f"{missing} episode(s) without a value left out (as the source did)"
    return PublishedCheck(value, n, agrees, note)
