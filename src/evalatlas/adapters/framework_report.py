"""Agent-framework comparison reports (Markdown): the results upstream actually publishes.

``rballet/poc-ai-workflow-frameworks`` commits its comparisons as
``results/comparison_<scenario>_<mode>.md``; the results JSON that
:mod:`evalatlas.adapters.framework_results` reads stays on the machine that ran them. So a
user of that project typically holds only the reports. A report has a header (Scenario,
Scenario Type, Mode, Profile, Questions), a ``## Summary`` table (one column per
framework), a scorecard, latency percentiles, scenario-specific aggregates, the static
code-quality table and ``## Per-Question Results``: per question a table (latency,
tokens, judge correctness/completeness/faithfulness, retrieval precision/recall, the
profile's per-question metrics) and each framework's answer cut to 300 characters.

Each framework column becomes the upstream results dict it was printed from and goes
through the same mapping as a results file (:func:`experiment_from_results`,
:func:`episode_from_question`), so a report and the JSON give the same records:
``reward = (correctness - 1) / 4``, a timed-out or failed query has status ``timeout`` /
``error`` and reward 0. What the report does not print stays **missing**, never made up:
per-question cost (only each framework's total is printed; it is kept in
``extra["upstream_aggregates"]["total_cost_usd"]``), the prompt/completion split of the
tokens, the model, the expected answer and the sources. Answers are as printed (cut by
upstream); ``extra["answer_truncated"]`` says so. The printed aggregates (Summary,
scenario-specific, scorecard, latency percentiles) are kept in the experiment's
``extra["report"]`` so they can be compared with evalatlas's own numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.framework_results import (
    ERROR_ANSWER,
    TIMEOUT_ANSWER,
    episode_from_question,
    experiment_from_results,
)
from evalatlas.errors import InputError, Problem

TITLE = b"# Framework Comparison Report"
SECTIONS = {"Summary", "Derived Scorecard (0-100)", "Runtime Distribution",
            "Scenario-Specific Metrics", "Code Quality — Static Metrics",
            "Code Quality — LLM Code Review", "Per-Question Results"}
"""Upstream's section headings; an answer's own ``## ...`` line is not one."""
HEADER_KEYS = ("Generated", "Scenario", "Scenario Type", "Mode", "Profile", "Questions")
QUESTION_KEYS = {"Latency (s)": "latency_seconds", "Tokens": "total_tokens",
                 "Correctness": "correctness_score", "Completeness": "completeness_score",
                 "Faithfulness": "faithfulness_score",
                 "Retrieval Prec": "retrieval_precision",
                 "Retrieval Recall": "retrieval_recall"}
SUMMARY_KEYS = {"Avg Latency (s)": "avg_latency", "Total Tokens": "total_tokens",
                "Est. Cost (USD)": "total_cost_usd",
                "Avg Correctness (1-5)": "avg_correctness",
                "Avg Completeness (1-5)": "avg_completeness",
                "Avg Faithfulness (1-5)": "avg_faithfulness",
                "Avg Retrieval Precision": "avg_retrieval_precision",
                "Avg Retrieval Recall": "avg_retrieval_recall"}
CODE_QUALITY_KEYS = {
    "Source Lines (SLOC)": "sloc", "Comment Ratio": "comment_ratio",
    "Avg Cyclomatic Complexity": "avg_cyclomatic_complexity",
    "Max Cyclomatic Complexity": "max_cyclomatic_complexity",
    "Complexity Grade": "complexity_grade", "Maintainability Index": "maintainability_index",
    "Maintainability Grade": "maintainability_grade", "Halstead Volume": "halstead_volume",
    "Halstead Difficulty": "halstead_difficulty", "Halstead Bugs (est.)": "halstead_bugs",
    "Total Imports": "num_imports", "Framework Imports": "num_framework_imports",
    "Classes": "num_classes", "Functions": "num_functions",
    "Type Annotation Coverage": "type_annotation_ratio",
}
_QUESTION = re.compile(r"^### (\S+?): (.+)$")
_ANSWER = re.compile(r"^- \*\*(.+?)\*\*: (.*)$")
_HEADER = re.compile(r"^(" + "|".join(re.escape(k) for k in HEADER_KEYS) + r"): (.*)$")
_CUT = "..."


def _detect(path: Path) -> bool:
    return path.suffix.lower() == ".md" and head_bytes(path, 64).startswith(TITLE)


def cell_value(cell: str) -> float | str | None:
    """A printed cell as a number (``6,577``, ``$0.0082``, ``92%`` -> 0.92), a grade
    letter as is; anything else (``-``, ``N/A``, empty) is missing."""
    c = cell.strip()
    if len(c) == 1 and c in "ABCDEF":
        return c
    try:
        if c.endswith("%"):
            return float(c[:-1].replace(",", "")) / 100
        return float(c.replace("$", "").replace(",", ""))
    except ValueError:
        return None


