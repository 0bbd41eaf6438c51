"""records/strict.py: an episode built without validation equals the validated one, and
anything not in strict form is left to pydantic's validation."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalatlas.adapters.registry import plan
from evalatlas.records import validate
from evalatlas.records.models import EpisodeRecord
from evalatlas.records.strict import strict_episode

BASE = {"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1.0}


def _same(data: dict[str, Any]) -> EpisodeRecord | None:
    """strict_episode(data) must be None or equal model_validate(data) in every field,
    nested usage included, and in the fields set (what ``exclude_unset`` dumps)."""
    built = strict_episode(copy.deepcopy(data))
    if built is None:
        return None
    ref = EpisodeRecord.model_validate(copy.deepcopy(data))
    assert built.__dict__ == ref.__dict__
    assert built.model_dump() == ref.model_dump()
    assert built.model_fields_set == ref.model_fields_set
    assert built.usage.model_fields_set == ref.usage.model_fields_set
    if ref.judge_usage is not None:
        assert built.judge_usage.model_fields_set == ref.judge_usage.model_fields_set
    assert built.model_dump(exclude_unset=True) == ref.model_dump(exclude_unset=True)
    assert type(built.reward) is type(ref.reward)
    return built


@pytest.mark.parametrize("extra", [
    {},
    {"reward": 0, "attempt": 2, "seed": -4, "status": "error", "error_type": "boom"},
    {"reward": None},
    {"reward": None, "success": None, "outcome_source": "judge"},
    {"reward": 0.5, "success": True, "outcome_source": "judge:gpt-4o"},
    {"usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_cost_usd": 1}},
    {"usage": {"prompt_tokens": 3, "total_tokens": 9, "cost_source": "computed: x"},
     "judge_usage": {"completion_tokens": 2, "model": "m", "total_cost_usd": 0.5}},
    {"scores": {"a": 1, "b": None, "c": float("nan"), "d": 0.25}, "tool_names": ["x"]},
    {"extra": {"k": [1, {"z": None}]}, "investigation_metadata": {"m": 1},
     "retrieved_sources": ["a"], "expected_sources": [], "wall_time_s": 3,
     "timestamp": 1.5e9, "n_steps": 0, "format_version": 1, "verifier": None},
    {"tool_names": ("a",)},  # a tuple is an array to both: the same list
    {"scores": {"a": 2**53, "b": -(2**53)}, "wall_time_s": 2**53, "seed": 2**70},
])
def test_strict_equals_validated(extra: dict[str, Any]) -> None:
    assert _same({**BASE, **extra}) is not None


@pytest.mark.parametrize("extra", [
    {"reward": True}, {"reward": "1"}, {"reward": float("inf")}, {"success": False},
    {"reward": None, "success": True}, {"attempt": -1}, {"attempt": 1.0},
    {"attempt": True}, {"task_id": 7}, {"trajectory_id": "a/b"}, {"trajectory_id": ""},
    {"trajectory_id": "x" * 300}, {"status": "done"}, {"score": 1.0}, {"_type": "x"},
    {"usage": {"input_tokens": 3}}, {"usage": {"prompt_tokens": -1}},
    {"usage": {"cost_source": "reported\n"}}, {"scores": {"a": "1"}},
    {"scores": {"a": float("inf")}}, {"tool_names": ["a", 1]},
    {"extra": {1: "x"}}, {"verifier": {"ref": "r"}}, {"findings": {}},
    {"format_version": 2}, {"outcome_source": "someone"}, {"wall_time_s": -1.0},
    {"wall_time_s": float("nan")}, {"timestamp": 2**60}, {"unknown": 1},
    {"usage": None}, {"usage": {"prompt_tokens": True}}, {"usage": []},
    {"judge_usage": {"cost_source": "x"}}, {"scores": {"a": 2**60}}, {"extra": []},
    {"scores": None}, {"status": None}, {"experiment_id": None}, {"reward": -float("inf")},
])
def test_not_strict_is_left_to_validation(extra: dict[str, Any]) -> None:
    data = {**BASE, **extra}
    assert strict_episode(copy.deepcopy(data)) is None


def test_missing_required_key_is_left_to_validation() -> None:
    data = dict(BASE)
    del data["reward"]
    assert strict_episode(data) is None


def test_parse_record_skips_validation_for_strict_data(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    calls = []
    real = EpisodeRecord.model_validate

    def counting(*args: Any, **kwargs: Any) -> EpisodeRecord:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(EpisodeRecord, "model_validate", counting)
    ep = validate.parse_record(EpisodeRecord, {**BASE, "reward": 0})
    assert ep.success is False and ep.reward == 0.0 and not calls
    validate.parse_record(EpisodeRecord, {**BASE, "score": 1})  # an alias: validated
    assert calls == [1]


def _fixture_dirs(fixtures: Path) -> list[Path]:
    return sorted(p for p in fixtures.iterdir() if p.is_dir())


def test_every_fixture_episode_equals_its_validated_record(
        fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every episode every adapter builds from the real fixtures: the strict record (when
    there is one) equals pydantic's, and most take the strict route."""
    seen: list[dict[str, Any]] = []
    real = validate.strict_episode

    def spy(data: dict[str, Any]) -> EpisodeRecord | None:
        seen.append(copy.deepcopy(data))
        return real(data)

    monkeypatch.setattr(validate, "strict_episode", spy)
    for folder in _fixture_dirs(fixtures):
        for step in plan([folder], None, []):
            if isinstance(step, tuple):
                for _ in step[1].read(step[0]):
                    pass
    assert len(seen) > 10_000
    strict = 0
    for data in seen:
        if _same(data) is not None:
            strict += 1
    assert strict / len(seen) > 0.95, (strict, len(seen))


