"""Scenario loading and the upstream results-JSON adapter (framework comparison)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.adapters.framework_results import ADAPTER, framework_slug, read_results_file
from evalatlas.adapters.frameworks import load_scenario, safe_id, trajectory_id_for
from evalatlas.errors import InputError, Problem
from evalatlas.records.ids import check_safe_id
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

SCENARIOS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "frameworks" \
    / "scenarios"


@pytest.mark.parametrize(("name", "stype", "profile", "n_q", "n_docs", "seed"), [
    ("rag_qa", "rag_qa", "default", 7, 3, False),
    ("multihop_qa", "rag_qa", "multihop_chain_qa", 9, 5, False),
    ("agentic_sql_qa", "agentic_tool_qa", "tool_branching_qa", 8, 3, True),
    ("multi_agent_coordination", "multi_agent_coordination", "multi_agent_coordination",
     10, 4, True),
])
def test_load_real_scenarios(name, stype, profile, n_q, n_docs, seed):
    sc = load_scenario(SCENARIOS / name)
    assert (sc.name, sc.scenario_type, sc.profile) == (name, stype, profile)
    assert len(sc.questions) == n_q
    assert len(sc.documents) == n_docs
    assert [d.source for d in sc.documents] == sorted(d.source for d in sc.documents)
    assert (sc.seed_sql is not None) == seed
    assert set(sc.modes) == {"baseline", "capability"}


def test_scenario_details():
    sc = load_scenario(SCENARIOS / "multihop_qa" / "spec.yaml")
    q3 = sc.question("q3")
    assert q3 is not None
    assert q3.expected_sources == ["server_registry.md", "datacenter_locations.md"]
    assert len(q3.metadata["required_hops"]) == 3
    assert sc.mode_config("capability")["max_steps"] == 4
    assert sc.llm_model == "gpt-5-mini"
    with pytest.raises(InputError, match="unknown mode 'turbo'"):
        sc.mode_config("turbo")
    mac = load_scenario(SCENARIOS / "multi_agent_coordination")
    assert "CREATE TABLE" in (mac.seed_sql or "").upper()
    difficulties = [q.metadata.get("difficulty") for q in mac.questions]
    assert difficulties.count("easy") == 3
    assert difficulties.count("coordination") == 3
    assert difficulties.count("hard_coordination") == 4


def test_bad_scenarios_name_file_and_field(tmp_path):
    (tmp_path / "spec.yaml").write_text("name: x\nquestions_file: q.yaml\n")
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    assert "q.yaml" in str(err.value) and "not found" in str(err.value)
    (tmp_path / "q.yaml").write_text("questions:\n  - text: no id\n")
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    assert err.value.problem.field == "questions[0].id"
    (tmp_path / "q.yaml").write_text("questions:\n  - {id: a, text: t}\n  - {id: a, text: u}\n")
    with pytest.raises(InputError, match="duplicate question id"):
        load_scenario(tmp_path)
    (tmp_path / "q.yaml").write_text("questions: [\n")
    with pytest.raises(InputError, match="invalid YAML"):
        load_scenario(tmp_path)
    (tmp_path / "q.yaml").write_text("scenario_type: agentic_tool_qa\nquestions:\n"
                                     "  - {id: a, text: t}\n")
    sc = load_scenario(tmp_path)
    assert sc.scenario_type == "agentic_tool_qa"  # spec lacks it: questions.yaml wins
    assert sc.profile == "default" and sc.questions[0].expected_sources == []


@pytest.mark.parametrize("raw", ["q1", "q 1", "../../etc", "a/b\\c", "x.archived_1", "..", ""])
def test_safe_ids(raw):
    assert check_safe_id(safe_id(raw)) == safe_id(raw)
    assert check_safe_id(trajectory_id_for(raw, 3)).endswith("run3")


def test_trajectory_id_convention():
    assert trajectory_id_for("q1", 0) == "q1__run0"


# --- upstream results JSON ----------------------------------------------------------------

def results_doc(**over):
    doc = {
        "framework_name": "Pydantic AI", "scenario_name": "multihop_qa",
        "scenario_type": "rag_qa", "evaluation_mode": "capability",
        "evaluation_profile": "multihop_chain_qa",
        "questions": [
            {"question_id": "q3", "question_text": "Which datacenter?", "expected_answer": "PDX-1",
             "actual_answer": "PDX-1 via prod-api-03",
             "sources_expected": ["server_registry.md", "datacenter_locations.md"],
             "sources_retrieved": ["server_registry.md"], "latency_seconds": 7.2,
             "prompt_tokens": 1500, "completion_tokens": 600, "total_tokens": 2100,
             "estimated_cost_usd": 0.001575, "model_name": "gpt-5-mini",
             "correctness_score": 4, "completeness_score": 3, "faithfulness_score": 5,
             "judge_reasoning": "ok", "retrieval_precision": 1.0, "retrieval_recall": 0.5,
             "extra_metrics": {"is_multi_hop": True, "required_hops": 2, "matched_hops": 2,
                               "hop_coverage": 1.0, "grounded_hop_coverage": 0.5,
                               "chain_success": True}},
            {"question_id": "q1", "question_text": "What runs?",
             "actual_answer": "Query timed out before producing an answer.",
             "sources_expected": ["server_registry.md"], "sources_retrieved": [],
             "latency_seconds": 120.0, "prompt_tokens": 0, "completion_tokens": 0,
             "total_tokens": 0, "estimated_cost_usd": 0.0, "model_name": "timeout",
             "correctness_score": 0, "completeness_score": 0, "faithfulness_score": 0,
             "retrieval_precision": 0.0, "retrieval_recall": 0.0,
             "extra_metrics": {"is_multi_hop": False}},
        ],
        "code_quality": {"source_file": "impl.py", "source_sloc": 284, "static_metrics": {
            "sloc": 284, "maintainability_index": 21.0, "avg_cyclomatic_complexity": 3.6},
            "code_review": {"readability": 4, "avg_score": 3.86, "reasoning": "fine"}},
        "run_id": 0, "run_count": 1,
    }
    doc.update(over)
    return doc


def _read(tmp_path, doc, name="pydantic_ai_multihop_qa_20260212_000000.json", **kw):
    f = tmp_path / name
    f.write_text(json.dumps(doc), encoding="utf-8")
    return f, list(read_results_file(f, **kw))


def test_results_file_to_records(tmp_path):
    f, items = _read(tmp_path, results_doc())
    assert ADAPTER.detect(f)
    exp, ok, timeout = items
    assert isinstance(exp, ExperimentRecord)
    assert exp.experiment_name == "pydantic_ai/multihop_qa/capability"
    assert exp.labels == {"framework": "pydantic_ai", "scenario": "multihop_qa",
                          "mode": "capability", "profile": "multihop_chain_qa"}
    assert exp.benchmark_subset.n_tasks == 2 and exp.agent.name == "pydantic_ai"
    assert exp.extra["code_quality"]["maintainability_index"] == 21.0
    assert exp.extra["code_review"]["avg_score"] == 3.86
    assert isinstance(ok, EpisodeRecord)
    assert ok.trajectory_id == "q3__run0" and ok.attempt == 0 and ok.task_id == "q3"
    assert ok.reward == 0.75 and ok.success  # (4 - 1) / 4
    assert ok.scores["correctness"] == 4 and ok.scores["retrieval_recall"] == 0.5
    assert ok.scores["chain_success"] == 1.0 and ok.scores["required_hops"] == 2
    assert ok.usage.total_tokens == 2100 and ok.usage.total_cost_usd == 0.001575
    assert ok.wall_time_s == 7.2 and ok.extra["judge_reasoning"] == "ok"
    # a timeout: status, reward 0, unknown (not 0) tokens and cost, no judge score
    assert timeout.status == "timeout" and timeout.reward == 0.0
    assert timeout.scores["correctness"] is None
    assert timeout.usage.total_tokens is None and timeout.usage.total_cost_usd is None
    assert timeout.wall_time_s == 120.0
    assert timeout.extra["upstream_scores"]["correctness"] == 0


def test_runs_of_one_directory_are_attempts_of_one_experiment(tmp_path):
    _, a = _read(tmp_path, results_doc(run_id=0), "a_run0.json")
    _, b = _read(tmp_path, results_doc(run_id=1), "a_run1.json")
    assert a[0].experiment_id == b[0].experiment_id
    assert b[1].attempt == 1 and b[1].trajectory_id == "q3__run1"
    assert framework_slug("LangGraph") == "langgraph"
    assert framework_slug("CrewAI") == "crewai"


def test_averaged_file_is_not_ingested(tmp_path):
    _, items = _read(tmp_path, results_doc(run_id=-1, run_count=3))
    assert len(items) == 1 and isinstance(items[0], Problem)
    assert items[0].field == "run_id" and "_runK" in items[0].reason
    _, items = _read(tmp_path, results_doc(run_id=-1, run_count=3), allow_averaged=True)
    assert isinstance(items[0], ExperimentRecord) and items[1].attempt is None


def test_query_error_has_unknown_latency(tmp_path):
    doc = results_doc()
    doc["questions"][1].update({"model_name": "error", "latency_seconds": 0.0,
                                "actual_answer": "Framework query failed before producing "
                                                 "an answer."})
    _, items = _read(tmp_path, doc)
    err = items[2]
    assert err.status == "error" and err.wall_time_s is None and err.reward == 0.0


def test_judge_failure_and_stored_metric_mismatch(tmp_path):
    doc = results_doc()
    doc["questions"][0]["correctness_score"] = None
    doc["questions"][0]["retrieval_precision"] = 0.25  # disagrees with the source lists
    _, items = _read(tmp_path, doc)
    ep = items[1]
    assert ep.scores["correctness"] is None and ep.reward is None and ep.success is None
    assert ep.extra["reward_missing"] is True
    assert ep.scores["retrieval_precision"] == 1.0
    assert ep.extra["upstream_scores"]["retrieval_precision"] == 0.25


def test_bad_records_are_reported_and_the_rest_kept(tmp_path):
    doc = results_doc()
    doc["questions"].append({"question_text": "no id"})
    doc["questions"].append({"question_id": "q9", "correctness_score": "five"})
    doc["questions"].append({"question_id": "q3"})  # duplicate
    doc["questions"].append("nope")
    f, items = _read(tmp_path, doc)
    problems = [i for i in items if isinstance(i, Problem)]
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert len(episodes) == 2 and len(problems) == 4
    assert problems[0].field == "question_id" and problems[0].file == str(f)
    assert problems[1].field == "correctness_score" and problems[1].record == "q9"
    assert "duplicate" in problems[2].reason
    _, items = _read(tmp_path, {"framework_name": "x"})
    assert isinstance(items[0], Problem) and "missing scenario_name" in items[0].reason
    bad = tmp_path / "broken.json"
    bad.write_text('{"framework_name": "x", "scenario_name": ', encoding="utf-8")
    assert isinstance(next(iter(read_results_file(bad))), Problem)