def parse_report(text: str) -> dict[str, Any]:
    """Header, the tables of each section (row label -> cells) and the per-question
    tables and answers of a report. The framework names are the columns of the tables."""
    header: dict[str, str] = {}
    for line in text.splitlines()[:12]:
        m = _HEADER.match(line)
        if m:
            header[m.group(1)] = m.group(2).strip()
    sections: dict[str, dict[str, list[str]]] = {}
    questions: list[dict[str, Any]] = []
    section: str | None = None
    names: list[str] = []
    current: dict[str, Any] | None = None
    answer_of: str | None = None
    for line in text.splitlines():
        if line.startswith("## ") and line[3:].strip() in SECTIONS:
            section, current, answer_of = line[3:].strip(), None, None
            continue
        qm = _QUESTION.match(line) if section == "Per-Question Results" else None
        if qm:
            current = {"id": qm.group(1), "text": qm.group(2), "table": {}, "answers": {}}
            questions.append(current)
            answer_of = None
            continue
        if answer_of is None and (line.startswith("| Metric |") or line.startswith("| Axis |")):
            names = [c.strip() for c in line.strip().strip("|").split("|")][1:]
            continue
        if answer_of is None and line.startswith("| ---"):
            continue
        if answer_of is None and line.startswith("| ") and section:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            target = current["table"] if current is not None \
                else sections.setdefault(section, {})
            target[cells[0]] = cells[1:]
            continue
        if current is not None:
            m = _ANSWER.match(line)
            if m and m.group(1) in names:
                answer_of = m.group(1)
                current["answers"][answer_of] = m.group(2)
            elif answer_of is not None:
                current["answers"][answer_of] += "\n" + line
    for q in questions:
        for k, v in q["answers"].items():
            q["answers"][k] = v.rstrip("\n")
    return {"header": header, "names": names, "sections": sections, "questions": questions}


def _column(rows: dict[str, list[str]], i: int) -> dict[str, float | str | None]:
    return {label: cell_value(cells[i]) if i < len(cells) else None
            for label, cells in rows.items()}


def results_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One upstream-format results dict per framework column; what is not printed is
    None (see the module docstring)."""
    header, sections = report["header"], report["sections"]
    out = []
    for i, name in enumerate(report["names"]):
        summary = _column(sections.get("Summary", {}), i)
        static = {CODE_QUALITY_KEYS[k]: v for k, v in
                  _column(sections.get("Code Quality — Static Metrics", {}), i).items()
                  if k in CODE_QUALITY_KEYS}
        questions = []
        for q in report["questions"]:
            answer = q["answers"].get(name)
            row: dict[str, Any] = {
                "question_id": q["id"], "question_text": q["text"], "expected_answer": None,
                "sources_expected": None, "sources_retrieved": None, "actual_answer": answer,
                "model_name": "timeout" if answer == TIMEOUT_ANSWER
                else "error" if answer == ERROR_ANSWER else None,
                "prompt_tokens": None, "completion_tokens": None,
                "estimated_cost_usd": None,
            }
            extra_metrics: dict[str, Any] = {}
            for label, value in _column(q["table"], i).items():
                if label in QUESTION_KEYS:
                    row[QUESTION_KEYS[label]] = value
                else:
                    extra_metrics[label.lower().replace(" ", "_")] = value
            row["extra_metrics"] = extra_metrics
            questions.append(row)
        out.append({
            "framework_name": name, "scenario_name": header.get("Scenario"),
            "scenario_type": header.get("Scenario Type"),
            "evaluation_mode": header.get("Mode"),
            "evaluation_profile": header.get("Profile"),
            **{key: summary.get(label) for label, key in SUMMARY_KEYS.items()},
            "extra_aggregates": {k.lower().replace(" ", "_"): v for k, v in _column(
                sections.get("Scenario-Specific Metrics", {}), i).items()},
            "questions": questions,
            "code_quality": {"source_file": None, "source_sloc": static.get("sloc"),
                             "static_metrics": static, "code_review": None}
            if static else None,
            "run_id": 0, "run_count": 1,
            "report": {
                "generated": header.get("Generated"),
                "scorecard": _column(sections.get("Derived Scorecard (0-100)", {}), i),
                "runtime": _column(sections.get("Runtime Distribution", {}), i),
                "summary": summary,
            },
        })
    return out


def read_report(path: Path) -> Iterator[Item]:
    """The experiments (one per framework column) and episodes of one report."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield Problem(file, f"cannot read the report: {exc}")
        return
    report = parse_report(text)
    missing = [k for k in ("Scenario", "Mode") if k not in report["header"]]
    if missing or not report["names"] or not report["questions"]:
        what = f"no {', '.join(missing)} line in the header" if missing else \
            "no framework columns" if not report["names"] else "no per-question results"
        yield Problem(file, f"not a readable framework comparison report: {what}")
        return
    for results in results_of(report):
        try:
            exp = experiment_from_results(results, path)
        except InputError as exc:
            yield exc.problem
            continue
        exp.extra["report"] = results["report"]
        exp.extra["source"] = "comparison report (Markdown)"
        yield exp
        for q in results["questions"]:
            try:
                ep = episode_from_question(q, experiment_id=exp.experiment_id, run=0,
                                           file=file)
            except InputError as exc:
                yield exc.problem
                continue
            if isinstance(ep.output_text, str) and ep.output_text.endswith(_CUT) \
                    and ep.status == "completed":
                ep.extra["answer_truncated"] = True
            yield ep


ADAPTER = Adapter(
    name="framework-report",
    kind="file",
    detect=_detect,
    read=read_report,
    priority=31,
    description="agent-framework comparison report (rballet/poc-ai-workflow-frameworks "
    "results/comparison_*.md): one experiment per framework column, one episode per "
    "question; cost per question and token split are not printed and stay missing",
)
