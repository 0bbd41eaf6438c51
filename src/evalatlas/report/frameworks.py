"""The framework comparison report (seed 003, reference section 14): a JSON-able model and
its Markdown rendering.

:func:`build_report` computes every number (through the metric and statistics
functions, never re-deriving a formula); :func:`render_markdown` only formats what is in
the model, so the JSON output carries every number of the Markdown report.

Sections, as upstream ``compare.py``: header, Summary (``±sd`` over runs when a framework
has more than one run), Derived Scorecard, Runtime Distribution (latency p50/p95),
Scenario-Specific Metrics (when any), Code Quality (static, and the LLM review when
present), Per-Question Results. Beyond upstream: mean correctness with a 95% interval per
framework, and a paired comparison of correctness between each pair of frameworks on
their shared questions (Wilcoxon signed-rank, Holm-adjusted). Differences from upstream,
on purpose: per-question rows are matched by question id, not list position (quirk 13);
agent answers and question texts are escaped so that Markdown inside them cannot break
the document; a missing value prints as "-", never as 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

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
from evalatlas.text import json_safe, md_escape

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
    # a t-interval can leave the score's range; clipped to [0, 5] (0 = timeout/error)
    low = None if math.isnan(iv.low) else max(SCORE_RANGE[0], iv.low)
    high = None if math.isnan(iv.high) else min(SCORE_RANGE[1], iv.high)
    return {"mean": iv.estimate, "low": low, "high": high, "se": iv.se, "n": iv.n,
            "method": iv.method, "confidence": confidence, "n_missing": iv.n_nan,
            "clipped": (low is not None and low != iv.low) or (high is not None
                                                              and high != iv.high)}


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
            res = paired_difference([per_q[i][q] for q in shared],
                                    [per_q[j][q] for q in shared], confidence=confidence)
            rows.append({"a": names[i], "b": names[j], "n": res.n, "mean_a": res.mean_a,
                         "mean_b": res.mean_b, "diff": res.diff, "low": res.low,
                         "high": res.high, "pvalue": res.pvalue, "test": res.test})
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


def build_report(
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


# --- Markdown -------------------------------------------------------------------------


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "inf":
        return "-"
    if spec == ",d":
        return f"{round(float(v)):,}"
    if spec == "$":
        return f"${float(v):.4f}"
    if spec == "%":
        return f"{100 * float(v):.0f}%"
    if spec == "score":
        f = float(v)
        return f"{f:.0f}" if f == int(f) else f"{f:.1f}"
    if spec == "auto":
        f = float(v)
        return f"{int(f)}" if f == int(f) else f"{f:.3f}"
    if spec == "s":
        return md_escape(str(v))
    return f"{float(v):{spec}}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
           "| " + " | ".join("---" for _ in headers) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


def label_for(key: str) -> str:
    """Upstream's label: ``key.replace("_", " ").title()``."""
    return key.replace("_", " ").title()


CODE_QUALITY_ROWS = (
    ("Source Lines (SLOC)", "sloc", ",d"), ("Comment Ratio", "comment_ratio", "%"),
    ("Avg Cyclomatic Complexity", "avg_cyclomatic_complexity", ".1f"),
    ("Max Cyclomatic Complexity", "max_cyclomatic_complexity", ",d"),
    ("Complexity Grade", "complexity_grade", "s"),
    ("Maintainability Index", "maintainability_index", ".1f"),
    ("Maintainability Grade", "maintainability_grade", "s"),
    ("Halstead Volume", "halstead_volume", ".0f"),
    ("Halstead Difficulty", "halstead_difficulty", ".1f"),
    ("Halstead Bugs (est.)", "halstead_bugs", ".2f"), ("Total Imports", "num_imports", ",d"),
    ("Framework Imports", "num_framework_imports", ",d"), ("Classes", "num_classes", ",d"),
    ("Functions", "num_functions", ",d"),
    ("Type Annotation Coverage", "type_annotation_ratio", "%"),
)
REVIEW_ROWS = ("readability", "idiomatic_usage", "error_handling", "extensibility",
               "testability", "documentation", "abstraction")


def truncate_answer(text: str | None, limit: int = ANSWER_LIMIT) -> str:
    """Upstream's truncation: the first ``limit`` characters plus "..." when longer."""
    if text is None:
        return "-"
    return text[:limit] + "..." if len(text) > limit else text


