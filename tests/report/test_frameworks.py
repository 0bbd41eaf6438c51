"""The comparison report: reproduce the real upstream reports, match by id, escape answers."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from upstream_reports import parse_report, rebuild_results, write_results

import evalatlas as ea
from evalatlas.metrics.scorecard import ScorecardInput, scorecard
from evalatlas.report.frameworks import framework_comparison, label_for, render_markdown

REPORTS = ["rag_qa_baseline", "multihop_qa_capability", "multi_agent_coordination_capability"]


def _report(path: Path, tmp_path: Path, mode: str = "upstream") -> dict:
    files = write_results(path, tmp_path)
    data, problems = ea.read_framework_results(files)
    assert problems == []
    return framework_comparison(data, scorecard_mode=mode)


def _num(cell: str) -> float:
    return float(cell.replace("$", "").replace(",", "").replace("%", ""))


@pytest.mark.parametrize("name", REPORTS)
def test_upstream_scorecard_and_latency_reproduce_the_published_report(
        name, upstream_reports, tmp_path):
    path = upstream_reports[name]
    printed = parse_report(path)["sections"]
    rep = _report(path, tmp_path)
    names = [f["name"] for f in rep["frameworks"]]
    assert names == parse_report(path)["names"]
    sc = printed["Derived Scorecard (0-100)"]
    rt = printed["Runtime Distribution"]
    summary = printed["Summary"]
    for i, fw in enumerate(rep["frameworks"]):
        s = fw["scorecard"]
        # inputs are the report's own rounded per-question values: agree within rounding
        assert s["capability"] == pytest.approx(_num(sc["Capability"][i]), abs=0.15), fw["name"]
        assert s["efficiency"] == pytest.approx(_num(sc["Efficiency"][i]), abs=0.15), fw["name"]
        assert fw["latency"]["p50"] == pytest.approx(_num(rt["Latency p50 (s)"][i]), abs=0.02)
        assert fw["latency"]["p95"] == pytest.approx(_num(rt["Latency p95 (s)"][i]), abs=0.02)
        sm = fw["summary"]
        assert round(sm["avg_latency"], 2) == pytest.approx(
            _num(summary["Avg Latency (s)"][i]), abs=0.011)
        assert round(sm["total_tokens"] or 0) == _num(summary["Total Tokens"][i])
        for key, label in (("avg_correctness", "Avg Correctness (1-5)"),
                           ("avg_completeness", "Avg Completeness (1-5)"),
                           ("avg_faithfulness", "Avg Faithfulness (1-5)")):
            assert f"{sm[key]:.1f}" == summary[label][i]
        assert sm["avg_retrieval_precision"] == pytest.approx(
            _num(summary["Avg Retrieval Precision"][i]), abs=0.006)


@pytest.mark.parametrize("name", REPORTS)
def test_developer_experience_within_the_rounding_of_mi_and_cc(name, upstream_reports,
                                                               tmp_path):
    """The report prints MI and CC to one decimal, and min-max scaling amplifies that
    rounding (a CC range of 1.0 turns +/-0.05 into +/-10% of a part), so the printed DX
    must lie within the range reachable by moving each printed MI and CC by +/-0.05."""
    path = upstream_reports[name]
    printed = parse_report(path)["sections"]["Derived Scorecard (0-100)"]
    rep = _report(path, tmp_path)
    cqs = [f["code_quality"] for f in rep["frameworks"]]
    n = len(cqs)
    lo, hi = [1e9] * n, [-1e9] * n
    for mi_d in itertools.product((-0.05, 0.05), repeat=n):
        for cc_d in ((0.0,) * n, *itertools.product((-0.05, 0.05), repeat=n)):
            inputs = [ScorecardInput(
                str(i), maintainability_index=cq["maintainability_index"] + mi_d[i],
                avg_cyclomatic_complexity=cq["avg_cyclomatic_complexity"] + cc_d[i],
                type_annotation_ratio=cq["type_annotation_ratio"]) for i, cq in enumerate(cqs)]
            for i, row in enumerate(scorecard(inputs, "upstream")):
                lo[i] = min(lo[i], row["developer_experience"])
                hi[i] = max(hi[i], row["developer_experience"])
    for i, fw in enumerate(rep["frameworks"]):
        dx = _num(printed["Developer Experience"][i])
        assert lo[i] - 0.3 <= dx <= hi[i] + 0.3, (fw["name"], lo[i], dx, hi[i])
        assert lo[i] - 0.01 <= fw["scorecard"]["developer_experience"] <= hi[i] + 0.01


@pytest.mark.parametrize("name", ["multihop_qa_capability", "multi_agent_coordination_capability"])
def test_scenario_specific_metrics_reproduce(name, upstream_reports, tmp_path):
    path = upstream_reports[name]
    printed = parse_report(path)["sections"]["Scenario-Specific Metrics"]
    rep = _report(path, tmp_path)
    for i, fw in enumerate(rep["frameworks"]):
        ours = {label_for(k): v for k, v in fw["scenario_metrics"].items()}
        assert set(ours) == set(printed), fw["name"]
        for label, cells in printed.items():
            assert ours[label] == pytest.approx(_num(cells[i]), abs=0.0015), (fw["name"], label)


def test_fixed_scorecard_differs_from_upstream_as_documented(upstream_reports, tmp_path):
    path = upstream_reports["multi_agent_coordination_capability"]
    up = _report(path, tmp_path / "u")
    rel = _report(path, tmp_path / "r", mode="relative")
    for u, r in zip(up["frameworks"], rel["frameworks"], strict=True):
        assert r["scorecard"]["efficiency"] == pytest.approx(3 * u["scorecard"]["efficiency"])
        # coordination metrics count: Pydantic AI's capability now includes them
        assert r["scorecard"]["parts"]["capability_signals"]
    assert up["frameworks"][0]["scorecard"]["capability"] == pytest.approx(94.67, abs=0.01)
    assert rel["frameworks"][0]["scorecard"]["capability"] != pytest.approx(94.67, abs=0.5)


def test_markdown_layout_escaping_and_json_numbers(upstream_reports, tmp_path):
    path = upstream_reports["multihop_qa_capability"]
    rep = _report(path, tmp_path)
    md = render_markdown(rep)
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings[:5] == ["## Summary", "## Derived Scorecard (0-100)",
                            "## Runtime Distribution", "## Scenario-Specific Metrics",
                            "## Code Quality — Static Metrics"]
    assert "## Per-Question Results" in headings
    # the CrewAI answer of q4 contains "## Payments Engineering Team": escaped, no heading
    assert "## Payments Engineering Team" not in headings
    assert len([h for h in md.splitlines() if h.startswith("### ")]) == 9
    # every scorecard and latency number of the markdown is in the JSON
    for f in rep["frameworks"]:
        assert f"{f['scorecard']['capability']:.1f}" in md
        assert f"{f['latency']['p95']:.2f}" in md
    json.dumps(rep, allow_nan=False)
    assert rep["schema"] == "evalatlas.compare-frameworks/1"
    assert len(rep["paired_correctness"]) == 6  # 4 frameworks -> 6 pairs
    pair = rep["paired_correctness"][0]
    assert pair["n"] == 9 and pair["pvalue_holm"] >= pair["pvalue"]
    ci = rep["frameworks"][1]["correctness_interval"]
    assert ci["low"] < ci["mean"] < ci["high"] and ci["n"] == 9
    for f in rep["frameworks"]:  # bounded intervals: inside the score range
        c = f["correctness_interval"]
        assert 0.0 <= c["low"] <= c["mean"] <= c["high"] <= 5.0


def test_rows_matched_by_question_id_not_position(upstream_reports, tmp_path):
    path = upstream_reports["rag_qa_baseline"]
    results = rebuild_results(path)
    results[1]["questions"].reverse()  # LangGraph's list in another order
    files = []
    for k, r in enumerate(results):
        f = tmp_path / f"r{k}.json"
        f.write_text(json.dumps(r), encoding="utf-8")
        files.append(f)
    data, _ = ea.read_framework_results(files)
    rep = framework_comparison(data, scorecard_mode="upstream")
    printed = parse_report(path)["questions"]
    for pq, q in zip(printed, rep["questions"], strict=True):
        assert pq["id"] == q["question_id"]
        for i, name in enumerate(parse_report(path)["names"]):
            assert f"{q['results'][name]['latency_s']:.2f}" == pq["table"]["Latency (s)"][i]


def test_answers_escaped_and_truncated(tmp_path):
    answer = "## Shipping Credit Policy\n| a | b |\n<script>x</script> " + "y" * 400
    r = {"framework_name": "Evil <b>FW</b>", "scenario_name": "s", "evaluation_mode": "m",
         "questions": [{"question_id": "q1", "question_text": "What *is* [this](x)?",
                        "actual_answer": answer, "latency_seconds": 1.0, "total_tokens": 5,
                        "correctness_score": 5, "completeness_score": 5,
                        "faithfulness_score": 5, "model_name": "gpt-5-mini"}],
         "run_id": 0, "run_count": 1}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(r), encoding="utf-8")
    data, _ = ea.read_framework_results([f])
    md = render_markdown(framework_comparison(data))
    assert not any(line.startswith("## Shipping") for line in md.splitlines())
    assert "<script>" not in md and "&lt;script&gt;" in md
    line = next(x for x in md.splitlines() if x.startswith("- **"))
    assert line.endswith("...")
    assert len(re.findall("y", line)) < 300
    assert "\\*is\\*" in md and "<b>" not in md


def test_store_round_trip_gives_the_same_report(upstream_reports, tmp_path):
    from evalatlas.api import framework_data as load_framework_data
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.ingest import ingest_paths

    path = upstream_reports["multi_agent_coordination_capability"]
    files = write_results(path, tmp_path / "res")
    direct = _report(path, tmp_path / "direct")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, files)
        data = load_framework_data(store, scenario="multi_agent_coordination",
                                   mode="capability")
    assert len(data) == 4
    by_name = {d.display_name: d for d in data}
    ordered = [by_name[f["name"]] for f in direct["frameworks"]]
    stored = framework_comparison(ordered, scorecard_mode="upstream")
    for a, b in zip(direct["frameworks"], stored["frameworks"], strict=True):
        assert a["scorecard"]["capability"] == pytest.approx(b["scorecard"]["capability"])
        assert a["scorecard"]["efficiency"] == pytest.approx(b["scorecard"]["efficiency"])
        assert a["latency"] == pytest.approx(b["latency"])
        assert a["scenario_metrics"] == pytest.approx(b["scenario_metrics"])
    assert [q["question_id"] for q in stored["questions"]] == [f"q{i}" for i in range(1, 11)]
