"""Python-class frameworks: errors, timeouts with partial usage, sync frameworks, resume."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from evalatlas.adapters.frameworks import load_scenario
from evalatlas.records.evallog import EvalLog
from evalatlas.records.ids import experiment_id_for
from evalatlas.runner.engine import RunConfig, finished_trajectories, run_scenario
from evalatlas.runner.episodes import reward_from_correctness
from evalatlas.runner.loading import FrameworkHandle, load_framework
from evalatlas.runner.protocol import Answer, QueryContext
from evalatlas.store.db import StoreConnection

SCENARIO = Path(__file__).resolve().parents[2] / "src" / "evalatlas" / "data" / "scenarios" \
    / "offline_qa"


class Flaky:
    """q1 raises, q2 reports tokens then sleeps past the timeout, q3 answers."""

    name = "Flaky FW"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def ingest(self, documents: list[Any]) -> None:
        self.ingested = len(documents)

    async def query(self, question: str, ctx: QueryContext) -> dict[str, Any]:
        self.calls.append(ctx.question_id)
        if ctx.question_id == "q1":
            raise ValueError("boom with sk-abcdefghijklmnopqrstuvwx inside")
        if ctx.question_id == "q2":
            ctx.report_usage(30, 4, cost_usd=0.002, model="m1")
            ctx.add_agent("planner")
            await asyncio.sleep(10)
        return {"answer": "WAL mode", "sources": ["sqlite_notes.md", "sqlite_notes.md"],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1}}


class SyncFramework:
    name = "sync"

    def ingest(self, documents: list[Any]) -> None:
        self.n = len(documents)

    def query(self, question: str) -> Answer:
        return Answer(text=f"{self.n} docs")


def _handle(obj: Any) -> FrameworkHandle:
    return FrameworkHandle("test:" + obj.name, obj, "python", None)


def _scenario(n: int | None = None):
    s = load_scenario(SCENARIO)
    if n is not None:
        s.questions = s.questions[:n]
    return s


def test_reward_mapping() -> None:
    assert [reward_from_correctness(c) for c in (1.0, 3.0, 5.0)] == [0.0, 0.5, 1.0]
    assert reward_from_correctness(None) is None


def test_error_timeout_and_partial_usage(tmp_path: Path) -> None:
    fw = Flaky()
    cfg = RunConfig(query_timeout_s=0.3, concurrency=3, output_dir=tmp_path,
                    skip_code_quality=True)
    s = asyncio.run(run_scenario(_scenario(3), _handle(fw), cfg))
    assert s.statuses == {"error": 1, "timeout": 1, "completed": 1}
    log = EvalLog.load(s.run_dir, strict=True)
    assert log.experiment.experiment_name == "Flaky FW/offline_qa/baseline"
    assert log.experiment.experiment_id == experiment_id_for("Flaky FW/offline_qa/baseline",
                                                             str(s.run_dir))
    assert log.experiment.labels == {"framework": "Flaky FW", "scenario": "offline_qa",
                                     "mode": "baseline", "profile": "default"}
    assert log.experiment.benchmark_subset.n_tasks == 3
    eps = {e.task_id: e for e in log.episodes}
    err = eps["q1"]
    assert err.status == "error" and err.error_type == "ValueError" and err.reward == 0.0
    assert "sk-abcdefghij" not in err.error_message and "boom" in err.error_message
    t = eps["q2"]
    assert t.status == "timeout" and t.wall_time_s == 0.3
    assert (t.usage.prompt_tokens, t.usage.completion_tokens, t.usage.model) == (30, 4, "m1")
    assert t.usage.total_cost_usd == pytest.approx(0.002) and t.extra["agents_used"] == \
        ["planner"]
    ok = eps["q3"]
    # duplicates count in precision as upstream: 0/2 relevant for q3 (unix_permissions.md)
    assert ok.scores["retrieval_precision"] == 0.0 and ok.scores["retrieval_recall"] == 0.0
    assert ok.usage.prompt_tokens == 5 and ok.trajectory_id == "q3__run0" and ok.attempt == 0
    assert ok.scores["lexical_token_f1"] is not None


def test_sync_framework_and_no_context(tmp_path: Path) -> None:
    cfg = RunConfig(output_dir=tmp_path, skip_code_quality=True, runs=2)
    s = asyncio.run(run_scenario(_scenario(2), _handle(SyncFramework()), cfg))
    eps = EvalLog.load(s.run_dir).episodes
    assert sorted(e.trajectory_id for e in eps) == ["q1__run0", "q1__run1", "q2__run0",
                                                    "q2__run1"]
    assert {e.output_text for e in eps} == {"3 docs"}
    assert all(e.usage.total_tokens is None for e in eps)  # unknown, not 0


class Counting:
    name = "counting"

    def __init__(self, slow_from: int = 99) -> None:
        self.calls = 0
        self.slow_from = slow_from

    async def ingest(self, documents: list[Any]) -> None:
        return None

    async def query(self, question: str, ctx: QueryContext) -> Answer:
        self.calls += 1
        if self.calls >= self.slow_from:
            await asyncio.sleep(30)
        return Answer(text="x")


def test_interrupted_run_resumes(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    cfg = RunConfig(output_dir=tmp_path / "runs", skip_code_quality=True, runs=2)
    first = Counting(slow_from=4)  # the 4th question hangs; the run is then interrupted

    async def interrupted() -> None:
        three = asyncio.Event()
        seen: list[str] = []

        def on_episode(ep: Any) -> None:
            seen.append(ep.trajectory_id)
            if len(seen) == 3:
                three.set()

        with StoreConnection(db) as store:
            task = asyncio.ensure_future(run_scenario(_scenario(), _handle(first), cfg,
                                                      store=store, on_episode=on_episode))
            await asyncio.wait_for(three.wait(), 10)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(interrupted())
    run_dir = next((tmp_path / "runs").iterdir())
    assert finished_trajectories(run_dir) == {"q1__run0", "q2__run0", "q3__run0"}
    with StoreConnection(db, read_only=True) as store:  # recorded in the store as they finished
        assert store.count("episodes") == 3
    second = Counting()
    with StoreConnection(db) as store:
        s = asyncio.run(run_scenario(_scenario(), _handle(second), cfg, store=store))
        assert store.count("episodes") == 12
    assert second.calls == 9 and s.resumed == 3 and s.done == 9
    third = Counting()
    s3 = asyncio.run(run_scenario(_scenario(), _handle(third), cfg))
    assert third.calls == 0 and s3.resumed == 12


def test_concurrency_overlaps(tmp_path: Path) -> None:
    class Sleepy:
        name = "sleepy"

        async def ingest(self, documents: list[Any]) -> None:
            return None

        async def query(self, question: str) -> Answer:
            await asyncio.sleep(0.2)
            return Answer(text="x")

    cfg = RunConfig(output_dir=tmp_path, skip_code_quality=True, concurrency=6)
    t0 = time.perf_counter()
    s = asyncio.run(run_scenario(_scenario(), _handle(Sleepy()), cfg))
    assert s.done == 6 and time.perf_counter() - t0 < 1.0  # serial would be 1.2 s


def test_bm25_example_answers_from_the_documents(tmp_path: Path) -> None:
    handle = load_framework("bm25")
    cfg = RunConfig(output_dir=tmp_path)
    s = asyncio.run(run_scenario(_scenario(), handle, cfg))
    log = EvalLog.load(s.run_dir)
    eps = {e.task_id: e for e in log.episodes}
    assert eps["q4"].output_text.startswith("On a directory the setgid bit makes new files")
    assert eps["q1"].retrieved_sources == ["http_caching.md"]
    assert eps["q1"].scores["retrieval_precision"] == 1.0
    cq = log.experiment.extra["code_quality"]
    assert cq["path"].endswith("bm25.py") and cq["sloc"] > 50
