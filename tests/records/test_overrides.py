"""Ingest overrides (issue 21 point 7): set, recorded, validated."""

from __future__ import annotations

import pytest

from evalatlas.errors import ArgumentError
from evalatlas.records.models import ExperimentRecord
from evalatlas.records.overrides import Overrides, apply_overrides


def _exp() -> ExperimentRecord:
    return ExperimentRecord.model_validate({
        "experiment_id": "e1", "experiment_name": "run",
        "agent": {"name": "LeadArchitectAgent", "config": {"name": "lead"}},
        "benchmark_name": "toy", "benchmark_subset": {"name": "toy", "n_tasks": 2},
        "labels": {"tier": "T0"}})


def test_overrides_set_and_record_what_the_source_said() -> None:
    exp = _exp()
    out = apply_overrides(exp, Overrides(model="gpt-4o", agent_name="Lead",
                                         labels={"tier": "T1", "team": "a"}))
    assert (out.agent.llm_model, out.agent.name) == ("gpt-4o", "Lead")
    assert out.labels == {"tier": "T1", "team": "a"}
    assert out.agent.agent_id == exp.agent.agent_id  # the config's hash is kept
    assert out.extra["overrides"] == {
        "model": {"source": None, "override": "gpt-4o"},
        "agent_name": {"source": "LeadArchitectAgent", "override": "Lead"},
        "labels": {"tier": {"source": "T0", "override": "T1"},
                   "team": {"source": None, "override": "a"}}}
    assert apply_overrides(exp, Overrides()) is exp


def test_labels_and_bad_overrides() -> None:
    with pytest.raises(ArgumentError, match="model must be a non-empty name"):
        Overrides(model=" ")
    with pytest.raises(ArgumentError, match="not a label name"):
        Overrides(labels={"a b": "x"})
