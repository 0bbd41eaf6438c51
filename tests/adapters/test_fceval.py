"""FC-Eval run directories: post-test blocks, merge, fallback, agent logs, real fixtures."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evalatlas.adapters.agent_logs import count_cast_events, read_agent_logs
from evalatlas.adapters.fceval import ADAPTER, extract_block, parse_post_test
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "formulacode"
CASTS = FIXTURES / "recordings"
TRACE = FIXTURES / "pitbench" / "pipeline_trace_claude_code.seq19-24.jsonl"
PANE = FIXTURES / "pitbench" / "post_test_pane_tail.txt"

RUN = "2025-10-01__09-26-33"
TESTS_OK = {"error": 0, "failed": 0, "passed": 30, "rerun": 0, "skipped": 0, "total": 30,
            "warnings": 0, "xfailed": 0, "xpassed": 0}
SNAP_OK = {"failed": 4, "passed": 52, "skipped": 20, "total": 76, "pass-to-fail": 0}


def _pane(tests: object, result: object, snapshot: object) -> str:
    parts = []
    for name, value in (("TESTS", tests), ("RESULT", result), ("SNAPSHOT", snapshot)):
        body = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        parts.append(f"FORMULACODE_{name}_START\n{body}\nFORMULACODE_{name}_END")
    return "$ python parser.py\n" + "\n".join(parts) + "\nroot@host:/repo# \n"


def _trial(run_dir: Path, task: str, suffix: str, text: str, results: dict | None = None,
           attempt: int = 1) -> Path:
    d = run_dir / task / f"{task}.{attempt}-of-1.{RUN}{suffix}"
    (d / "panes").mkdir(parents=True)
    (d / "panes" / "post-test.txt").write_text(text, encoding="utf-8")
    if results is not None:
        (d / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return d


def _items(path: Path) -> tuple[list, list, list, list]:
    items = list(ADAPTER.read(path))
    return ([i for i in items if isinstance(i, ExperimentRecord)],
            [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Measurement)],
            [i for i in items if isinstance(i, Problem)])


# --------------------------------------------------------------------------- blocks


def test_real_pane_blocks_with_hard_line_wrap() -> None:
    blocks, problems = parse_post_test(PANE.read_text(encoding="utf-8"), str(PANE))
    assert problems == []
    assert blocks["TESTS"]["passed"] == 30 and blocks["TESTS"]["error"] == 0
    assert blocks["RESULT"] == {"error": "No agent tarballs found in the logs directory"}
    # the terminal wrapped "2026-08-1" / "4T11:47:51.370476"; lines are joined as upstream
    assert blocks["SNAPSHOT"]["timestamp"] == "2026-08-14T11:47:51.370476"
    assert blocks["SNAPSHOT"]["failed"] == 4 and blocks["SNAPSHOT"]["total"] == 76


@pytest.mark.parametrize("text, why", [
    ("nothing here", "marker FORMULACODE_TESTS_START not found"),
    ("FORMULACODE_TESTS_START\n{}", "marker FORMULACODE_TESTS_END not found"),
    ("FORMULACODE_TESTS_START\n{\"error\": 0,\nFORMULACODE_TESTS_END", "invalid JSON"),
    ("FORMULACODE_TESTS_START\n[1, 2]\nFORMULACODE_TESTS_END", "expected a JSON object"),
    ("FORMULACODE_TESTS_START\n\nFORMULACODE_TESTS_END", "empty TESTS block"),
])
def test_bad_blocks(text: str, why: str) -> None:
    value, reason = extract_block(text, "TESTS")
    assert value is None and why in reason


# --------------------------------------------------------------------------- real trial


def _real_trial(tmp_path: Path) -> Path:
    records = [json.loads(line) for line in TRACE.read_text(encoding="utf-8").splitlines()]
    result = next(r for r in records if r["stage"] == "trial.execute")["outputs"]["result"]
    run_dir = tmp_path / "networkx-claude-offline"
    d = run_dir / "networkx_networkx_1" / "networkx_networkx_1.1-of-1.networkx-claude-offline"
    (d / "panes").mkdir(parents=True)
    shutil.copy(PANE, d / "panes" / "post-test.txt")
    (d / "results.json").write_text(json.dumps(result), encoding="utf-8")
    (run_dir / "run_metadata.json").write_text(json.dumps({"run_id": "networkx-claude-offline"}))
    return run_dir


def test_real_pitbench_trial(tmp_path: Path) -> None:
    run_dir = _real_trial(tmp_path)
    assert ADAPTER.detect(run_dir)
    exps, eps, ms, problems = _items(run_dir)
    assert problems == [] and ms == []
    assert [e.agent.name for e in exps] == ["claude-code:claude-haiku-4-5-20251001"]
    assert exps[0].agent.llm_model == "claude-haiku-4-5-20251001"
    (ep,) = eps
    # upstream: is_resolved true, snapshot_failed false despite 4 failed snapshots
    assert ep.success and ep.reward == 1.0
    assert ep.extra["snapshot_failed"] is False and ep.extra["pytest_failed"] is False
    assert ep.extra["snapshot"]["failed"] == 4  # the count is kept (upstream quirk 6)
    assert ep.extra["result_error"] == "No agent tarballs found in the logs directory"
    assert ep.n_steps == 11  # trajectory_length from results.json
    assert ep.task_id == "networkx_networkx_1" and ep.attempt == 0
    # no benchmarks: task speedup 1.0 and advantages 0.0, as the seed; counts show it
    assert ep.scores["task_speedup"] == 1.0 and ep.scores["agent_advantage"] == 0.0
    assert ep.scores["num_valid_benchmarks"] == 0.0
    assert ep.wall_time_s == pytest.approx(628.598, abs=1e-3)  # agent 11:09:14 -> 11:19:43
    assert ep.usage.total_cost_usd is None  # reported 0.0 with 0 tokens = unknown


# --------------------------------------------------------------------------- merge


def _speeds(table: dict[str, tuple[float, float]]) -> dict:
    return {n: {"agent/nop": a, "oracle/nop": o, "advantage": a - o}
            for n, (a, o) in table.items()}


ORACLE = _speeds({"m.A.f(1)": (2.0, 2.0), "m.g": (1.5, 1.5)})
GPT = _speeds({"m.A.f(1)": (4.0, 2.0), "m.g": (1.5, 1.5), "m.h": (float("nan"), 1.0)})
CLAUDE = _speeds({"m.A.f(1)": (8.0, 2.0), "m.g": (3.0, 1.5)})


def _multi_agent_run(run_dir: Path) -> None:
    task = "pandas_dev-pandas_105"
    _trial(run_dir, task, ".agent-1-nop", _pane(
        TESTS_OK, {"error": "Need at least 2 agents (nop and oracle) for comparison"},
        SNAP_OK))
    by = {"oracle:oracle": ORACLE}
    _trial(run_dir, task, ".agent-2-oracle", _pane(
        {**TESTS_OK, "failed": 2}, {"agent_advantage": 0.0, "last_agent": "oracle:oracle",
                                    "per_benchmark_speedups_by_agent": by}, SNAP_OK))
    by = {**by, "terminus-2:gpt-4.1": GPT}
    _trial(run_dir, task, ".agent-3-terminus-2", _pane(
        {**TESTS_OK, "failed": 2}, {"agent_advantage": 1.0, "last_agent": "terminus-2:gpt-4.1",
                                    "per_benchmark_speedups_by_agent": by}, SNAP_OK))
    by = {**by, "terminus-2:claude-sonnet-4": CLAUDE}
    _trial(run_dir, task, ".agent-4-terminus-2", _pane(
        {**TESTS_OK, "failed": 3}, {"agent_advantage": 3.0,
                                    "last_agent": "terminus-2:claude-sonnet-4",
                                    "per_benchmark_speedups_by_agent": by}, SNAP_OK),
           results={"total_input_tokens": 1000, "total_output_tokens": 200,
                    "costs_by_agent_model": {"terminus-2:claude-sonnet-4": 0.25}})


def test_multi_agent_merge_and_fallback(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    _multi_agent_run(run_dir)
    (run_dir / "run_metadata.json").write_text("{}")
    exps, eps, ms, problems = _items(run_dir)
    # two agents with the same name and a model with a dot are kept apart
    assert sorted(e.agent.name for e in exps) == [
        "nop", "oracle:oracle", "terminus-2:claude-sonnet-4", "terminus-2:gpt-4.1"]
    ep = {e.extra["agent_model"]: e for e in eps}
    ms_by = {}
    for m in ms:
        ms_by.setdefault(m.trajectory_id, {})[m.benchmark] = m
    # nop has no speedups of its own and inherits none
    assert ep["nop"].scores["num_benchmarks"] == 0.0 and ep["nop"].trajectory_id not in ms_by
    # gpt-4.1: 2 failures = the oracle's 2 -> not failed; NaN benchmark invalid + reported
    gpt = ep["terminus-2:gpt-4.1"]
    assert gpt.success and not gpt.extra["fallback_to_baseline"]
    assert gpt.scores["agent_advantage"] == pytest.approx(
        (4.0 * 1.5) ** 0.5 - (2.0 * 1.5) ** 0.5)
    assert gpt.scores["num_valid_benchmarks"] == 2.0 and gpt.scores["num_benchmarks"] == 3.0
    bad = ms_by[gpt.trajectory_id]["m.h"]
    assert bad.valid is False and bad.speedup_agent is None
    assert any(p.field == "per_benchmark_speedups.m.h" for p in problems)
    # claude: 3 failures > oracle's 2 -> pytest failed -> revert to baseline
    cl = ep["terminus-2:claude-sonnet-4"]
    assert not cl.success and cl.reward == 0.0 and cl.extra["fallback_to_baseline"]
    assert cl.scores["task_speedup"] == 1.0
    assert cl.scores["agent_advantage"] == pytest.approx(1.0 - (2.0 * 1.5) ** 0.5)
    m = ms_by[cl.trajectory_id]["m.A.f(1)"]
    assert m.speedup_agent == 1.0 and m.speedup_oracle == 2.0 and m.advantage == -1.0
    assert m.fallback_to_baseline and m.extra["measured_speedup_agent"] == 8.0
    assert (m.module, m.class_name, m.function, m.params) == ("m", "A", "f", "1")
    assert cl.usage.prompt_tokens == 1000 and cl.usage.total_cost_usd == 0.25
    assert {e.attempt for e in eps} == {0}


def test_snapshot_pass_to_fail_in_merge(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    task = "t1"
    by = {"oracle:oracle": ORACLE}
    _trial(run_dir, task, ".agent-1-oracle", _pane(
        TESTS_OK, {"last_agent": "oracle:oracle", "per_benchmark_speedups_by_agent": by},
        SNAP_OK))
    by = {**by, "a:m": CLAUDE}
    _trial(run_dir, task, ".agent-2-a", _pane(
        TESTS_OK, {"last_agent": "a:m", "per_benchmark_speedups_by_agent": by},
        {**SNAP_OK, "pass-to-fail": 1}))
    (run_dir / "fc.lock").write_text("")
    _, eps, _, _ = _items(run_dir)
    a = next(e for e in eps if e.extra["agent_model"] == "a:m")
    assert a.extra["snapshot_failed"] and not a.extra["pytest_failed"]
    assert a.extra["fallback_to_baseline"] and not a.success


def test_merge_keys_a_sub_trial_by_its_own_agent_not_the_adapters_last_agent(
        tmp_path: Path) -> None:
    # reference section 7: the merge recomputes metrics per agent *config* (the
    # sub-trial's own agent). When an agent's postrun tarball is missing (it crashed
    # before profiling), the adapter's RESULT block in its sub-trial still names the
    # previous agent as last_agent; that trial is the agent's own (failed, no speedups),
    # not a second oracle episode carrying the oracle's speedups.
    run_dir = tmp_path / RUN
    task = "t1"
    by = {"oracle:oracle": ORACLE}
    oracle_result = {"last_agent": "oracle:oracle", "per_benchmark_speedups_by_agent": by}
    _trial(run_dir, task, ".agent-1-oracle", _pane(TESTS_OK, oracle_result, SNAP_OK))
    _trial(run_dir, task, ".agent-2-terminus-2", _pane(
        {**TESTS_OK, "failed": 5}, oracle_result, SNAP_OK))
    (run_dir / "fc.lock").write_text("")
    _, eps, ms, problems = _items(run_dir)
    keys = sorted(e.extra["agent_model"] for e in eps)
    assert keys == ["oracle:oracle", "terminus-2"]
    assert not any("appears twice" in p.reason for p in problems)
    agent = next(e for e in eps if e.extra["agent_model"] == "terminus-2")
    assert agent.extra["pytest_failed"] and not agent.success
    assert agent.scores["num_valid_benchmarks"] == 0.0  # inherits nobody's speedups
    assert not agent.extra["fallback_to_baseline"]
    assert {m.trajectory_id for m in ms} == {f"{task}.1-of-1.{RUN}.agent-1-oracle"}
    oracle = next(e for e in eps if e.extra["agent_model"] == "oracle:oracle")
    assert oracle.success and oracle.scores["agent_advantage"] == 0.0


def test_bad_input_corpus_keeps_good_trials(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    (run_dir).mkdir()
    (run_dir / "run_metadata.json").write_text(json.dumps({"agent_name": "a",
                                                           "model_name": "m"}))
    good = {"last_agent": "a:m", "per_benchmark_speedups": CLAUDE}
    _trial(run_dir, "good", "", _pane(TESTS_OK, good, SNAP_OK))
    _trial(run_dir, "no-markers", "", "the container timed out\n")
    _trial(run_dir, "broken-json", "", _pane(TESTS_OK, '{"last_agent": "a:m", ', SNAP_OK))
    _trial(run_dir, "no-error-key", "", _pane({"results": {}}, good, SNAP_OK))
    _trial(run_dir, "zero-speedup", "", _pane(TESTS_OK, {
        "last_agent": "a:m", "per_benchmark_speedups": {
            "m.f": {"agent/nop": 0.0, "oracle/nop": 1.0}, "m.g": "oops"}}, SNAP_OK))
    exps, eps, _ms, problems = _items(run_dir)
    ep = {e.task_id: e for e in eps}
    assert set(ep) == {"good", "no-markers", "broken-json", "no-error-key", "zero-speedup"}
    assert ep["good"].success and ep["good"].scores["task_speedup"] == pytest.approx(
        (8.0 * 3.0) ** 0.5)
    assert not ep["no-markers"].success and ep["no-markers"].extra["pytest_failed"]
    assert not ep["no-error-key"].success  # a TESTS summary without "error" fails
    assert ep["no-error-key"].extra["fallback_to_baseline"]
    reasons = [str(p) for p in problems]
    assert any("no-markers" in r and "FORMULACODE_TESTS_START not found" in r
               for r in reasons)
    assert any("broken-json" in r and "invalid JSON in RESULT block" in r for r in reasons)
    assert any("per_benchmark_speedups.m.g" in r for r in reasons)
    # zero speedup is valid by the reference's rule but excluded from gmeans
    zs = ep["zero-speedup"]
    assert zs.scores["num_valid_benchmarks"] == 1.0 and zs.scores["task_speedup"] == 1.0
    assert len(exps) == 1 and exps[0].agent.name == "a:m"


# --------------------------------------------------------------------------- agent logs


@pytest.mark.parametrize("name", [
    "pandas_dev-pandas_101__agent-2-oracle.cast", "pandas_dev-pandas_105__agent-2-oracle.cast",
    "pandas_dev-pandas_106__agent-2-oracle.cast", "pandas_dev-pandas_26__agent-2-oracle.cast",
])
def test_real_oracle_casts_have_16_events(name: str) -> None:
    assert count_cast_events(CASTS / name) == 16  # reference section 10


def test_real_terminus_cast() -> None:
    path = CASTS / "scikit-learn_scikit-learn_9__agent-3-terminus-2.cast"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert count_cast_events(path) == len(lines) - 1 == 292  # every event line counts


def test_json_log_wins_over_cast(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    shutil.copy(CASTS / "pandas_dev-pandas_26__agent-2-oracle.cast",
                tmp_path / "sessions" / "agent.cast")
    logs = tmp_path / "agent-logs"
    logs.mkdir()
    steps = [{"llm_metrics": {"accumulated_token_usage": {"prompt_tokens": 10,
                                                          "completion_tokens": 2}}},
             {"llm_metrics": {"accumulated_token_usage": {"prompt_tokens": 50,
                                                          "completion_tokens": 7}}},
             {"action": "finish"}]
    (logs / "trajectory.json").write_text(json.dumps(steps))
    s = read_agent_logs(tmp_path)
    assert (s.trajectory_length, s.prompt_tokens, s.completion_tokens) == (3, 50, 7)
    # a newer non-list file (e.g. request headers) contributes nothing: cast fallback
    (logs / "llm_request_headers.json").write_text('{"x": 1}')
    os.utime(logs / "llm_request_headers.json", (2e9, 2e9))
    s = read_agent_logs(tmp_path)
    assert (s.trajectory_length, s.prompt_tokens) == (16, None)
    # broken newest JSON log: reported, cast fallback still used
    (logs / "z.json").write_text("[{")
    os.utime(logs / "z.json", (3e9, 3e9))
    problems: list[Problem] = []
    s = read_agent_logs(tmp_path, problems)
    assert s.trajectory_length == 16 and "not valid JSON" in problems[0].reason


def test_no_logs_stays_missing(tmp_path: Path) -> None:
    s = read_agent_logs(tmp_path)
    assert s.trajectory_length is None and s.prompt_tokens is None


def test_plain_terminal_bench_run_is_not_claimed(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    _trial(run_dir, "hello-world", "", "$ pytest\n1 passed\n")
    (run_dir / "results.json").write_text("{}")
    assert not ADAPTER.detect(run_dir)
    _trial(run_dir, "fc-task", "", _pane(TESTS_OK, {"error": "x"}, SNAP_OK))
    assert ADAPTER.detect(run_dir)