def render_markdown(report: dict[str, Any]) -> str:
    """Markdown of a :func:`build_report` model (upstream layout, escaped, by id)."""
    fws = report["frameworks"]
    names = [f["name"] for f in fws]
    head = ["Metric", *names]
    lines = ["# Framework Comparison Report", "", f"Generated: {report['generated']}",
             f"Scenario: {md_escape(report['scenario'])}",
             f"Scenario Type: {md_escape(report.get('scenario_type') or '-')}",
             f"Mode: {md_escape(report['mode'])}", f"Profile: {md_escape(report['profile'])}",
             f"Questions: {report['n_questions']}"]
    if any((f["run_count"] or 1) > 1 for f in fws):
        lines.append("Runs per framework: " + ", ".join(
            f"{md_escape(f['name'])}: {f['run_count']}" for f in fws))
    lines.append(f"Scorecard normalisation: {report['scorecard_mode']}")
    lines += ["", "## Summary", ""]

    def judge(f: dict[str, Any], key: str) -> str:
        text = _fmt(f["summary"][f"avg_{key}"], ".1f")
        sd = f["run_stddev"].get(key)
        if (f["run_count"] or 1) > 1 and sd is not None:
            text += f" ±{sd:.2f}"
        return text

    rows = [
        ["Avg Latency (s)", *[_fmt(f["summary"]["avg_latency"], ".2f") for f in fws]],
        ["Total Tokens", *[_fmt(f["summary"]["total_tokens"], ",d") for f in fws]],
        ["Est. Cost (USD)", *[_fmt(f["summary"]["total_cost_usd"], "$") for f in fws]],
        ["Avg Correctness (1-5)", *[judge(f, "correctness") for f in fws]],
        ["Avg Completeness (1-5)", *[judge(f, "completeness") for f in fws]],
        ["Avg Faithfulness (1-5)", *[judge(f, "faithfulness") for f in fws]],
        ["Avg Retrieval Precision",
         *[_fmt(f["summary"]["avg_retrieval_precision"], ".2f") for f in fws]],
        ["Avg Retrieval Recall",
         *[_fmt(f["summary"]["avg_retrieval_recall"], ".2f") for f in fws]],
    ]
    ci = [f["correctness_interval"] for f in fws]
    pct = f"{round(100 * report['confidence'])}%"
    rows.append([f"Correctness {pct} CI", *[
        "-" if c["low"] is None else f"[{c['low']:.2f}, {c['high']:.2f}]" for c in ci]])
    lines += _table(head, rows)

    lines += ["## Derived Scorecard (0-100)", "", SCORECARD_CAVEAT
              + f" Normalisation: `{report['scorecard_mode']}`.", ""]
    sc_rows = [[label, *[("N/A" if f["scorecard"][key] is None
                          else f"{f['scorecard'][key]:.1f}") for f in fws]]
               for label, key in (("Capability", "capability"), ("Efficiency", "efficiency"),
                                  ("Developer Experience", "developer_experience"))]
    lines += _table(["Axis", *names], sc_rows)

    lines += ["## Runtime Distribution", ""]
    lines += _table(head, [["Latency p50 (s)", *[_fmt(f["latency"]["p50"], ".2f") for f in fws]],
                           ["Latency p95 (s)", *[_fmt(f["latency"]["p95"], ".2f") for f in fws]]])

    keys = sorted({k for f in fws for k in f["scenario_metrics"]})
    if keys:
        lines += ["## Scenario-Specific Metrics", ""]
        lines += _table(head, [[md_escape(label_for(k)),
                                *[_fmt(f["scenario_metrics"].get(k), "auto") for f in fws]]
                               for k in keys])

    if any(f["code_quality"] for f in fws):
        lines += ["## Code Quality — Static Metrics", ""]
        lines += _table(head, [[label, *[_fmt((f["code_quality"] or {}).get(key), spec)
                                         for f in fws]]
                               for label, key, spec in CODE_QUALITY_ROWS])
    if any(f["code_review"] for f in fws):
        lines += ["## Code Quality — LLM Code Review", ""]
        rrows = [[label_for(k), *[_fmt((f["code_review"] or {}).get(k), "score") for f in fws]]
                 for k in REVIEW_ROWS]
        rrows.append(["**Average**", *[_fmt((f["code_review"] or {}).get("avg_score"), ".2f")
                                       for f in fws]])
        lines += _table(head, rrows)

    if report["paired_correctness"]:
        lines += ["## Paired Comparison of Correctness", "",
                  "Difference of mean correctness (A - B) on the questions both answered, "
                  f"with a {pct} interval; p-values from a Wilcoxon signed-rank test, "
                  "Holm-adjusted over all pairs.", ""]
        lines += _table(["A", "B", "Shared questions", "A - B", f"{pct} CI", "p", "p (Holm)"],
                        [[md_escape(r["a"]), md_escape(r["b"]), str(r["n"]),
                          _fmt(r["diff"], "+.2f"),
                          "-" if r["low"] is None else f"[{r['low']:+.2f}, {r['high']:+.2f}]",
                          _fmt(r["pvalue"], ".3f"), _fmt(r.get("pvalue_holm"), ".3f")]
                         for r in report["paired_correctness"]])

    lines += ["## Per-Question Results", ""]
    for q in report["questions"]:
        lines += [f"### {md_escape(q['question_id'])}: {md_escape(q['question_text'])}", ""]
        res = q["results"]

        def cell(name: str, key: str, spec: str, res: dict[str, Any] = res) -> str:
            return _fmt(res[name][key], spec) if name in res else "N/A"

        qrows = [["Latency (s)", *[cell(n, "latency_s", ".2f") for n in names]],
                 ["Tokens", *[cell(n, "total_tokens", ",d") for n in names]],
                 ["Correctness", *[cell(n, "correctness", "score") for n in names]],
                 ["Completeness", *[cell(n, "completeness", "score") for n in names]],
                 ["Faithfulness", *[cell(n, "faithfulness", "score") for n in names]],
                 ["Retrieval Prec", *[cell(n, "retrieval_precision", ".2f") for n in names]],
                 ["Retrieval Recall", *[cell(n, "retrieval_recall", ".2f") for n in names]]]
        extra_keys = sorted({k for r in res.values() for k in r["extra_metrics"]})
        for k in extra_keys:
            qrows.append([md_escape(label_for(k)), *[
                _fmt(res[n]["extra_metrics"].get(k), "auto") if n in res else "N/A"
                for n in names]])
        lines += _table(head, qrows)
        lines += ["**Answers:**", ""]
        for n in names:
            if n in res:
                answer = truncate_answer(res[n]["answer"])
                lines.append(f"- **{md_escape(n)}**: {md_escape(answer)}")
        lines.append("")
    if report["notes"]:
        lines += ["## Notes", ""] + [f"- {md_escape(n)}" for n in report["notes"]] + [""]
    return "\n".join(lines)
