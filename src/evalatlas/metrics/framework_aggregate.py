"""Aggregation of framework-comparison results over questions and over runs (seed 003).

Over questions (upstream ``harness._compute_aggregates``, reference section 9): means of
latency, the three judge scores, retrieval precision and recall; sums of tokens and cost;
``<key>_avg`` of every numeric or boolean per-question extra metric over the questions
that have it, then the profile's aggregates on top.

Differences from upstream, each because a missing value must stay missing:

- a ``None`` score (the judge failed) is left out of the mean instead of counted, and a
  mean over no values is NaN; timeouts and query errors are scored 0 as the seed says
  (:func:`effective_scores`);
- a ``None`` token count or cost is left out of the sum and counted in
  ``tokens_unknown`` / ``cost_unknown``.

Over runs (upstream ``harness.average_evaluations``, reference section 10): questions
grouped by id; means of scores, retrieval and latency and of numeric extras (booleans as
0/1, strings dropped); sums of tokens and cost; the representative run is the one whose
correctness is closest to the mean, the earliest on ties; ``correctness_stddev`` per
question and ``<score>_run_stddev`` over the per-run means use the sample standard
deviation (n - 1). Unlike upstream (quirk 8) the profile aggregates are recomputed on the
averaged questions instead of being lost.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

JUDGE_SCORES = ("correctness", "completeness", "faithfulness")
FAILED_STATUSES = frozenset({"timeout", "error"})


@dataclass
class QuestionResult:
    """One question answered by one framework in one run (or averaged over runs)."""

    question_id: str
    question_text: str = ""
    expected_answer: str | None = None
    answer: str | None = None
    sources_expected: list[str] = field(default_factory=list)
    sources_retrieved: list[str] = field(default_factory=list)
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None
    model_name: str | None = None
    correctness: float | None = None
    completeness: float | None = None
    faithfulness: float | None = None
    judge_reasoning: str | None = None
    retrieval_precision: float | None = None
    retrieval_recall: float | None = None
    extra_metrics: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"
    run: int = 0
    n_runs: int = 1


def effective_scores(q: QuestionResult) -> dict[str, float | None]:
    """Judge scores as the aggregates use them: 0 for a timeout or query error (the seed:
    "scoring is set to 0 for that question"), else the judge's score or None."""
    if q.status in FAILED_STATUSES:
        return {k: 0.0 if getattr(q, k) is None else float(getattr(q, k)) for k in JUDGE_SCORES}
    return {k: None if getattr(q, k) is None else float(getattr(q, k)) for k in JUDGE_SCORES}


def _mean(values: Sequence[float | None]) -> float:
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(xs) / len(xs) if xs else math.nan


def _sum(values: Sequence[float | int | None]) -> tuple[float | int | None, int]:
    known = [v for v in values if v is not None]
    return (sum(known) if known else None), len(values) - len(known)


