"""The record contract as data is read off the models, so it cannot drift from them."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import BaseModel, ConfigDict, Field

from evalatlas.records import models, spec


def test_every_record_model_has_a_spec() -> None:
    for name, model in models.RECORD_MODELS.items():
        s = spec.spec_of(model)
        assert s.name == name
        assert s.names == tuple(model.model_fields)


def test_episode_facts_match_the_models() -> None:
    e = spec.EPISODE
    assert e.required == ("experiment_id", "task_id", "reward", "trajectory_id")
    assert get_args(models.EpisodeStatus) == spec.STATUSES
    assert e["status"].choices == spec.STATUSES and not e["status"].nullable
    # reward is a required key whose value may be null (an unknown outcome)
    assert e["reward"].required and e["reward"].nullable and e["reward"].json_type == "number"
    assert e["format_version"].json_type == "integer" and not e["format_version"].nullable
    assert e["format_version"].minimum == 1
    assert e["n_steps"].minimum == 0 and e["seed"].minimum is None
    assert (e["tool_names"].json_type, e["tool_names"].items) == ("array", "string")
    assert not e["tool_names"].nullable and e["retrieved_sources"].nullable
    assert (e["scores"].items, e["scores"].items_nullable) == ("number", True)
    assert e["extra"].json_type == "object" and e["extra"].items is None
    assert set(e.nested) == {"usage", "judge_usage", "verifier", "findings"}
    assert e["usage"].record is spec.USAGE and not e["usage"].nullable
    assert e["judge_usage"].record is spec.USAGE and e["judge_usage"].nullable
    assert e.closed and spec.USAGE.closed and not e["findings"].record.closed
    assert spec.USAGE["cost_source"].pattern == "^(reported|computed)(: .*)?$"
    assert all(spec.USAGE[k].minimum == 0 for k in spec.USAGE.names
               if spec.USAGE[k].json_type in ("integer", "number"))


def test_experiment_and_measurement_facts() -> None:
    x = spec.EXPERIMENT
    assert x.required == ("experiment_id", "experiment_name", "agent", "benchmark_name",
                          "benchmark_subset")
    assert x["published_metrics"].items == "object"
    assert x["published_metrics"].record is spec.spec_of(models.PublishedMetric)
    pm = spec.spec_of(models.PublishedMetric)
    assert (pm["confidence"].exclusive_minimum, pm["confidence"].exclusive_maximum) == (0, 1)
    assert x["labels"].items == "string"
    m = spec.MEASUREMENT
    assert m["agent_samples"].items == "number" and m["valid"].json_type == "boolean"
    assert not m["fallback_to_baseline"].nullable


def test_a_field_added_to_a_model_appears_in_its_spec() -> None:
    class Grown(models.Record):
        a: int | None = Field(None, ge=2)
        b: list[float] = Field(default_factory=list)

    s = spec.spec_of(Grown)
    assert s.names == ("a", "b")
    assert (s["a"].json_type, s["a"].nullable, s["a"].minimum) == ("integer", True, 2)
    assert (s["b"].json_type, s["b"].items, s["b"].required) == ("array", "number", False)


def test_an_undescribed_type_or_constraint_is_an_error() -> None:
    """A field the spec cannot describe stops the import instead of vanishing from it."""
    class Union2(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int | str

    class Multiple(BaseModel):
        x: int = Field(0, multiple_of=2)

    with pytest.raises(TypeError, match="union"):
        spec.spec_of(Union2)
    with pytest.raises(TypeError, match="constraint"):
        spec.spec_of(Multiple)
