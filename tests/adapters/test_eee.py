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


# --- bad records (issue 28 points 1 and 2) ----------------------------------------------


def _pair(tmp_path: Path, bad: dict, aggregate: dict | None = None, n: int = 48) -> list:
    """The reference pair with ``n`` instance rows, row 3 changed by ``bad``."""
    import json
    agg = json.loads(REF.read_text())
    if aggregate:
        agg["evaluation_results"][0].update(aggregate)
    row = json.loads(REF.with_name(REF.stem + "_samples.jsonl").read_text())
    rows = []
    for i in range(n):
        r = json.loads(json.dumps(row))
        r["sample_id"] = f"demo_{i:04d}"
        if i == 3:
            for key, value in bad.items():
                target = r
                *path, last = key.split(".")
                for p in path:
                    target = target.setdefault(p, {})
                target[last] = value
        rows.append(json.dumps(r))
    (tmp_path / "agg.json").write_text(json.dumps(agg))
    (tmp_path / "agg_samples.jsonl").write_text("\n".join(rows) + "\n")
    return list(read_aggregate(tmp_path / "agg.json"))


@pytest.mark.parametrize(("bad", "field", "words"), [
    ({"performance": [1978.9]}, "performance", "a list, expected an object"),
    ({"evaluation.score": "0.7"}, "evaluation.score", "writes a number here, not a string"),
    ({"evaluation.score": ""}, "evaluation.score", "an empty string is not a number"),
    ({"evaluation.score": True}, "evaluation.score", "a boolean (true) is not a number"),
    ({"evaluation.score": {"v": 1}}, "evaluation.score", "an object is not a number"),
    ({"token_usage.input_tokens": "12"}, "token_usage.input_tokens", "not a string"),
    ({"evaluation.is_correct": "yes"}, "evaluation.is_correct", "is not true or false"),
    ({"sample_id": {"id": 1}}, "sample_id", "an object is not an id"),
])
def test_one_bad_instance_row_is_quarantined_naming_line_and_field(tmp_path, bad, field,
                                                                   words):
    items = _pair(tmp_path, bad)
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    problems = [i for i in items if isinstance(i, Problem)]
    assert len(episodes) == 47 and len(problems) == 1
    p = problems[0]
    assert (p.file, p.line, p.field) == (str(tmp_path / "agg_samples.jsonl"), 4, field)
    assert words in p.reason and "Error" not in p.reason


@pytest.mark.parametrize("score", ["NaN", "inf", "1e999"])
def test_a_non_finite_score_is_an_unknown_outcome_with_a_note(tmp_path, score):
    items = _pair(tmp_path, {"evaluation.score": score})
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert len(episodes) == 48 and not [i for i in items if isinstance(i, Problem)]
    ep = next(e for e in episodes if e.task_id == "demo_0003")
    assert ep.reward is None and ep.success is None
    assert ep.extra["coercion_notes"]["evaluation.score"].endswith("missing")


def test_negative_tokens_are_missing_with_a_note(tmp_path):
    items = _pair(tmp_path, {"token_usage.input_tokens": -5})
    ep = next(i for i in items if isinstance(i, EpisodeRecord) and i.task_id == "demo_0003")
    assert ep.usage.prompt_tokens is None and ep.usage.completion_tokens == 5
    assert ep.extra["coercion_notes"] == {
        "token_usage.input_tokens": "negative count (-5); missing"}


@pytest.mark.parametrize("aggregate", [
    {"score_details": {"score": "0.75"}}, {"score_details": {"score": True}},
    {"score_details": [0.75]}, {"metric_config": "accuracy"},
    {"score_details": {"score": 0.75, "uncertainty": {"num_samples": -1}}},
])
def test_a_bad_published_value_is_missing_with_a_note_not_a_lost_file(tmp_path, aggregate):
    items = _pair(tmp_path, {}, aggregate)
    (exp,) = [i for i in items if isinstance(i, ExperimentRecord)]
    assert len([i for i in items if isinstance(i, EpisodeRecord)]) == 48
    assert not [i for i in items if isinstance(i, Problem)]
    (note,) = exp.extra["coercion_notes"].values()
    assert note.endswith("missing")
    assert exp.published_metrics[0].n is None