def extra_averages(question_metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``<key>_avg`` of each numeric/boolean metric over the questions that have the key."""
    acc: dict[str, list[float]] = {}
    for m in question_metrics:
        for k, v in m.items():
            if isinstance(v, bool | int | float) and not (isinstance(v, float) and math.isnan(v)):
                acc.setdefault(k, []).append(float(v))
    return {f"{k}_avg": sum(v) / len(v) for k, v in acc.items() if v}


def aggregate_questions(
    questions: Sequence[QuestionResult],
    profile_aggregate: Callable[[Sequence[Mapping[str, Any]]], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """Framework-level aggregates of one run (or of run-averaged questions)."""
    scores = [effective_scores(q) for q in questions]
    tokens, tokens_unknown = _sum([q.total_tokens for q in questions])
    cost, cost_unknown = _sum([q.cost_usd for q in questions])
    extras = extra_averages([q.extra_metrics for q in questions])
    if profile_aggregate is not None:
        extras.update(profile_aggregate([q.extra_metrics for q in questions]))
    return {
        "n_questions": len(questions),
        "avg_latency": _mean([q.latency_s for q in questions]),
        "total_tokens": tokens,
        "tokens_unknown": tokens_unknown,
        "total_cost_usd": cost,
        "cost_unknown": cost_unknown,
        **{f"avg_{k}": _mean([s[k] for s in scores]) for k in JUDGE_SCORES},
        "judge_missing": sum(1 for s in scores if s["correctness"] is None),
        "avg_retrieval_precision": _mean([q.retrieval_precision for q in questions]),
        "avg_retrieval_recall": _mean([q.retrieval_recall for q in questions]),
        "extra_aggregates": extras,
    }


def sample_stdev(values: Sequence[float | None]) -> float:
    """Sample standard deviation (n - 1, ``statistics.stdev``); NaN below two values."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return statistics.stdev(xs) if len(xs) > 1 else math.nan


def representative_index(correctness: Sequence[float | None]) -> int:
    """Index of the run closest to the mean correctness; the earliest on ties.

    Runs without a correctness score are never chosen unless no run has one (then 0).
    """
    m = _mean(correctness)
    best, best_d = 0, math.inf
    for i, c in enumerate(correctness):
        if c is None or math.isnan(m):
            continue
        d = abs(float(c) - m)
        if d < best_d:
            best, best_d = i, d
    return best


def average_question_runs(runs: Sequence[QuestionResult]) -> QuestionResult:
    """One question's results over several runs -> one averaged :class:`QuestionResult`."""
    if not runs:
        raise ValueError("cannot average zero runs")
    ordered = sorted(runs, key=lambda q: q.run)
    scores = [effective_scores(q) for q in ordered]
    corr = [s["correctness"] for s in scores]
    rep = ordered[representative_index(corr)]
    keys: list[str] = []
    for q in ordered:
        keys.extend(k for k in q.extra_metrics if k not in keys)
    extra: dict[str, Any] = {}
    for k in keys:
        vals = [float(q.extra_metrics[k]) for q in ordered
                if isinstance(q.extra_metrics.get(k), bool | int | float)
                and q.extra_metrics.get(k) is not None]
        if vals:
            extra[k] = sum(vals) / len(vals)
    if len(ordered) > 1:
        extra["correctness_stddev"] = sample_stdev(corr)

    def total(attr: str) -> Any:
        return _sum([getattr(q, attr) for q in ordered])[0]

    return replace(
        rep,
        latency_s=_nan_none(_mean([q.latency_s for q in ordered])),
        prompt_tokens=total("prompt_tokens"), completion_tokens=total("completion_tokens"),
        total_tokens=total("total_tokens"), cost_usd=total("cost_usd"),
        correctness=_nan_none(_mean(corr)),
        completeness=_nan_none(_mean([s["completeness"] for s in scores])),
        faithfulness=_nan_none(_mean([s["faithfulness"] for s in scores])),
        retrieval_precision=_nan_none(_mean([q.retrieval_precision for q in ordered])),
        retrieval_recall=_nan_none(_mean([q.retrieval_recall for q in ordered])),
        extra_metrics=extra,
        status="completed" if any(q.status == "completed" for q in ordered) else rep.status,
        run=-1 if len(ordered) > 1 else rep.run,
        n_runs=len(ordered),
    )


def _nan_none(v: float) -> float | None:
    return None if math.isnan(v) else v


def average_runs(
    runs: Mapping[int, Sequence[QuestionResult]],
    profile_aggregate: Callable[[Sequence[Mapping[str, Any]]], dict[str, float]] | None = None,
) -> tuple[list[QuestionResult], dict[str, Any]]:
    """Average several runs of one framework: (averaged questions, aggregates).

    ``runs`` maps run index -> that run's questions. Questions are matched by id and kept
    in first-seen order. Aggregates include ``run_count``, the per-question stddevs'
    ``correctness_stddev_avg`` and ``<score>_run_stddev`` over the per-run means (sample).
    """
    by_id: dict[str, list[QuestionResult]] = {}
    for run_idx in sorted(runs):
        for q in runs[run_idx]:
            by_id.setdefault(q.question_id, []).append(q)
    averaged = [average_question_runs(qs) for qs in by_id.values()]
    agg = aggregate_questions(averaged, profile_aggregate)
    per_run = {r: aggregate_questions(runs[r]) for r in sorted(runs)}
    agg["run_count"] = len(runs)
    agg["per_run"] = {r: {k: a[f"avg_{k}"] for k in JUDGE_SCORES} for r, a in per_run.items()}
    for k in JUDGE_SCORES:
        agg[f"{k}_run_stddev"] = sample_stdev([a[f"avg_{k}"] for a in per_run.values()])
    return averaged, agg
