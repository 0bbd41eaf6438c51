"""Judge server faults: HTTP 200 with a body that is not a chat completion, slow servers.

Each malformed body is a failed call: retried with backoff, then the score is missing
(never 0, never a crash), in the library, in ``evalatlas judge`` and in ``judge-rubric``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_openai import RAW_BODIES, FakeOpenAI

from evalatlas.cli.main import app
from evalatlas.judge.answer import judge_answer
from evalatlas.judge.client import JudgeClient, JudgeConfig
from evalatlas.store.db import StoreConnection

RUBRIC = (Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "scylla"
          / "test-001" / "expected" / "rubric.yaml")
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _ask(srv: FakeOpenAI, **kw: object):
    cfg = dict(model="m", base_url=srv.base_url, backoff_s=0.01, backoff_max_s=0.02,
               cache_dir=None, timeout_s=2.0, max_attempts=3)
    cfg.update(kw)
    client = JudgeClient(JudgeConfig(**cfg))  # type: ignore[arg-type]

    async def go():
        try:
            return await judge_answer(client, "What is 2+2?", "4", "4", [])
        finally:
            await client.aclose()
    return asyncio.run(go())


@pytest.mark.parametrize("body", list(RAW_BODIES))
def test_malformed_200_body_is_a_failed_call_retried_then_missing(body: str) -> None:
    with FakeOpenAI(default=body) as srv:
        r = _ask(srv)
        calls = len(srv.requests)
    assert calls == 3 and r.attempts == 3  # retried up to the attempt budget
    assert r.scores == {"correctness": None, "completeness": None, "faithfulness": None}
    assert "judge failed after 3 attempt(s)" in r.error and "malformed response" in r.error
    assert r.usage is not None and r.usage.prompt_tokens is None  # unknown, not 0


def test_a_malformed_body_then_a_good_answer_recovers() -> None:
    with FakeOpenAI(["html_body", "truncated_json"]) as srv:
        r = _ask(srv)
    assert r.error is None and r.attempts == 3
    assert r.scores == {"correctness": 4.0, "completeness": 3.0, "faithfulness": 5.0}


def test_timeout_is_a_parameter_and_bounds_each_call() -> None:
    with FakeOpenAI(default="slow", slow_s=1.5) as srv:
        t0 = time.perf_counter()
        r = _ask(srv, timeout_s=0.2, max_attempts=2)
        elapsed = time.perf_counter() - t0
    assert r.error is not None and "timeout after 0.2s limit" in r.error
    assert r.scores["correctness"] is None and elapsed < 1.5
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="timeout_s"):
            JudgeConfig(model="m", timeout_s=bad)


def _store_with_answers(tmp_path: Path) -> list[str]:
    f = tmp_path / "answers.jsonl"
    exp = {"experiment_id": "e", "experiment_name": "e", "benchmark_name": "qa",
           "benchmark_subset": {"name": "all", "n_tasks": 2}, "agent": {"config": {}}}
    eps = [{"experiment_id": "e", "task_id": f"t{i}", "trajectory_id": f"a{i}", "reward": None,
            "input_text": "What is 2+2?", "expected_text": "4", "output_text": "4"}
           for i in range(2)]
    f.write_text("".join(json.dumps(x) + "\n" for x in [exp, *eps]), encoding="utf-8")
    db = ["--db", str(tmp_path / "s.duckdb")]
    assert runner.invoke(app, [*db, "ingest", str(f)]).exit_code == 0
    return db


@pytest.mark.parametrize("body", ["html_body", "no_choices"])
def test_judge_command_survives_a_non_json_server(tmp_path: Path, body: str) -> None:
    db = _store_with_answers(tmp_path)
    with FakeOpenAI(default=body) as srv:
        r = runner.invoke(app, [*db, "judge", "--judge-model", "m", "--judge-base-url",
                                srv.base_url, "--judge-cache-dir", str(tmp_path / "c"),
                                "--timeout", "5", "-f", "json"])
        calls = len(srv.requests)
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["rows"][0]
    assert row["judged"] == 0 and row["failed"] == 2
    assert calls == 8  # 2 episodes x 4 attempts (the CLI's default budget)
    with StoreConnection(tmp_path / "s.duckdb", read_only=True) as store:
        rows = store.query("SELECT reward, scores, extra FROM episodes")
    for stored in rows:
        assert stored["reward"] is None  # still unknown: no verdict, no invented outcome
        assert all(v is None for v in json.loads(stored["scores"]).values())
        assert "malformed response" in stored["extra"]


def test_judge_rubric_command_survives_a_non_json_server(tmp_path: Path) -> None:
    out_file = tmp_path / "out.txt"
    out_file.write_text("print('Hello, World!')\n")
    with FakeOpenAI(default="truncated_json") as bad, FakeOpenAI() as good:
        r = runner.invoke(app, ["judge-rubric", str(RUBRIC), "--output-file", str(out_file),
                                "--task", "Create hello.py", "--judge-model", "a",
                                "--judge-base-url", bad.base_url, "--judge-cache-dir",
                                str(tmp_path / "c"), "--timeout", "5", "-f", "json"])
        r_good = runner.invoke(app, ["judge-rubric", str(RUBRIC), "--output-file",
                                     str(out_file), "--task", "Create hello.py",
                                     "--judge-model", "a", "--judge-base-url", good.base_url,
                                     "--judge-cache-dir", str(tmp_path / "c"), "-f", "json"])
    assert r.exit_code == 0, r.output
    rows = {x["judge"]: x for x in json.loads(r.stdout)["rows"]}
    assert rows["a"]["score"] is None and "malformed response" in rows["a"]["error"]
    assert rows["consensus"]["score"] is None and rows["consensus"]["error"] == "0/1 judges valid"
    assert len(bad.requests) == 4
    # the failure was not cached: the next run against a good server scores
    assert json.loads(r_good.stdout)["rows"][0]["score"] == 1.0


def test_timeout_option_on_the_cli(tmp_path: Path) -> None:
    out_file = tmp_path / "out.txt"
    out_file.write_text("x\n")
    r = runner.invoke(app, ["judge-rubric", str(RUBRIC), "--output-file", str(out_file),
                            "--judge-model", "a", "--judge-base-url", "http://127.0.0.1:9/v1",
                            "--timeout", "0"])
    assert r.exit_code == 2 and "--timeout" in r.output


def test_run_takes_a_judge_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """``run`` passes ``--judge-timeout`` to the judge it builds (same client as above)."""
    from evalatlas.cli import run as run_cli

    seen = {}

    def spy(*args: object, **kw: object):
        seen.update(kw)
        raise run_cli.EvalAtlasError("stop here")

    monkeypatch.setattr(run_cli, "make_judge", spy)
    r = runner.invoke(app, ["run", "offline_qa", "--framework", "bm25", "--judge-model", "m",
                            "--judge-base-url", "http://127.0.0.1:9/v1",
                            "--judge-timeout", "2.5"])
    assert r.exit_code == 2 and "stop here" in r.output and seen == {"timeout_s": 2.5}
