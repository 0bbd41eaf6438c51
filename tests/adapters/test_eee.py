"""Every Eval Ever files in: aggregates (0.3.0 and older), instances, export round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalatlas.api as ea
from evalatlas.adapters.eee import read_aggregate
from evalatlas.adapters.registry import detect
from evalatlas.errors import Problem
from evalatlas.exports.eee import export_eee
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "eee"
REF = (FIXTURES / "skill_reference_conversion" / "data" / "demo-source" / "demo-org"
       / "demo-model" / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json")
OLD = FIXTURES / "aggregate_v0.2.0" / "98ea850e-7019-4728-a558-8b1819ec47c2.json"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_reference_pair_model_library_metric_and_instance() -> None:
    assert detect(REF).name == "eee"
    assert detect(FIXTURES / "schema" / "eval.schema.json") is None  # a schema, not a record
    items = list(read_aggregate(REF))
    assert not [i for i in items if isinstance(i, Problem)]
    (exp,) = [i for i in items if isinstance(i, ExperimentRecord)]
    (ep,) = [i for i in items if isinstance(i, EpisodeRecord)]
    assert exp.agent.llm_model == "demo-org/demo-model" and exp.framework_name == "unknown"
    assert exp.benchmark_name == "demo-source.demo_bench"
    (pub,) = exp.published_metrics
    assert (pub.source, pub.metric, pub.value, pub.score) == ("eee", "accuracy", 0.75, "reward")
    assert ep.task_id == "demo_0001" and ep.reward == 1.0 and ep.success is True
    assert ep.scores == {"is_correct": 1.0}
    assert (ep.usage.prompt_tokens, ep.usage.completion_tokens, ep.usage.total_tokens) == \
        (12, 5, 17)
    assert ep.input_text == "What is 2 + 2?"


def test_older_aggregate_scores_are_kept_exactly() -> None:
    items = list(read_aggregate(OLD))
    exps = [i for i in items if isinstance(i, ExperimentRecord)]
    got = {e.benchmark_name: e.published_metrics[0].value for e in exps}
    assert got == {"IFEval": 0.4486, "BBH": 0.4224, "MATH Level 5": 0.0249, "GPQA": 0.2743,
                   "MUSR": 0.419, "MMLU-PRO": 0.1946}
    assert {e.agent.llm_model for e in exps} == {"TencentARC/LLaMA-Pro-8B-Instruct"}
    assert len({e.experiment_id for e in exps}) == 6


_KEYS = ("experiments", "episodes", "tasks", "successes", "success_rate",
         "success_rate_ci_low", "success_rate_ci_high", "mean_reward", "total_tokens",
         "total_cost_usd", "errors_by_type", "mean_wall_time_s", "pass_at_k")


def test_export_eee_then_ingest_gives_the_same_summary(tmp_path) -> None:
    with ea.open(tmp_path / "a.duckdb") as store:
        assert store.ingest(EXAMPLES).rejected == 0
        before = ea.summary(store)
        result = export_eee(store, tmp_path / "eee", retrieved_timestamp="1800000000")
    assert len(result.written) == 3
    assert sum(w.outcome_unknown for w in result.written) == 0  # every episode exported
    with ea.open(tmp_path / "b.duckdb") as store:
        rep = store.ingest(tmp_path / "eee")
        assert rep.rejected == 0 and rep.experiments == 3
        after = ea.summary(store)
    rows_a = {r["agent"]: r for r in before.rows}
    rows_b = {r["agent"]: r for r in after.rows}
    assert rows_a.keys() == rows_b.keys()
    for agent, a in rows_a.items():
        for key in _KEYS:
            if isinstance(a[key], dict) and key == "pass_at_k":
                for k, v in a[key].items():
                    assert rows_b[agent][key][k] == pytest.approx(v, rel=1e-12), (agent, k)
            elif isinstance(a[key], dict):
                assert rows_b[agent][key] == a[key], (agent, key)
            else:
                assert rows_b[agent][key] == pytest.approx(a[key], rel=1e-12), (agent, key)
    # the aggregate's published score is evalatlas's mean reward, and agrees on re-read
    published = after.meta["published"]
    assert len(published) == 3 and all(p["agrees"] is True for p in published)
