"""``evalatlas compare-frameworks``: from results files, from the store, multi-run, errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.compare_frameworks import ScorecardMode
from evalatlas.cli.main import app
from evalatlas.metrics.scorecard import MODES

SCENARIOS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "frameworks" \
    / "scenarios"


def _q(qid, c, answer, sources, lat, tokens=1000, model="gpt-5-mini", extra=None):
    return {"question_id": qid, "question_text": f"Question {qid}?", "expected_answer": "x",
            "actual_answer": answer, "sources_expected": ["server_registry.md"],
            "sources_retrieved": sources, "latency_seconds": lat, "prompt_tokens": tokens,
            "completion_tokens": 0, "total_tokens": tokens,
            "estimated_cost_usd": tokens * 0.00025 / 1000, "model_name": model,
            "correctness_score": c, "completeness_score": c, "faithfulness_score": c,
            "judge_reasoning": "r", "retrieval_precision": 0.0, "retrieval_recall": 0.0,
            "extra_metrics": extra or {}}


def _doc(name, run, scores, lat=10.0):
    qs = [_q(f"q{i + 1}", c, f"prod-api-03 answer {i} run {run}", ["server_registry.md"],
             lat + i) for i, c in enumerate(scores)]
    return {"framework_name": name, "scenario_name": "multihop_qa", "scenario_type": "rag_qa",
            "evaluation_mode": "capability", "evaluation_profile": "multihop_chain_qa",
            "questions": qs, "code_quality": None, "run_id": run, "run_count": 1}


def _write(d: Path, docs: dict[str, dict]) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for name, doc in docs.items():
        f = d / name
        f.write_text(json.dumps(doc), encoding="utf-8")
        out.append(f)
    return out


def test_from_files_json_and_markdown(tmp_path):
    files = _write(tmp_path, {"a.json": _doc("Pydantic AI", 0, [5, 4, 3]),
                              "b.json": _doc("LangGraph", 0, [3, 3, 3], lat=20.0)})
    r = CliRunner().invoke(app, ["compare-frameworks", *map(str, files), "-f", "json",
                                 "--scorecard", "upstream"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    data, problems = ea.read_framework_results(files)
    api = ea.compare_frameworks(data, scorecard_mode="upstream")
    assert problems == [] and json.loads(json.dumps(api.to_dict())) == rep  # CLI == API
    a, b = rep["frameworks"]
    assert a["summary"]["avg_correctness"] == 4.0 and b["summary"]["avg_correctness"] == 3.0
    assert a["latency"]["p50"] == 11.0 and b["latency"]["p95"] == pytest.approx(21.9)
    assert a["scorecard"]["efficiency"] == pytest.approx(100 * (0.4 + 0.4 + 0.2) / 3)
    assert rep["paired_correctness"][0]["diff"] == 1.0
    out = tmp_path / "report.md"
    r = CliRunner().invoke(app, ["compare-frameworks", *map(str, files), "-o", str(out)])
    assert r.exit_code == 0, r.output
    md = out.read_text(encoding="utf-8")
    assert md.startswith("# Framework Comparison Report")
    assert "| Capability |" in md and "Latency p50 (s)" in md


def test_multi_run_from_the_store_with_scenario_recompute(tmp_path):
    run_dir = tmp_path / "results"
    docs = {f"pydantic_ai_multihop_qa_run{k}.json": _doc("Pydantic AI", k, s)
            for k, s in enumerate([[5, 5, 1], [3, 5, 1], [4, 5, 1]])}
    docs["langgraph_multihop_qa_run0.json"] = _doc("LangGraph", 0, [2, 2, 2])
    avg = copy.deepcopy(docs["pydantic_ai_multihop_qa_run0.json"])
    avg["run_id"], avg["run_count"] = -1, 3
    docs["pydantic_ai_multihop_qa.json"] = avg  # averaged file: skipped by ingest
    _write(run_dir, docs)
    db = str(tmp_path / "s.duckdb")
    r = CliRunner().invoke(app, ["--db", db, "ingest", str(run_dir)])
    assert r.exit_code in (0, 1), r.output
    r = CliRunner().invoke(app, ["--db", db, "compare-frameworks", "--scenario", "multihop_qa",
                                 "--mode", "capability", "-f", "json",
                                 "--scenario-dir", str(SCENARIOS / "multihop_qa")])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    pyd = next(f for f in rep["frameworks"] if f["framework"] == "pydantic_ai")
    assert pyd["run_count"] == 3
    assert pyd["summary"]["avg_correctness"] == pytest.approx((4 + 5 + 1) / 3)
    # per-run means 11/3, 9/3, 10/3 -> sample sd 1/3
    assert pyd["run_stddev"]["correctness"] == pytest.approx(1 / 3)
    assert pyd["summary"]["total_tokens"] == 9000  # summed over runs
    # recomputed from the scenario: q1 expects server_registry.md, answer names prod-api-03
    q1 = rep["questions"][0]
    assert q1["question_id"] == "q1"
    assert q1["results"]["Pydantic AI"]["retrieval_recall"] == 1.0
    assert "multi_hop_questions" in pyd["scenario_metrics"]
    md_r = CliRunner().invoke(app, ["--db", db, "compare-frameworks", "-s", "multihop_qa",
                                    "-m", "capability"])
    assert "±0.33" in md_r.stdout and "Runs per framework" in md_r.stdout


def test_errors(tmp_path):
    r = CliRunner().invoke(app, ["--db", str(tmp_path / "e.duckdb"), "compare-frameworks"])
    assert r.exit_code == 2 and "ingest" in r.output
    files = _write(tmp_path, {"a.json": _doc("A", 0, [5]),
                              "b.json": {**_doc("B", 0, [4]), "evaluation_mode": "baseline"}})
    r = CliRunner().invoke(app, ["compare-frameworks", *map(str, files)])
    assert r.exit_code == 2 and "several scenario/mode" in r.output
    r = CliRunner().invoke(app, ["compare-frameworks", *map(str, files), "-m", "baseline",
                                 "-s", "multihop_qa", "-f", "json"])
    assert r.exit_code == 0 and [f["name"] for f in json.loads(r.stdout)["frameworks"]] == ["B"]


def test_code_quality_attachment_of_the_runner_is_flattened():
    from evalatlas.analysis.frameworks import flat_code_quality
    from evalatlas.codequality.static import analyse_source, combine

    totals = combine([analyse_source("def f() -> int:\n    return 1\n")])
    flat = flat_code_quality({"root": "impl.py", "totals": totals, "files": []})
    assert flat["source_file"] == "impl.py" and flat["type_annotation_ratio"] == 1.0
    assert flat_code_quality({"sloc": 3}) == {"sloc": 3}


def test_runner_style_episodes_keep_boolean_profile_metrics():
    from evalatlas.analysis.frameworks import group_records
    from evalatlas.records.models import (
        AgentInfo,
        BenchmarkSubset,
        EpisodeRecord,
        ExperimentRecord,
    )
    from evalatlas.report.frameworks import framework_comparison

    exp = ExperimentRecord(
        experiment_id="e1", experiment_name="langgraph/multihop_qa/capability",
        agent=AgentInfo(name="langgraph"), benchmark_name="multihop_qa",
        benchmark_subset=BenchmarkSubset(name="multihop_qa", n_tasks=2),
        labels={"framework": "langgraph", "scenario": "multihop_qa", "mode": "capability",
                "profile": "multihop_chain_qa"},
        extra={"code_quality": {"path": "impl.py", "maintainability_index": 30.0}})
    eps = [EpisodeRecord(
        experiment_id="e1", task_id=f"q{i}", trajectory_id=f"q{i}__run0", attempt=0,
        reward=0.5, wall_time_s=3.0, scores={"correctness": 3.0, "hop_coverage": cov,
                                             "grounded_hop_coverage": cov},
        extra={"is_multi_hop": True, "chain_success": cov == 1.0, "reward_missing": False,
               "judge_cached": True}) for i, cov in ((1, 1.0), (2, 0.5))]
    data = group_records([exp], eps)
    rep = framework_comparison(data)
    sm = rep["frameworks"][0]["scenario_metrics"]
    assert sm["multi_hop_questions"] == 2.0 and sm["multi_hop_chain_success_rate"] == 0.5
    assert "judge_cached_avg" not in sm and "reward_missing_avg" not in sm
    assert rep["frameworks"][0]["code_quality"]["maintainability_index"] == 30.0


def test_a_folder_of_results_files_is_expanded(tmp_path):
    _write(tmp_path / "results", {"a.json": _doc("Pydantic AI", 0, [5, 4, 3]),
                                  "b.json": _doc("LangGraph", 0, [3, 3, 3])})
    (tmp_path / "results" / "notes.json").write_text('{"not": "a results file"}')
    r = CliRunner().invoke(app, ["compare-frameworks", str(tmp_path / "results"), "-f", "json"])
    assert r.exit_code == 0, r.output
    names = sorted(f["summary"]["avg_correctness"] for f in json.loads(r.stdout)["frameworks"])
    assert names == [3.0, 4.0]


def test_scorecard_modes_match_the_metric() -> None:
    assert tuple(m.value for m in ScorecardMode) == MODES
