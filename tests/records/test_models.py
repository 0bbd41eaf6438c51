"""Record models: seed names, EEE-aligned aliases, invariants, rejection of bad values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalatlas.records import EpisodeRecord, ExperimentRecord, UsageSummary

CUBE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cube"


def _episode(**kw: object) -> dict:
    base = {"experiment_id": "e1", "task_id": "t1", "reward": 1.0, "trajectory_id": "t1_ep0"}
    base.update(kw)
    return base


def test_rfc_examples_parse_with_seed_names() -> None:
    ep = EpisodeRecord.model_validate(json.loads(
        (CUBE / "examples/episode_record.rfc.json").read_text()))
    assert (ep.task_id, ep.success, ep.reward, ep.n_steps) == (
        "workarena.create_incident", True, 1.0, 25)
    assert ep.usage.prompt_tokens == 12400 and ep.usage.cached_tokens == 9800
    assert ep.usage.total_cost_usd == 0.034 and ep.usage.cost_source == "reported"
    exp = ExperimentRecord.model_validate(json.loads(
        (CUBE / "examples/experiment_record.rfc.json").read_text()))
    assert exp.benchmark_subset.n_tasks == 33
    assert exp.investigator_llm_config is None  # RFC's judge_config: null


def test_eee_aligned_names_and_type_keys_are_accepted() -> None:
    # The example episode_record.json of cube-harness HEAD (reference eval-log.md 1.5).
    head = {"evaluation_id": "20260428_120000_react_miniwob_a1b2c3d4",
            "sample_id": "miniwob.click-dialog", "sample_hash": "9c2f", "seed": 42,
            "split": None, "tool_names": ["browser_click"], "is_correct": True, "score": 1.0,
            "error": None, "num_turns": 25, "n_agent_steps": 12, "n_env_steps": 13,
            "wall_time_s": 47.3,
            "usage": {"input_tokens": 12400, "output_tokens": 840, "total_tokens": 13240,
                      "input_tokens_cache_read": 9800, "input_tokens_cache_write": 0,
                      "total_cost_usd": 0.034, "n_llm_calls": 12,
                      "_type": "cube_harness.eval_log.UsageSummary"},
            "trajectory_id": "miniwob.click-dialog_ep0", "timestamp": 1745000100.0,
            "findings": None, "_type": "cube_harness.eval_log.EpisodeRecord"}
    ep = EpisodeRecord.model_validate(head)
    assert ep.experiment_id == "20260428_120000_react_miniwob_a1b2c3d4"
    assert (ep.task_id, ep.task_version_hash, ep.success, ep.reward, ep.n_steps) == (
        "miniwob.click-dialog", "9c2f", True, 1.0, 25)
    assert (ep.usage.prompt_tokens, ep.usage.completion_tokens, ep.usage.cached_tokens,
            ep.usage.cache_creation_tokens) == (12400, 840, 9800, 0)


def test_integer_sample_id_is_coerced_to_str() -> None:
    ep = EpisodeRecord.model_validate({"evaluation_id": "e", "sample_id": 7, "score": 0.0,
                                       "trajectory_id": "7_ep0"})
    assert ep.task_id == "7" and ep.success is False


def test_experiment_head_names() -> None:
    exp = ExperimentRecord.model_validate({
        "evaluation_id": "20260428_120000_react_miniwob_a1b2c3d4", "experiment_name": "x",
        "evaluation_timestamp": 1.5, "eval_library": {"name": "cube-harness", "version": "0.9"},
        "agent": {"agent_id": "a" * 64, "config_type": "C", "config": {"_type": "C"},
                  "llm_model": None, "framework_version": "0.9", "dependency_versions": {},
                  "_type": "cube_harness.eval_log.AgentInfo"},
        "benchmark_name": "b", "benchmark_version": None,
        "benchmark_subset": {"name": "b", "n_tasks": 3, "filter": None, "_type": "x"},
        "investigator_llm_config": None, "_type": "cube_harness.eval_log.ExperimentRecord"})
    assert exp.experiment_id.endswith("a1b2c3d4")
    assert exp.timestamp == 1.5 and exp.framework_version == "0.9"
    assert exp.framework_name == "cube-harness"
    assert exp.agent.config == {"_type": "C"}  # config keeps its discriminator (hashed upstream)


def test_success_defaults_to_reward_positive() -> None:
    assert EpisodeRecord.model_validate(_episode(reward=0.5)).success is True
    assert EpisodeRecord.model_validate(_episode(reward=0.0)).success is False


def test_success_contradicting_reward_is_rejected() -> None:
    with pytest.raises(ValidationError, match="success = reward > 0"):
        EpisodeRecord.model_validate(_episode(reward=0.0, success=True))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_reward_rejected(bad: float) -> None:
    with pytest.raises(ValidationError):
        EpisodeRecord.model_validate(_episode(reward=bad))


def test_negative_tokens_rejected() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        UsageSummary(prompt_tokens=-1)


def test_unknown_field_rejected() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        EpisodeRecord.model_validate(_episode(wall_time=3.0))


def test_missing_values_stay_missing() -> None:
    ep = EpisodeRecord.model_validate(_episode())
    assert ep.usage.total_cost_usd is None and ep.usage.prompt_tokens is None
    assert ep.n_steps is None and ep.wall_time_s is None and ep.timestamp is None


def test_total_tokens_derived_when_absent() -> None:
    assert UsageSummary(prompt_tokens=10, completion_tokens=5).total_tokens == 15
    assert UsageSummary(prompt_tokens=10).total_tokens is None


def test_nan_scores_become_missing() -> None:
    ep = EpisodeRecord.model_validate(_episode(scores={"correctness": math.nan, "f": 4.0}))
    assert ep.scores == {"correctness": None, "f": 4.0}


def test_alias_conflict_is_an_error() -> None:
    with pytest.raises(ValidationError, match="alias"):
        EpisodeRecord.model_validate(_episode(score=0.0))


def test_unknown_outcome_is_null_not_failure() -> None:
    ep = EpisodeRecord.model_validate(_episode(reward=None))
    assert ep.reward is None and ep.success is None
    with pytest.raises(ValidationError, match="unknown outcome"):
        EpisodeRecord.model_validate(_episode(reward=None, success=False))
    with pytest.raises(ValidationError, match="required"):
        EpisodeRecord.model_validate({"experiment_id": "e", "task_id": "t", "trajectory_id": "x"})


def test_missing_experiment_fields_are_named() -> None:
    with pytest.raises(ValidationError) as exc:
        ExperimentRecord.model_validate({"experiment_id": "e", "experiment_name": "n",
                                         "agent": {}, "benchmark_name": "b"})
    errors = exc.value.errors()
    assert [(e["loc"], e["type"]) for e in errors] == [(("benchmark_subset",), "missing")]
