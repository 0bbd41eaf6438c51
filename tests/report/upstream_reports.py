"""Rebuild upstream results JSON files from the tables of a committed comparison report.

The fixtures in ../shared/fixtures/frameworks/results/ are real upstream outputs; no
results JSON was ever published, so the tests rebuild one file per framework from the
report's own tables (per-question latency, tokens, judge scores, retrieval, extra
metrics; answers; the code-quality table) and check that evalatlas recomputes the
printed aggregates, scorecard and latency percentiles. Per-question cost is not printed:
the summary's total cost is spread over questions in proportion to their tokens, which
keeps the total exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalatlas.adapters.framework_report import CODE_QUALITY_KEYS

RESULTS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "frameworks" \
    / "results"
TIMEOUT_ANSWER = "Query timed out before producing an answer."

CQ_KEYS = CODE_QUALITY_KEYS  # the report's labels, as the adapter reads them
SECTIONS = {"Summary", "Derived Scorecard (0-100)", "Runtime Distribution",
            "Scenario-Specific Metrics", "Code Quality — Static Metrics",
            "Code Quality — LLM Code Review", "Per-Question Results"}
"""Upstream's section headings; an answer's own "## ..." line is not one (quirk 13)."""
Q_KEYS = {"Latency (s)": "latency_seconds", "Tokens": "total_tokens",
          "Correctness": "correctness_score", "Completeness": "completeness_score",
          "Faithfulness": "faithfulness_score", "Retrieval Prec": "retrieval_precision",
          "Retrieval Recall": "retrieval_recall"}


def _value(cell: str) -> Any:
    c = cell.strip()
    if c in {"A", "B", "C", "D", "E", "F"}:
        return c
    if c.endswith("%"):
        return float(c[:-1]) / 100
    c = c.replace("$", "").replace(",", "")
    return float(c)


def parse_report(path: Path) -> dict[str, Any]:
    """Header, tables by section, and per-question tables + answers of a report."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = {}
    for line in lines[:12]:
        m = re.match(r"^(Scenario|Scenario Type|Mode|Profile|Questions): (.*)$", line)
        if m:
            header[m.group(1)] = m.group(2)
    sections: dict[str, dict[str, list[str]]] = {}
    questions: list[dict[str, Any]] = []
    section = None
    names: list[str] = []
    current: dict[str, Any] | None = None
    answer_fw: str | None = None
    for line in lines:
        if line.startswith("## ") and line[3:].strip() in SECTIONS:
            section, current, answer_fw = line[3:].strip(), None, None
            continue
        qm = re.match(r"^### (q\w*): (.+)$", line)
        if qm and section == "Per-Question Results":
            qid, text = qm.group(1), qm.group(2)
            current = {"id": qid, "text": text, "table": {}, "answers": {}}
            questions.append(current)
            answer_fw = None
            continue
        if line.startswith("| Metric |") or line.startswith("| Axis |"):
            names = [c.strip() for c in line.strip("|").split("|")][1:]
            continue
        if line.startswith("| ---"):
            continue
        if line.startswith("| ") and section and answer_fw is None:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            target = current["table"] if current is not None else \
                sections.setdefault(section, {})
            target[cells[0]] = cells[1:]
            continue
        if current is not None:
            m = re.match(r"^- \*\*(.+?)\*\*: (.*)$", line)
            if m and m.group(1) in names:
                answer_fw = m.group(1)
                current["answers"][answer_fw] = m.group(2)
            elif answer_fw is not None and not line.startswith("**Answers"):
                current["answers"][answer_fw] += "\n" + line
    for q in questions:
        for k, v in q["answers"].items():
            q["answers"][k] = v.rstrip("\n")
    return {"header": header, "names": names, "sections": sections, "questions": questions}


def rebuild_results(path: Path) -> list[dict[str, Any]]:
    """One upstream-format results dict per framework column of the report."""
    rep = parse_report(path)
    summary = rep["sections"]["Summary"]
    names = rep["names"]
    cq = rep["sections"].get("Code Quality — Static Metrics", {})
    out = []
    for i, name in enumerate(names):
        total_tokens = _value(summary["Total Tokens"][i])
        total_cost = _value(summary["Est. Cost (USD)"][i])
        qs = []
        for q in rep["questions"]:
            t = q["table"]
            row: dict[str, Any] = {"question_id": q["id"], "question_text": q["text"],
                                   "expected_answer": "", "sources_expected": None,
                                   "sources_retrieved": None}
            extra: dict[str, Any] = {}
            for label, cells in t.items():
                v = _value(cells[i])
                if label in Q_KEYS:
                    row[Q_KEYS[label]] = v
                else:
                    extra[label.lower().replace(" ", "_")] = v
            row["total_tokens"] = int(row["total_tokens"])
            row["prompt_tokens"] = row["total_tokens"]
            row["completion_tokens"] = 0
            row["estimated_cost_usd"] = (total_cost * row["total_tokens"] / total_tokens
                                         if total_tokens else 0.0)
            answer = q["answers"].get(name, "")
            row["actual_answer"] = answer
            row["model_name"] = "timeout" if answer == TIMEOUT_ANSWER else "gpt-5-mini"
            row["judge_reasoning"] = ""
            row["extra_metrics"] = extra
            qs.append(row)
        static = {key: _value(cq[label][i]) for label, key in CQ_KEYS.items() if label in cq}
        out.append({
            "framework_name": name, "scenario_name": rep["header"]["Scenario"],
            "scenario_type": rep["header"]["Scenario Type"],
            "evaluation_mode": rep["header"]["Mode"],
            "evaluation_profile": rep["header"]["Profile"], "questions": qs,
            "code_quality": {"source_file": f"{name}.py", "source_sloc": static.get("sloc"),
                             "static_metrics": static, "code_review": None} if static else None,
            "run_id": 0, "run_count": 1,
        })
    return out


def write_results(path: Path, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for r in rebuild_results(path):
        slug = r["framework_name"].lower().replace(" ", "_")
        f = out_dir / f"{slug}_{r['scenario_name']}_20260212_000000.json"
        f.write_text(json.dumps(r, indent=2), encoding="utf-8")
        files.append(f)
    return files
