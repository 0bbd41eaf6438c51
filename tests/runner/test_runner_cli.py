"""End to end: `evalatlas run` (bm25 and echo, 2 runs, scripted judge over HTTP), then
`evalatlas compare-frameworks` reports from the stored episodes; `evalatlas judge`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from fake_openai import FakeOpenAI, answer_verdict, default_responder

from evalatlas.cli.main import app
from evalatlas.store.db import StoreConnection


def responder(request: dict[str, Any]) -> str:
    """Correctness 1 when the answer merely repeats the question (echo), else 4."""
    user = request["messages"][-1]["content"]
    m = re.search(r"QUESTION:\n(.*?)\n\n.*ACTUAL ANSWER:\n<<<\n(.*?)\n>>>", user, re.DOTALL)
    if m is None:
        return default_responder(request)
    return answer_verdict(1, 1, 1) if m.group(1) == m.group(2) else answer_verdict(4, 3, 5)


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _run(runner: CliRunner, db: Path, *args: str) -> Any:
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 0, res.output
    return res


def test_run_judge_and_compare(tmp_path: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "e.duckdb"
    common = ["--runs", "2", "--output-dir", str(tmp_path / "runs"), "--judge-cache-dir",
              str(tmp_path / "cache"), "-f", "json"]
    with FakeOpenAI(responder=responder) as srv:
        out = _run(runner, db, "run", "offline_qa", "--framework", "bm25", "--judge-model",
                   "judge-m", "--judge-base-url", srv.base_url, *common)
        row = json.loads(out.stdout[out.stdout.index("{"):])["rows"][0]
        assert row["done"] == 12 and row["statuses"] == {"completed": 12}
        _run(runner, db, "run", "offline_qa", "--framework", "echo", "--judge-model",
             "judge-m", "--judge-base-url", srv.base_url, "--skip-code-review", *common)
        n_calls = len(srv.requests)
        # both frameworks answer identically in runs 0 and 1, so run 1's judgements come
        # from the disk cache: 6 + 6 answer judgements + 1 code review
        assert n_calls == 13
        again = _run(runner, db, "run", "offline_qa", "--framework", "bm25", "--judge-model",
                     "judge-m", "--judge-base-url", srv.base_url, *common)
        assert json.loads(again.stdout[again.stdout.index("{"):])["rows"][0]["resumed"] == 12
        assert len(srv.requests) == n_calls  # resume redoes nothing
    with StoreConnection(db, read_only=True) as store:
        rows = store.query(
            "SELECT x.agent_name, count(*) AS n, avg(TRY_CAST(e.scores->>'$.correctness' AS "
            "DOUBLE)) AS corr, avg(e.reward) AS reward, "
            "sum(TRY_CAST(e.judge_usage->>'$.prompt_tokens' AS BIGINT)) AS judge_tokens, "
            "count(e.prompt_tokens) AS agent_tokens_known "
            "FROM episodes e JOIN experiments x USING (experiment_id) GROUP BY 1 ORDER BY 1")
        exps = store.query("SELECT agent_name, extra FROM experiments ORDER BY 1")
    assert [(r["agent_name"], r["n"], r["corr"], r["reward"]) for r in rows] == [
        ("bm25", 12, 4.0, 0.75), ("echo", 12, 1.0, 0.0)]
    # judge tokens are the judge's (100 per call), kept apart from the agent's (unknown)
    assert [r["judge_tokens"] for r in rows] == [1200, 1200]
    assert [r["agent_tokens_known"] for r in rows] == [0, 0]
    bm25_extra = json.loads(exps[0]["extra"])
    assert bm25_extra["code_review"]["avg_score"] == 3.43
    assert bm25_extra["code_quality"]["path"].endswith("bm25.py")
    assert "code_review" not in json.loads(exps[1]["extra"])

    res = runner.invoke(app, ["--db", str(db), "compare-frameworks", "--scenario",
                              "offline_qa", "--mode", "baseline", "-f", "json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    by_name = {f["name"]: f for f in report["frameworks"]}
    assert by_name["bm25"]["run_count"] == 2 and report["n_questions"] == 6
    bm25, echo = by_name["bm25"]["summary"], by_name["echo"]["summary"]
    assert (bm25["avg_correctness"], echo["avg_correctness"]) == (4.0, 1.0)
    # bm25 retrieves only the expected document except for q3 (1 of 2): 5.5 / 6
    assert bm25["avg_retrieval_precision"] == pytest.approx(5.5 / 6)
    assert echo["avg_retrieval_precision"] == pytest.approx(1 / 3)
    assert bm25["judge_missing"] == 0 and bm25["total_tokens"] is None
    md = runner.invoke(app, ["--db", str(db), "compare-frameworks", "--scenario", "offline_qa",
                             "--mode", "baseline"])
    assert md.exit_code == 0 and "| bm25 | echo |" in md.stdout


def test_offline_run_then_judge_command(tmp_path: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "o.duckdb"
    _run(runner, db, "run", "offline_qa", "--framework", "bm25", "--output-dir",
         str(tmp_path / "runs"), "--skip-code-quality")
    with StoreConnection(db, read_only=True) as store:
        before = store.query("SELECT count(*) AS n FROM episodes WHERE TRY_CAST("
                             "scores->>'$.correctness' AS DOUBLE) IS NULL")[0]["n"]
    assert before == 6
    with FakeOpenAI(["500", "malformed"], responder=responder) as srv:
        out = _run(runner, db, "judge", "--judge-model", "jm", "--judge-base-url",
                   srv.base_url, "--judge-cache-dir", str(tmp_path / "c"), "--scenario",
                   "offline_qa", "-f", "json")
        prompt = srv.requests[-1]["messages"][1]["content"]
    counts = json.loads(out.stdout[out.stdout.index("{"):])["rows"][0]
    assert counts["judged"] == 6 and counts["failed"] == 0
    assert "--- source: " in prompt  # --scenario gave the judge the source text
    with StoreConnection(db, read_only=True) as store:
        rows = store.query("SELECT reward, success, scores, extra FROM episodes")
    assert all(r["reward"] == 0.75 and r["success"] for r in rows)
    assert all("reward_missing" not in json.loads(r["extra"]) for r in rows)
    # the EvalLog directory was updated too, so a re-ingest keeps the scores
    files = list((tmp_path / "runs").rglob("episode_record.json"))
    assert len(files) == 6
    assert all(json.loads(f.read_text())["scores"]["correctness"] == 4.0 for f in files)
    again = _run(runner, db, "judge", "--judge-model", "jm", "--judge-base-url",
                 "http://127.0.0.1:9/v1", "-f", "json")
    assert json.loads(again.stdout[again.stdout.index("{"):])["rows"][0]["judged"] == 0


def test_api_key_is_used_but_never_stored(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-testkey0123456789abcdefXYZ"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    runner = CliRunner()
    db = tmp_path / "k.duckdb"
    with FakeOpenAI(["401"], responder=responder) as srv:
        res = _run(runner, db, "run", "offline_qa", "--framework", "bm25", "--judge-model", "jm",
                   "--judge-base-url", srv.base_url, "--output-dir", str(tmp_path / "runs"),
                   "--judge-cache-dir", str(tmp_path / "cache"), "-f", "json")
        auth = set(srv.auth_headers)
    assert auth == {f"Bearer {key}"}  # the SDK read the key from the environment
    assert key not in res.output
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.suffix in {".json", ".duckdb", ".wal"}:
            assert key.encode() not in f.read_bytes(), f
    with StoreConnection(db, read_only=True) as store:
        errs = store.query("SELECT extra->>'$.score_errors.correctness' AS e FROM episodes")
    failed = [r["e"] for r in errs if r["e"]]
    assert len(failed) == 1 and "HTTP 401" in failed[0] and key not in failed[0]


def test_run_errors_are_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["--db", str(tmp_path / "x.duckdb"), "run", "no_such_scenario",
                              "--framework", "bm25"])
    assert res.exit_code == 2 and "not found" in res.output
    res = runner.invoke(app, ["--db", str(tmp_path / "x.duckdb"), "run", "offline_qa",
                              "--framework", "bm25", "--judge-model", "m"])
    assert res.exit_code == 2 and "OPENAI_API_KEY" in res.output
    res = runner.invoke(app, ["--db", str(tmp_path / "x.duckdb"), "run", "offline_qa",
                              "--framework", "bm25", "--mode", "turbo"])
    assert res.exit_code == 2 and "unknown mode" in res.output


def test_judge_rubric_command(tmp_path: Path, fixtures: Path) -> None:
    rubric = fixtures / "scylla" / "test-001" / "expected" / "rubric.yaml"
    out_file = tmp_path / "out.txt"
    out_file.write_text("print('Hello, World!')\n")
    runner = CliRunner()
    with FakeOpenAI() as good:
        res = runner.invoke(app, ["--db", str(tmp_path / "r.duckdb"), "judge-rubric",
                                  str(rubric), "--output-file", str(out_file), "--task",
                                  "Create hello.py", "--judge-model", "a", "--judge-model",
                                  "b", "--judge-base-url", good.base_url, "--judge-cache-dir",
                                  str(tmp_path / "c"), "-f", "json"])
        assert len(good.requests) == 2
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = {r["judge"]: r for r in doc["rows"]}
    assert rows["a"]["score"] == 1.0 and rows["consensus"]["score"] == 1.0
    assert rows["consensus"]["passed"] is True and doc["pass_threshold"] == 0.6
