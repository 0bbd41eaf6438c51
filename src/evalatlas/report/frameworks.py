"""The framework comparison report (seed 003, reference section 14): a JSON-able model and
its Markdown rendering.

:func:`framework_comparison` computes every number (through the metric and statistics
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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalatlas.analysis.framework_report import (
    ANSWER_LIMIT,
    SCHEMA,
    SCORECARD_CAVEAT,
    framework_comparison,
)
from evalatlas.results import html_repr, short_repr
from evalatlas.text import markdown_table, md_escape

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ANSWER_LIMIT", "SCHEMA", "SCORECARD_CAVEAT", "framework_comparison", "label_for",
           "render_markdown", "truncate_answer"]


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
    return [*markdown_table(list(headers), [list(r) for r in rows], escape=False), ""]


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


class FrameworkComparison(dict[str, Any]):
    """The agent-framework comparison report (``ea.compare_frameworks``): the JSON-ready
    dict (summary, scorecard, latency, profile metrics, code quality, per-question
    results, correctness intervals, paired differences) with :meth:`to_dict` (exactly
    ``evalatlas compare-frameworks --format json``) and :meth:`to_markdown` (the full
    report, ``--format markdown``). A dict, so code that read the report as one still
    does. As a result (:class:`evalatlas.results.Result`): ``rows`` are the frameworks'
    rows, ``meta`` the scalar report values."""

    @property
    def schema(self) -> str:
        return str(self.get("schema", ""))

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row per framework (its summary, scorecard, latency ... nested)."""
        return list(self.get("frameworks") or [])

    @property
    def meta(self) -> dict[str, Any]:
        return {k: v for k, v in self.items()
                if k != "schema" and not isinstance(v, dict | list)}

    @property
    def notes(self) -> list[str]:
        return [str(n) for n in self.get("notes") or []]

    def to_pandas(self) -> pd.DataFrame:
        """The framework rows as a DataFrame (nested values stay dicts)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def __repr__(self) -> str:
        return short_repr(self)

    def _repr_html_(self) -> str:
        return html_repr(self)

    def to_dict(self) -> dict[str, Any]:
        return dict(self)

    def to_markdown(self) -> str:
        return render_markdown(self)


def render_markdown(report: dict[str, Any]) -> str:
    """Markdown of a :func:`framework_comparison` model (upstream layout, escaped, by id)."""
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
