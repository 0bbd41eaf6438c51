"""Subprocess frameworks that hang, crash and print garbage: right status, run completes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from evalatlas.adapters.frameworks import Question, load_scenario
from evalatlas.records.evallog import EvalLog
from evalatlas.runner.engine import RunConfig, run_scenario
from evalatlas.runner.loading import FrameworkLoadError, load_framework

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parents[1] / "src" / "evalatlas" / "data" / "scenarios" / "offline_qa"


def test_statuses_and_run_completes(tmp_path: Path) -> None:
    scen = load_scenario(SCENARIO)
    scen.questions.append(Question(id="q/7 odd", text="odd id?"))
    handle = load_framework(f"cmd:{sys.executable} {HERE / 'frameworks' / 'scripted_fw.py'}")
    assert handle.kind == "subprocess" and handle.source_file.name == "scripted_fw.py"
    cfg = RunConfig(query_timeout_s=1.0, concurrency=4, output_dir=tmp_path,
                    skip_code_quality=True)
    summary = asyncio.run(run_scenario(scen, handle, cfg))
    assert summary.done == 7 and summary.statuses == {"completed": 3, "timeout": 1, "error": 3}
    log = EvalLog.load(summary.run_dir, strict=True)
    eps = {e.task_id: e for e in log.episodes}
    ok = eps["q1"]
    assert ok.status == "completed" and ok.output_text.startswith("answer to What does")
    assert ok.retrieved_sources == ["http_caching.md"]
    assert ok.usage.prompt_tokens == 10 and ok.usage.model == "sub-m"
    assert ok.extra["tool_trace"] == [{"tool": "t"}] and ok.extra["agents_used"] == ["a"]
    assert ok.extra["answer_metadata"] == {"ignored_stdout_lines": 1}
    assert ok.scores["retrieval_precision"] == 1.0 and ok.scores["retrieval_recall"] == 1.0
    assert ok.scores["correctness"] is None and ok.extra["reward_missing"] is True
    assert ok.reward is None and ok.success is None
    hang = eps["q2"]
    assert hang.status == "timeout" and hang.wall_time_s == 1.0 and hang.reward == 0.0
    # unlike upstream, tokens reported before the timeout are kept
    assert hang.usage.prompt_tokens == 50 and hang.usage.total_cost_usd == pytest.approx(0.001)
    assert hang.extra["tool_trace"] == [{"tool": "search", "arguments": {"q": "x"}}]
    assert hang.output_text is None and "reward_missing" not in hang.extra
    crash = eps["q3"]
    assert crash.status == "error" and crash.error_type == "FrameworkCrash"
    assert "exit status 3" in crash.error_message and "something broke" in crash.error_message
    garbage = eps["q4"]
    assert garbage.status == "error" and garbage.error_type == "ProtocolError"
    assert "hello, this is not JSON" in garbage.error_message
    assert eps["q5"].error_type == "ProtocolError" and "answer" in eps["q5"].error_message
    odd = eps["q/7 odd"]
    assert odd.trajectory_id == "q_7_odd__run0" and odd.status == "completed"


def test_bad_framework_specs() -> None:
    with pytest.raises(FrameworkLoadError, match="cannot import"):
        load_framework("no_such_module_xyz:Thing")
    with pytest.raises(FrameworkLoadError, match="expected module:Class"):
        load_framework("justaname")
    with pytest.raises(FrameworkLoadError, match="no ingest"):
        load_framework("pathlib:PurePath")
