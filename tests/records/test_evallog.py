"""EvalLog directories: layout, atomic writes, unsafe ids, archived retries, bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalatlas.errors import InputError, UnsafeIdError
from evalatlas.records import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    EvalLog,
    ExperimentRecord,
    Measurement,
    jsonio,
)


def make_log(n: int = 3, eid: str = "abc123") -> EvalLog:
    exp = ExperimentRecord(experiment_id=eid, experiment_name="exp",
                           agent=AgentInfo(config={"m": 1}), benchmark_name="b",
                           benchmark_subset=BenchmarkSubset(name="b", n_tasks=n))
    eps = [EpisodeRecord(experiment_id=eid, task_id=f"t{i}", reward=float(i % 2),
                         trajectory_id=f"t{i}_ep0") for i in range(n)]
    return EvalLog(experiment=exp, episodes=eps)


def test_save_writes_seed_layout_and_load_round_trips(tmp_path: Path) -> None:
    log = make_log()
    log.measurements = [Measurement(experiment_id="abc123", trajectory_id="t1_ep0",
                                    benchmark="m.C.f", speedup_agent=2.0)]
    log.save(tmp_path)
    assert (tmp_path / "experiment_record.json").is_file()
    assert (tmp_path / "episodes/t0_ep0/episode_record.json").is_file()
    assert (tmp_path / "episodes/t1_ep0/measurements.jsonl").is_file()
    loaded = EvalLog.load(tmp_path)
    assert loaded == log
    assert loaded.problems == []


def test_to_jsonl_lines_are_self_contained(tmp_path: Path) -> None:
    log = make_log()
    log.to_jsonl(tmp_path / "sub.jsonl")
    lines = (tmp_path / "sub.jsonl").read_text().splitlines()
    assert len(lines) == 3
    for line, ep in zip(lines, log.episodes, strict=True):
        assert EpisodeRecord.model_validate(json.loads(line)) == ep


def test_load_skips_archived_retries(tmp_path: Path) -> None:
    make_log().save(tmp_path)
    archived = tmp_path / "episodes" / "t0_ep0.archived_1747000000"
    archived.mkdir()
    rec = json.loads((tmp_path / "episodes/t0_ep0/episode_record.json").read_text())
    (archived / "episode_record.json").write_text(json.dumps(rec))
    loaded = EvalLog.load(tmp_path)
    assert [e.trajectory_id for e in loaded.episodes] == ["t0_ep0", "t1_ep0", "t2_ep0"]


def test_bad_episode_file_is_reported_not_fatal(tmp_path: Path) -> None:
    make_log().save(tmp_path)
    bad = tmp_path / "episodes/t1_ep0/episode_record.json"
    bad.write_text('{"experiment_id": "abc123", "task_id": ')
    loaded = EvalLog.load(tmp_path)
    assert len(loaded.episodes) == 2
    assert len(loaded.problems) == 1
    assert loaded.problems[0].file == str(bad)
    assert "invalid JSON" in loaded.problems[0].reason
    with pytest.raises(InputError, match="invalid JSON"):
        EvalLog.load(tmp_path, strict=True)


def test_mismatched_experiment_id_is_a_problem(tmp_path: Path) -> None:
    make_log().save(tmp_path)
    p = tmp_path / "episodes/t2_ep0/episode_record.json"
    rec = json.loads(p.read_text())
    rec["experiment_id"] = "other"
    p.write_text(json.dumps(rec))
    loaded = EvalLog.load(tmp_path)
    assert len(loaded.episodes) == 2
    assert loaded.problems[0].field == "experiment_id"
    assert "invariant 4" in loaded.problems[0].reason


def test_evallog_enforces_invariant_4() -> None:
    log = make_log()
    with pytest.raises(ValueError, match="invariant 4"):
        EvalLog(experiment=log.experiment, episodes=[
            EpisodeRecord(experiment_id="zzz", task_id="t", reward=0, trajectory_id="x")])


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", "/etc", "a\x00b", ""])
def test_unsafe_trajectory_ids_never_reach_the_filesystem(tmp_path: Path, bad: str) -> None:
    with pytest.raises((UnsafeIdError, ValueError)):
        EpisodeRecord(experiment_id="e", task_id="t", reward=0, trajectory_id=bad)
    # Even a record built without validation is refused by save().
    log = make_log(1)
    log.episodes[0] = EpisodeRecord.model_construct(**{**log.episodes[0].__dict__,
                                                       "trajectory_id": bad})
    with pytest.raises(UnsafeIdError):
        log.save(tmp_path / "out")
    assert not (tmp_path / "escape").exists()


def test_atomic_write_leaves_old_file_on_failure(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "f.json"
    jsonio.atomic_write_text(target, "old")

    def boom(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        jsonio.atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # no temp file left behind


def test_strict_json_rejects_nan() -> None:
    with pytest.raises(jsonio.NonFiniteJSONError):
        jsonio.loads_strict('{"reward": NaN}')


def test_episode_dirs_sorted_by_name_without_archives_or_files(tmp_path: Path) -> None:
    from evalatlas.records.evallog import episode_dirs

    eps = tmp_path / "episodes"
    for name in ("b", "a", "a.archived_2024", "c10", "c9"):
        (eps / name).mkdir(parents=True)
    (eps / "stray.json").write_text("{}")
    (eps / "link").symlink_to(eps / "a")
    assert [p.name for p in episode_dirs(tmp_path)] == ["a", "b", "c10", "c9", "link"]
    assert episode_dirs(tmp_path / "missing") == []
