"""ASV results of nop, oracle and agents: unrolling, samples, validity, bad input."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from evalatlas.adapters.asv import ADAPTER
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
           "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
           "samples", "profile"]
BENCHMARKS = {
    "bench.Suite.time_sort": {"params": [["10", "100"], ["'a'"]], "type": "time",
                              "unit": "seconds"},
    "bench.time_plain": {"params": [], "type": "time", "unit": "seconds"},
    "bench.mem_peak": {"params": [], "type": "peakmemory", "unit": "bytes"},
    "version": 2,
}


def _result_file(samples: dict[str, list]) -> dict:
    results = {}
    for name, per in samples.items():
        params = BENCHMARKS[name]["params"]
        row = [[None] * len(per), params, "v", 0, 1.0] + [None] * 6 + [per]
        results[name] = row
    return {"commit_hash": "abcdef1234567", "env_name": "existing-py", "version": 2,
            "params": {"machine": "dockertest"}, "result_columns": COLUMNS,
            "results": results}


def _files(samples: dict[str, list]) -> dict[str, bytes]:
    return {
        "results/benchmarks.json": json.dumps(BENCHMARKS).encode(),
        "results/dockertest/machine.json": b'{"machine": "dockertest"}',
        "results/dockertest/abcdef12-existing-py.json": json.dumps(_result_file(samples),
                                                                    allow_nan=True).encode(),
        "sha.txt": b"abcdef1234567\n",
    }


def _tarball(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"./postrun/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def _dir(path: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)


def _uniform(t_sort: float, t_plain: float, mem: float) -> dict[str, list]:
    return {"bench.Suite.time_sort": [[t_sort] * 3, [2 * t_sort] * 3],
            "bench.time_plain": [[t_plain, t_plain * 1.1, t_plain * 0.9]],
            "bench.mem_peak": [[mem]]}


def _task(root: Path, as_dirs: bool = False) -> Path:
    task = root / "pandas_dev-pandas_7"
    task.mkdir()
    agents = {
        "nop:nop": _uniform(10.0, 1.0, 100.0),
        "oracle:oracle": _uniform(5.0, 1.0, 100.0),
        "terminus-2:gpt-4.1": _uniform(4.0, 0.5, 50.0),
    }
    for i, (key, samples) in enumerate(agents.items(), start=1):
        if as_dirs:
            _dir(task / f"agent-{i}-{key}", _files(samples))
        else:
            _tarball(task / f"postrun_agent-{i}-{key}.tar.gz", _files(samples))
    return task


def _read(path: Path) -> tuple[list, list, list, list]:
    items = list(ADAPTER.read(path))
    return ([i for i in items if isinstance(i, ExperimentRecord)],
            [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Measurement)],
            [i for i in items if isinstance(i, Problem)])


@pytest.mark.parametrize("as_dirs", [False, True])
def test_speedups_from_samples(tmp_path: Path, as_dirs: bool) -> None:
    task = _task(tmp_path, as_dirs)
    assert ADAPTER.detect(task)
    exps, eps, ms, problems = _read(task)
    assert problems == []
    # nop is the baseline, not an agent; the dotted model name is kept
    assert sorted(e.agent.name for e in exps) == ["oracle:oracle", "terminus-2:gpt-4.1"]
    agent = {m.benchmark: m for m in ms if "gpt" in m.trajectory_id}
    assert sorted(agent) == ["bench.Suite.time_sort(10, 'a')", "bench.Suite.time_sort(100, 'a')",
                             "bench.mem_peak", "bench.time_plain"]
    m = agent["bench.Suite.time_sort(10, 'a')"]
    # helix example: nop 10, oracle 5, agent 4 -> 2.5, 2.0, 0.5
    assert (m.speedup_agent, m.speedup_oracle, m.advantage) == pytest.approx((2.5, 2.0, 0.5))
    assert m.baseline_samples == [10.0] * 3 and m.agent_time == 4.0 and m.unit == "seconds"
    assert (m.module, m.class_name, m.function, m.params) == ("bench", "Suite", "time_sort",
                                                             "10, 'a'")
    # peak memory is treated as lower-is-better, as upstream (reference quirk 3)
    assert agent["bench.mem_peak"].speedup_agent == pytest.approx(2.0)
    assert agent["bench.mem_peak"].unit == "bytes"
    ep = next(e for e in eps if "gpt" in e.trajectory_id)
    assert ep.extra["correctness_known"] is False and ep.reward is None
    assert ep.success is None
    assert ep.scores["num_valid_benchmarks"] == 4.0
    assert ep.scores["task_speedup"] == pytest.approx((2.5 * 2.5 * 2.0 * 2.0) ** 0.25)
    # oracle vs oracle: advantage 0 everywhere
    oracle = next(e for e in eps if "oracle" in e.trajectory_id)
    assert oracle.scores["agent_advantage"] == pytest.approx(0.0)


def test_format_1_and_first_machine(tmp_path: Path) -> None:
    task = tmp_path / "t"
    for i, (key, t) in enumerate([("nop:nop", 3.0), ("oracle:oracle", 2.0), ("a:m", 1.0)], 1):
        d = task / f"agent-{i}-{key}" / "results"
        d.mkdir(parents=True)
        (d / "benchmarks.json").write_text(json.dumps({"b.time_x": {"params": []}}))
        (d / "zmachine").mkdir()
        (d / "zmachine" / "c0ffee00-env.json").write_text(json.dumps(
            {"results": {"b.time_x": {"result": [t], "samples": [t, t]}}}))
    _, _eps, ms, problems = _read(task)
    assert problems == []
    m = next(m for m in ms if m.trajectory_id.endswith("a:m"))
    assert m.speedup_agent == 3.0 and m.speedup_oracle == 1.5


def test_bad_samples_corpus(tmp_path: Path) -> None:
    task = tmp_path / "t"
    task.mkdir()
    nan = float("nan")
    base = {"bench.Suite.time_sort": [[1.0, 1.0], [1.0]], "bench.time_plain": [[1.0]],
            "bench.mem_peak": [[1.0]]}
    agent = {"bench.Suite.time_sort": [[0.0, 0.0], [-1.0, 2.0]],  # zero median; negative
             "bench.time_plain": [[nan, 0.5]],  # NaN dropped, valid
             "bench.mem_peak": [None]}  # failed benchmark: no samples
    for i, (key, s) in enumerate([("nop:nop", base), ("oracle:oracle", base), ("a:m", agent)],
                                 1):
        _tarball(task / f"postrun_agent-{i}-{key}.tar.gz", _files(s))
    (task / "postrun_agent-4-b:m.tar.gz").write_bytes(b"not a tarball")
    _exps, eps, ms, problems = _read(task)
    by = {m.benchmark: m for m in ms if m.trajectory_id.endswith("a:m")}
    assert "agent median is 0.0" in by["bench.Suite.time_sort(10, 'a')"].extra["invalid_reason"]
    neg = by["bench.Suite.time_sort(100, 'a')"]
    assert not neg.valid and "negative timing" in neg.extra["invalid_reason"]
    plain = by["bench.time_plain"]
    assert plain.valid and plain.speedup_agent == 2.0
    assert plain.extra["dropped_nan_samples"] == 1 and plain.agent_samples == [0.5]
    assert not by["bench.mem_peak"].valid and by["bench.mem_peak"].agent_samples is None
    reasons = [str(p) for p in problems]
    assert any("negative timing sample" in r and "a:m" in r for r in reasons)
    assert any("cannot read tarball" in r and "b:m" in r for r in reasons)
    ep = next(e for e in eps if e.trajectory_id.endswith("a:m"))
    assert ep.scores["num_valid_benchmarks"] == 1.0 and ep.scores["num_benchmarks"] == 4.0


def test_missing_oracle_is_a_clear_error(tmp_path: Path) -> None:
    task = tmp_path / "t"
    task.mkdir()
    _tarball(task / "postrun_agent-1-nop:nop.tar.gz", _files(_uniform(1, 1, 1)))
    _tarball(task / "postrun_agent-2-a:m.tar.gz", _files(_uniform(1, 1, 1)))
    exps, eps, _, problems = _read(task)
    assert exps == [] and eps == []
    assert "need nop and oracle" in problems[0].reason


def test_broken_json_files(tmp_path: Path) -> None:
    task = tmp_path / "t"
    files = _files(_uniform(1, 1, 1))
    for i, key in enumerate(["nop:nop", "oracle:oracle", "a:m"], 1):
        f = dict(files)
        if key == "a:m":
            f["results/dockertest/abcdef12-existing-py.json"] = b"{broken"
        _dir(task / f"agent-{i}-{key}", f)
    _exps, eps, _ms, problems = _read(task)
    assert any("invalid JSON" in str(p) and "abcdef12-existing-py.json" in str(p)
               for p in problems)
    ep = next(e for e in eps if e.trajectory_id.endswith("a:m"))
    assert ep.scores["num_benchmarks"] == 0.0  # no common benchmarks, nothing invented
