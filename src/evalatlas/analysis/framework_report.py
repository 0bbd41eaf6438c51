"""The numbers of the framework comparison report (seed 003, reference section 14).

:func:`framework_comparison` computes every number through the metric and statistics functions
(never re-deriving a formula) into one JSON-able model; :mod:`evalatlas.report.frameworks`
renders it as Markdown, so the JSON output carries every number of the Markdown report.

Sections, as upstream ``compare.py``: header, Summary (``±sd`` over runs when a framework
has more than one run), Derived Scorecard, Runtime Distribution (latency p50/p95),
Scenario-Specific Metrics (when any), Code Quality (static, and the LLM review when
present), Per-Question Results. Beyond upstream: mean correctness with a 95% interval per
framework, and a paired comparison of correctness between each pair of frameworks on
their shared questions (Wilcoxon signed-rank, Holm-adjusted). Per-question rows are
matched by question id, not list position (quirk 13); a missing value is None, never 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from evalatlas.analysis.frameworks import FrameworkData
from evalatlas.metrics.framework_aggregate import (
    JUDGE_SCORES,
    QuestionResult,
    aggregate_questions,
    average_runs,
    effective_scores,
)
from evalatlas.metrics.latency import latency_p50_p95
from evalatlas.metrics.profiles import get_profile
from evalatlas.metrics.scorecard import ScorecardInput, scorecard
from evalatlas.stats import holm_adjust, mean_with_interval, paired_difference
from evalatlas.stats.bounded import bounded_mean_interval
from evalatlas.text import json_safe

SCHEMA = "evalatlas.compare-frameworks/1"
ANSWER_LIMIT = 300
SCORE_RANGE = (0.0, 5.0)
SCORECARD_CAVEAT = ("These derived scores are computed from existing metrics and shown as "
                    "decision aids (not as a single winner metric).")


def _natural_key(text: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _finite(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None if v is None else float(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _questions_and_aggregates(fd: FrameworkData) -> tuple[list[QuestionResult], dict[str, Any]]:
    try:
        prof = get_profile(fd.profile).aggregate_metrics
    except KeyError:
        prof = None
    runs = {r: qs for r, qs in fd.runs.items() if qs}
    if len(runs) > 1:
        return average_runs(runs, prof)
    questions = next(iter(runs.values()), [])
    agg = aggregate_questions(questions, prof)
    agg["run_count"] = fd.run_count
    up = (fd.upstream_aggregates or {}).get("extra_aggregates") or {}
    for k in JUDGE_SCORES:
        agg[f"{k}_run_stddev"] = _finite(up.get(f"{k}_run_stddev")) if fd.averaged_input \
            else None
    return questions, agg


def _correctness_interval(fd: FrameworkData, confidence: float) -> dict[str, Any]:
    values: list[float] = []
    clusters: list[str] = []
    for qs in fd.runs.values():
        for q in qs:
            c = effective_scores(q)["correctness"]
            values.append(math.nan if c is None else c)
            clusters.append(q.question_id)
    multi = len(fd.runs) > 1
    iv = mean_with_interval(values, clusters=clusters if multi else None,
                            confidence=confidence)
    # the score lies in [0, 5] (0 = timeout/error): the interval is the bounded one
    # (Wilson on an effective n, issue 10), inside that range by construction and none,
    # with a reason, where it cannot be estimated (one value, every value equal)
    arr = np.asarray(values, dtype=float)
    bounded = bounded_mean_interval(np.clip(arr, *SCORE_RANGE),
                                    clusters=clusters if multi else None,
                                    confidence=confidence, lower=SCORE_RANGE[0],
                                    upper=SCORE_RANGE[1])
    return {"mean": iv.estimate, "low": bounded.low, "high": bounded.high, "se": iv.se,
            "n": iv.n, "method": bounded.method, "confidence": confidence,
            "n_missing": iv.n_nan, "note": bounded.reason}


def _per_question_correctness(questions: Sequence[QuestionResult]) -> dict[str, float]:
    out: dict[str, float] = {}
    for q in questions:
        c = effective_scores(q)["correctness"]
        if c is not None:
            out[q.question_id] = c
    return out


def _paired(names: list[str], per_q: list[dict[str, float]], confidence: float
            ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            shared = [q for q in per_q[i] if q in per_q[j]]
            a = np.array([per_q[i][q] for q in shared], dtype=float)
            b = np.array([per_q[j][q] for q in shared], dtype=float)
            res = paired_difference(a, b, confidence=confidence)
            # each difference lies in [-5, 5]: the bounded interval on that range
            width = SCORE_RANGE[1] - SCORE_RANGE[0]
            iv = bounded_mean_interval(np.clip(a, *SCORE_RANGE) - np.clip(b, *SCORE_RANGE),
                                       lower=-width, upper=width, confidence=confidence)
            rows.append({"a": names[i], "b": names[j], "n": res.n, "mean_a": res.mean_a,
                         "mean_b": res.mean_b, "diff": res.diff, "low": iv.low,
                         "high": iv.high, "note": iv.reason, "pvalue": res.pvalue,
                         "test": res.test})
    adjusted = holm_adjust([r["pvalue"] for r in rows]) if rows else []
    for r, p in zip(rows, adjusted, strict=True):
        r["pvalue_holm"] = p
    return rows


def _question_row(q: QuestionResult) -> dict[str, Any]:
    s = effective_scores(q)
    return {
        "latency_s": q.latency_s, "total_tokens": q.total_tokens, "cost_usd": q.cost_usd,
        "correctness": s["correctness"], "completeness": s["completeness"],
        "faithfulness": s["faithfulness"], "retrieval_precision": q.retrieval_precision,
        "retrieval_recall": q.retrieval_recall, "status": q.status, "n_runs": q.n_runs,
        "extra_metrics": {k: v for k, v in q.extra_metrics.items()
                          if isinstance(v, int | float)},
        "answer": q.answer, "sources_retrieved": q.sources_retrieved,
    }


def framework_comparison(
    data: Sequence[FrameworkData],
    *,
    scorecard_mode: str = "relative",
    confidence: float = 0.95,
    generated: datetime | None = None,
    question_order: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The full comparison as a JSON-able dict (schema ``evalatlas.compare-frameworks/1``)."""
    if not data:
        raise ValueError("no framework results to compare")
    notes: list[str] = []
    keys = {(d.scenario, d.mode) for d in data}
    if len(keys) > 1:
        notes.append("the compared results mix scenarios or modes: "
                     + ", ".join(f"{s}/{m}" for s, m in sorted(keys)))
    first = data[0]
    frameworks: list[dict[str, Any]] = []
    all_questions: list[list[QuestionResult]] = []
    sc_inputs: list[ScorecardInput] = []
    for fd in data:
        questions, agg = _questions_and_aggregates(fd)
        all_questions.append(questions)
        cq = fd.code_quality or {}
        review = fd.code_review or {}
        sc_inputs.append(ScorecardInput(
            name=fd.display_name, avg_correctness=_finite(agg["avg_correctness"]),
            avg_completeness=_finite(agg["avg_completeness"]),
            avg_faithfulness=_finite(agg["avg_faithfulness"]),
            aggregates=agg["extra_aggregates"], avg_latency=_finite(agg["avg_latency"]),
            total_cost_usd=_finite(agg["total_cost_usd"]),
            total_tokens=_finite(agg["total_tokens"]), n_questions=agg["n_questions"],
            maintainability_index=_finite(cq.get("maintainability_index")),
            avg_cyclomatic_complexity=_finite(cq.get("avg_cyclomatic_complexity")),
            type_annotation_ratio=_finite(cq.get("type_annotation_ratio")),
            review_avg_score=_finite(review.get("avg_score"))))
        p50, p95 = latency_p50_p95([q.latency_s for q in questions])
        if agg.get("judge_missing"):
            notes.append(f"{fd.display_name}: {agg['judge_missing']} question(s) without a "
                         "judge score are left out of the judge means")
        if agg.get("tokens_unknown") or agg.get("cost_unknown"):
            notes.append(f"{fd.display_name}: tokens unknown for {agg['tokens_unknown']} and "
                         f"cost unknown for {agg['cost_unknown']} question(s) (timeouts and "
                         "errors lose what was spent); totals cover the known ones")
        frameworks.append({
            "name": fd.display_name, "framework": fd.framework, "scenario": fd.scenario,
            "mode": fd.mode, "profile": fd.profile, "run_count": agg.get("run_count", 1),
            "models": fd.models, "experiment_ids": fd.experiment_ids,
            "summary": {k: agg[k] for k in (
                "n_questions", "avg_latency", "total_tokens", "tokens_unknown",
                "total_cost_usd", "cost_unknown", "avg_correctness", "avg_completeness",
                "avg_faithfulness", "judge_missing", "avg_retrieval_precision",
                "avg_retrieval_recall")},
            "run_stddev": {k: agg.get(f"{k}_run_stddev") for k in JUDGE_SCORES},
            "correctness_interval": _correctness_interval(fd, confidence),
            "latency": {"p50": p50, "p95": p95},
            "scenario_metrics": {k: v for k, v in agg["extra_aggregates"].items()
                                 if _finite(v) is not None},
            "code_quality": fd.code_quality, "code_review": fd.code_review,
        })
    for row, fw in zip(scorecard(sc_inputs, scorecard_mode), frameworks, strict=True):
        fw["scorecard"] = {k: row[k] for k in ("capability", "efficiency",
                                              "developer_experience", "parts")}
    names = [f["name"] for f in frameworks]
    paired = _paired(names, [_per_question_correctness(qs) for qs in all_questions],
                     confidence)
    order: list[str] = list(question_order or [])
    texts: dict[str, str] = {}
    for qs in all_questions:
        for q in qs:
            texts.setdefault(q.question_id, q.question_text)
    rest = sorted((q for q in texts if q not in order), key=_natural_key)
    order = [q for q in order if q in texts] + rest
    by_fw = [{q.question_id: q for q in qs} for qs in all_questions]
    questions_out = [{
        "question_id": qid, "question_text": texts[qid],
        "results": {names[i]: _question_row(by_fw[i][qid]) for i in range(len(names))
                    if qid in by_fw[i]},
    } for qid in order]
    return json_safe({
        "schema": SCHEMA,
        "generated": (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        "scenario": first.scenario, "scenario_type": first.scenario_type, "mode": first.mode,
        "profile": first.profile, "n_questions": len(order),
        "scorecard_mode": scorecard_mode, "confidence": confidence,
        "frameworks": frameworks, "paired_correctness": paired,
        "questions": questions_out, "notes": notes,
    })
