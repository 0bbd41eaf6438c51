"""Framework comparison reports (Markdown): the printed per-question results as records."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalatlas.adapters.framework_report import cell_value, read_report
from evalatlas.adapters.registry import detect
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

RESULTS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "frameworks" \
    / "results"
RAG = RESULTS / "comparison_rag_qa_baseline.md"
MULTI_AGENT = RESULTS / "comparison_multi_agent_coordination_capability.md"


def _read(path: Path) -> tuple[list[ExperimentRecord], list[EpisodeRecord], list[Problem]]:
    items = list(read_report(path))
    return ([i for i in items if isinstance(i, ExperimentRecord)],
            [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Problem)])


def test_reports_are_detected_and_scenario_files_are_not() -> None:
    for p in RESULTS.glob("*.md"):
        assert detect(p).name == "framework-report", p
    scenarios = RESULTS.parent / "scenarios" / "rag_qa"
    for p in (scenarios / "spec.yaml", scenarios / "questions.yaml",
              *(scenarios / "documents").glob("*.md")):
        assert detect(p) is None, p


def test_cells() -> None:
    assert [cell_value(c) for c in ("6,577", "$0.0082", "92%", "A", "4.4", "-", "")] == \
        [6577.0, 0.0082, 0.92, "A", 4.4, None, None]


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.md")), ids=lambda p: p.stem)
def test_printed_summary_is_reproduced_from_the_episodes(path: Path) -> None:
    exps, eps, problems = _read(path)
    assert problems == [] and len(exps) == 4
    for exp in exps:
        mine = [e for e in eps if e.experiment_id == exp.experiment_id]
        agg = exp.extra["upstream_aggregates"]
        assert len(mine) == exp.benchmark_subset.n_tasks
        # upstream averages over every question, a timed-out one counting 0
        corr = sum(e.scores["correctness"] or 0 for e in mine) / len(mine)
        assert round(corr, 1) == agg["avg_correctness"], exp.experiment_name
        assert sum(e.usage.total_tokens or 0 for e in mine) == agg["total_tokens"]
        lat = sum(e.wall_time_s or 0 for e in mine) / len(mine)
        assert lat == pytest.approx(agg["avg_latency"], abs=0.006)
        # per-question cost and the token split are not printed: missing, not made up
        assert all(e.usage.total_cost_usd is None and e.usage.prompt_tokens is None
                   for e in mine)


def test_rag_qa_records() -> None:
    exps, eps, _ = _read(RAG)
    assert sorted(e.experiment_name for e in exps) == [
        "crewai/rag_qa/baseline", "langgraph/rag_qa/baseline",
        "pydantic_ai/rag_qa/baseline", "smolagents/rag_qa/baseline"]
    exp = next(e for e in exps if e.agent.name == "pydantic_ai")
    assert exp.extra["upstream_aggregates"]["total_cost_usd"] == 0.0082
    assert exp.extra["code_quality"]["sloc"] == 147.0
    assert exp.extra["report"]["scorecard"]["Capability"] == 91.4
    q1 = next(e for e in eps if e.experiment_id == exp.experiment_id and e.task_id == "q1")
    assert (q1.reward, q1.outcome_source, q1.wall_time_s, q1.usage.total_tokens) == \
        (1.0, "judge", 9.84, 1052)
    assert q1.scores == {"correctness": 5.0, "completeness": 4.0, "faithfulness": 5.0,
                         "retrieval_precision": 1.0, "retrieval_recall": 1.0}
    assert q1.input_text.startswith("What is the GIL") and q1.extra["answer_truncated"]


def test_timeouts_score_zero_and_keep_their_latency() -> None:
    exps, eps, _ = _read(MULTI_AGENT)
    crew = next(e for e in exps if e.agent.name == "crewai")
    timeouts = [e for e in eps if e.experiment_id == crew.experiment_id
                and e.status == "timeout"]
    assert len(timeouts) == 9
    assert all(e.reward == 0.0 and e.scores["correctness"] is None for e in timeouts)
    assert all(e.wall_time_s == 300.0 for e in timeouts)
    # a profile metric printed per question is a named score
    assert "tool_coverage" in timeouts[0].scores


def test_not_a_report_is_a_problem(tmp_path) -> None:
    p = tmp_path / "r.md"
    p.write_text("# Framework Comparison Report\n\nnothing else\n", encoding="utf-8")
    (problem,) = list(read_report(p))
    assert isinstance(problem, Problem) and "Scenario" in problem.reason