def test_nan_score_is_missing() -> None:
    ep = strict_episode({**BASE, "scores": {"x": math.nan}})
    assert ep is not None and ep.scores == {"x": None}


def test_inside_handing_over_rows_parse_record_returns_the_checked_fields() -> None:
    """Inside ``handing_over_rows`` an episode in strict form comes back as its checked
    fields (with the derivations); anything else is validated and a bad record still
    raises its located error; outside, a record again."""
    from evalatlas.errors import InputError
    from evalatlas.records.strict import CheckedEpisode, handing_over_rows

    with handing_over_rows():
        got = validate.parse_record(EpisodeRecord, {**BASE, "reward": 0})
        assert type(got) is CheckedEpisode
        assert (got.success, got.outcome_source, got.reward) == (False, "harness", 0.0)
        alias = validate.parse_record(EpisodeRecord, {**BASE, "score": 1})  # validated
        assert type(alias) is EpisodeRecord
        with pytest.raises(InputError) as info:
            validate.parse_record(EpisodeRecord, {**BASE, "reward": "x"}, file="f.json",
                                  record="r1")
        assert (info.value.problem.file, info.value.problem.record,
                info.value.problem.field) == ("f.json", "r1", "reward")
    assert type(validate.parse_record(EpisodeRecord, BASE)) is EpisodeRecord


@pytest.mark.parametrize("raw", [
    json.dumps(BASE).encode(),
    json.dumps({**BASE, "usage": {"prompt_tokens": 3, "completion_tokens": 4},
                "scores": {"a": 1, "b": None}, "extra": {"k": [1, {"z": None}]},
                "tool_names": ["x"], "wall_time_s": 3}).encode(),
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1,'
    b' "reward": 0.0}',  # a duplicate key: the last wins, as json.loads reads it
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": NaN}',
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1e999}',
    b'{"experiment_id": "\\ud800", "task_id": "t", "trajectory_id": "t_1", "reward": 1}',
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1,'
    b' "extra": ' + b'[' * 2000 + b']' * 2000 + b'}',
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1,'
    b' "seed": 123456789012345678901234567890}',
    b'{"experiment_id": "e", "task_id": "t", "trajectory_id": "t_1", "reward": 1,'
    b' "timestamp": 9007199254740993}',
    b'', b'   ', b'\xef\xbb\xbf{}', b'{"experiment_id": "e"', b'[1]', b'"x"',
])
def test_a_typed_decode_accepts_only_what_decoding_then_checking_accepts(raw: bytes
                                                                          ) -> None:
    """An EvalLog episode file decoded straight into the checked fields is None (the
    exact read decides) or equal to decoding it the exact way and then checking."""
    import msgspec

    from evalatlas.records.jsonio import loads_strict
    from evalatlas.records.strict import checked_episode, checked_episode_json

    got = checked_episode_json(raw)
    if got is None:
        return
    ref = checked_episode(loads_strict(raw))
    assert ref is not None
    assert msgspec.structs.asdict(got) == msgspec.structs.asdict(ref)
    assert msgspec.json.encode(got) == msgspec.json.encode(ref)
