"""Per-tier outcome table (ProjectScylla seed 001): the numbers of the ``tiers`` command.

A tier is the value of an experiment label (``tier`` by default); its runs are all
episodes of all experiments carrying that label value (all subtests of the tier, as
ProjectScylla's analysis does). Every number comes from :mod:`evalatlas.metrics.outcomes`
and :mod:`evalatlas.stats`; the runs come from :func:`evalatlas.store.tiers.load_tier_runs`
(per tier: arrays ``success``, ``impl``, ``cost``, ``task``).

Per tier: runs; pass rate (mean of per-run pass) with a Wilson interval over runs; mean
impl rate (judge ``impl_rate`` score, missing values excluded and counted) with a
Wilson effective-n interval inside [0, 1] (clustered by task when the tier spans several
tasks; :func:`bounded_mean_interval`); the median of the per-run composite
``composite_score(pass, impl_rate)`` with a percentile bootstrap interval (None when
every composite is equal); its letter grade; mean cost over runs whose cost is known,
with a percentile (task-cluster) bootstrap interval, never below 0; cost of pass = mean
cost / pass rate; uplift of the median composite against the baseline tier with a
percentile bootstrap interval (runs resampled independently within the tier and the
baseline, fixed seed). Intervals are ``None``
with fewer than two runs.

Cross-tier lines follow seed 001: ``pass_rate_variance`` over the tiers' pass rates,
``cost_variance`` over the tiers' median run costs and ``cost_delta`` = max - min of
those median costs. The seed's ``tier.pass_rate.median`` is taken as the tier pass rate
(mean over runs): the median of 0/1 runs can only be 0, 0.5 or 1 (scylla.md quirk 6).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalatlas.analysis.results import TableResult
from evalatlas.metrics.outcomes import (
    GradeScale,
    composite_score,
    compute_statistics,
    cost_delta,
    cost_of_pass,
    cost_variance,
    letter_grade,
    pass_rate,
    pass_rate_variance,
    tier_uplift,
)
from evalatlas.stats.bootstrap import bootstrap_ci
from evalatlas.stats.bounded import bounded_mean_interval, nonnegative_mean_interval
from evalatlas.stats.intervals import wilson_interval
from evalatlas.text import fmt_value


@dataclass
class TierReport(TableResult):
    """Rows (one per tier) plus the cross-tier lines and notes.

    ``meta`` (the JSON envelope's run-level values): baseline, pass_rate_variance,
    cost_variance, cost_delta (None when undefined), label, scale, ddof, confidence,
    weights.
    """

    SCHEMA: ClassVar[str] = "evalatlas.tiers/1"

    baseline: str | None = None
    pass_rate_variance: float = math.nan
    cost_variance: float = math.nan
    cost_delta: float = math.nan


def _finite_pair(pair: tuple[float, float]) -> tuple[float | None, float | None]:
    lo, hi = pair
    return (None if math.isnan(lo) else lo, None if math.isnan(hi) else hi)


def _mean_interval(values: np.ndarray, tasks: np.ndarray, confidence: float, *,
                   rate: bool) -> tuple[float | None, float | None]:
    """Interval of a mean over runs, clustered by task when the tier has several tasks
    (runs of one task are not independent), inside the quantity's range: a rate (impl
    rate, clipped to [0, 1] as :func:`impl_rate` does) gets
    :func:`bounded_mean_interval`, a cost :func:`nonnegative_mean_interval` (percentile
    bootstrap, >= 0). None when undefined (fewer than 2 runs, no spread)."""
    keep = ~np.isnan(values)
    if keep.sum() < 2:
        return None, None
    several = np.unique(tasks[keep].astype(str)).size > 1
    clusters = tasks[keep] if several else None
    if rate:
        iv = bounded_mean_interval(np.clip(values[keep], 0.0, 1.0), clusters=clusters,
                                   confidence=confidence)
    else:
        iv = nonnegative_mean_interval(np.maximum(values[keep], 0.0), clusters=clusters,
                                       confidence=confidence)
    return iv.low, iv.high


def _median_composites(success: np.ndarray, impl: np.ndarray,
                       weights: tuple[float, float]) -> np.ndarray:
    return np.array([composite_score(1.0 if s else 0.0, None if math.isnan(i) else i, weights)
                     for s, i in zip(success, impl, strict=True)], dtype=float)


def _nanmedian(values: np.ndarray) -> float:
    return compute_statistics(values.tolist()).median


def _uplift_interval(
    tier: np.ndarray, base: np.ndarray, confidence: float, n_resamples: int, seed: int,
) -> tuple[float | None, float | None]:
    """Percentile bootstrap of the median-composite uplift, runs resampled per side.

    ``(None, None)`` when a side has fewer than 2 runs or neither side has any spread (a
    collapsed interval would look like certainty) or when the resampled baseline median
    is 0 in more than 5% of resamples (the uplift is then mostly undefined).
    """
    tier, base = tier[~np.isnan(tier)], base[~np.isnan(base)]
    if tier.size < 2 or base.size < 2:  # one run has no spread to resample
        return None, None
    if np.ptp(tier) == 0 and np.ptp(base) == 0:  # every resample is the same uplift
        return None, None
    rng = np.random.default_rng(seed)
    tm = np.median(tier[rng.integers(0, tier.size, (n_resamples, tier.size))], axis=1)
    bm = np.median(base[rng.integers(0, base.size, (n_resamples, base.size))], axis=1)
    vals = [tier_uplift(float(t), float(b)).value for t, b in zip(tm, bm, strict=True)]
    defined = np.array([v for v in vals if v is not None], dtype=float)
    if defined.size < 0.95 * n_resamples:  # baseline median 0 too often: no interval
        return None, None
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(defined, [alpha, 1 - alpha])
    return float(lo), float(hi)


def tier_table(
    runs: dict[str, dict[str, np.ndarray]],
    *,
    baseline: str | None = "T0",
    label: str = "tier",
    confidence: float = 0.95,
    weights: tuple[float, float] = (0.5, 0.5),
    scale: GradeScale = "seed",
    ddof: int = 0,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> TierReport:
    """One row per tier (see the module docstring for every column's definition).

    ``runs``: per tier value, arrays ``success`` (bool), ``impl`` (NaN = missing),
    ``cost`` (NaN = unknown) and ``task``, in display order
    (:func:`evalatlas.store.tiers.load_tier_runs`). ``label`` only names the tier
    label in ``meta``.
    """
    notes: list[str] = []
    if baseline is not None and runs and baseline not in runs:
        notes.append(f"baseline {baseline!r} has no runs: uplift not computed")
    comps = {t: _median_composites(r["success"], r["impl"], weights) for t, r in runs.items()}
    base_median = (_nanmedian(comps[baseline]) if baseline in comps else None)
    rows: list[dict[str, Any]] = []
    pass_rates: list[float] = []
    median_costs: list[float] = []
    for t, r in runs.items():
        n = int(r["success"].size)
        s = int(r["success"].sum())
        pr = pass_rate(r["success"].tolist())
        lo, hi = wilson_interval(s, n, confidence)
        impl_known = r["impl"][~np.isnan(r["impl"])]
        impl_iv = _mean_interval(r["impl"], r["task"], confidence, rate=True)
        impl_mean = float(impl_known.mean()) if impl_known.size else None
        comp_stats = compute_statistics(comps[t].tolist(), ddof=ddof)
        comp_median = comp_stats.median if comp_stats.count else None
        comp_lo, comp_hi = _finite_pair(bootstrap_ci(
            comps[t], statistic=np.median, confidence=confidence, n_resamples=n_resamples,
            seed=seed, method="percentile")) if comp_stats.count >= 2 and \
            np.nanmin(comps[t]) < np.nanmax(comps[t]) else (None, None)  # no spread: None
        cost_known = r["cost"][~np.isnan(r["cost"])]
        cost_iv = _mean_interval(r["cost"], r["task"], confidence, rate=False)
        mean_cost = float(cost_known.mean()) if cost_known.size else None
        cost_stats = compute_statistics(cost_known.tolist(), ddof=ddof)
        cop = cost_of_pass(mean_cost, pr)
        row: dict[str, Any] = {
            "tier": t, "runs": n, "passed": s, "pass_rate": pr,
            "pass_rate_ci_low": lo, "pass_rate_ci_high": hi,
            "impl_rate": impl_mean, "impl_rate_ci_low": impl_iv[0],
            "impl_rate_ci_high": impl_iv[1], "impl_rate_missing": int(n - impl_known.size),
            "composite_median": comp_median,
            "composite_median_ci_low": comp_lo, "composite_median_ci_high": comp_hi,
            "composite_std": comp_stats.std_dev if comp_stats.count else None,
            "grade": letter_grade(comp_median, scale),
            "mean_cost_usd": mean_cost, "mean_cost_ci_low": cost_iv[0],
            "mean_cost_ci_high": cost_iv[1], "median_cost_usd": cost_stats.median
            if cost_stats.count else None,
            "cost_unknown_runs": int(n - cost_known.size),
            "cost_of_pass_usd": None if math.isnan(cop) else cop,
            "uplift": None, "uplift_ci_low": None, "uplift_ci_high": None,
            "uplift_note": None,
        }
        if base_median is not None:
            up = tier_uplift(comp_median, base_median)
            row["uplift"] = up.value
            row["uplift_note"] = up.reason
            if up.value is not None and baseline is not None and t != baseline:
                row["uplift_ci_low"], row["uplift_ci_high"] = _uplift_interval(
                    comps[t], comps[baseline], confidence, n_resamples, seed)
        rows.append(row)
        pass_rates.append(pr)
        if cost_stats.count:
            median_costs.append(cost_stats.median)
    if base_median is not None and any(r["runs"] < 2 for r in rows):
        notes.append("tiers with a single run (or a single-run baseline) have no uplift "
                     "interval: one run has no spread to resample")
    if any(r["uplift"] is not None and r["uplift_ci_low"] is None and r["runs"] >= 2
           and r["tier"] != baseline for r in rows):
        notes.append("a tier without an uplift interval beside an uplift has no spread to "
                     "resample (every run's composite equal, in the tier and the baseline) "
                     "or a baseline median of 0 in most resamples")
    if any(r["impl_rate_missing"] for r in rows):
        notes.append("runs without an impl_rate score have no composite and are left out "
                     "of the composite median")
    report = TierReport(
        rows=rows, baseline=baseline if baseline in runs else None,
        pass_rate_variance=pass_rate_variance(pass_rates, ddof=ddof),
        cost_variance=cost_variance(median_costs, ddof=ddof),
        cost_delta=cost_delta(median_costs),
        notes=notes,
    )
    report.meta = {**report_meta(report), "label": label, "scale": scale, "ddof": ddof,
                   "confidence": confidence, "weights": list(weights)}
    report.notes.append(_cross_tier_note(report, label, ddof))
    return report


def _number(value: float, digits: int) -> str:
    """A cross-tier number as the tables show it: "-" when undefined, else ``digits``
    decimals (scientific when smaller than that); the one table formatter."""
    return fmt_value(float(value), digits)


def _cross_tier_note(report: TierReport, label: str, ddof: int) -> str:
    """The sentence under the table: the cross-tier lines, or why there is no tier."""
    if not report.rows:
        return (f"no episodes carry the experiment label {label!r}; ingest ProjectScylla "
                "runs or label your experiments")
    delta = report.cost_delta
    money = "-" if math.isnan(delta) else ("inf" if delta == math.inf else f"${delta:,.4f}")
    return (f"cross-tier: pass-rate variance {_number(report.pass_rate_variance, 5)}, "
            f"cost variance {_number(report.cost_variance, 6)}, cost delta {money} "
            f"(ddof={ddof}; costs are per-tier median run costs)")


def report_meta(report: TierReport) -> dict[str, Any]:
    """JSON-ready cross-tier values for the command's envelope."""
    return json.loads(json.dumps({
        "baseline": report.baseline,
        "pass_rate_variance": None if math.isnan(report.pass_rate_variance)
        else report.pass_rate_variance,
        "cost_variance": None if math.isnan(report.cost_variance) else report.cost_variance,
        "cost_delta": None if math.isnan(report.cost_delta) else report.cost_delta,
    }))
