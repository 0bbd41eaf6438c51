"""`evalatlas judge` never changes a harness outcome (issue 10 item 1).

A local OpenAI-compatible server answers "incorrect" (correctness 1) to everything: every
harness reward, success and outcome source stays byte-identical; the verdicts land in
named scores with the judge model and rubric hash; an episode without a harness outcome
gets the judge's, marked ``judge:<model>``; a failing server changes nothing and records
unknown (not 0) usage; a second judge model adds scores and edits none.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from fake_openai import FakeOpenAI, answer_verdict

from evalatlas.cli.main import app
from evalatlas.judge.episodes import RUBRIC_HASH
from evalatlas.records.evallog import record_json
from evalatlas.records.models import EpisodeRecord
from evalatlas.store.db import StoreConnection

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _incorrect(_: dict[str, Any]) -> str:
    return answer_verdict(1, 1, 1)


def _outcomes(db: Path) -> dict[str, tuple[Any, ...]]:
    with StoreConnection(db, read_only=True) as store:
        rows = store.query("SELECT experiment_id || '/' || trajectory_id AS k, "
                           "CAST(reward AS VARCHAR) AS r, success, outcome_source, "
                           "reward IS NULL AS unknown FROM episodes")
    return {r["k"]: (r["r"], r["success"], r["outcome_source"], r["unknown"]) for r in rows}


@pytest.fixture
def store_with_unknowns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo's tiny-mini experiment (60 harness-scored episodes) plus 4 without one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    src = tmp_path / "in"
    shutil.copytree(EXAMPLES / "jsonl", src / "jsonl")
    lines = (src / "jsonl" / "tiny-mini-toybench.jsonl").read_text().splitlines()
    exp = json.loads(lines[0])
    first = json.loads(lines[1])
    extra = []
    for i in range(4):
        data = {**first, "trajectory_id": f"unknown-{i}", "task_id": f"open-{i}",
                "reward": None, "success": None, "input_text": "q", "output_text": "a"}
        extra.append(record_json(EpisodeRecord.model_validate(data)))
    (src / "jsonl" / "unknown.jsonl").write_text(
        json.dumps(exp) + "\n" + "\n".join(extra) + "\n")
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(app, ["--db", str(db), "ingest", str(src)])
    assert res.exit_code == 0, res.output
    return db


def _judge(db: Path, srv: FakeOpenAI, model: str, cache: Path, *more: str) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["--db", str(db), "judge", "--judge-model", model,
                                   "--judge-base-url", srv.base_url, "--judge-cache-dir",
                                   str(cache), "-f", "json", *more])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):])["rows"][0]


def test_incorrect_judge_leaves_every_harness_reward_identical(
        store_with_unknowns: Path, tmp_path: Path) -> None:
    db = store_with_unknowns
    before = _outcomes(db)
    harness = {k: v for k, v in before.items() if not v[3]}
    assert len(harness) == 60 and len(before) == 64
    assert {v[2] for v in harness.values()} == {"harness"}
    with FakeOpenAI(responder=_incorrect) as srv:
        counts = _judge(db, srv, "judge-a", tmp_path / "c")
    assert counts["judged"] == 62 and counts["failed"] == 0  # completed episodes only
    after = _outcomes(db)
    for k, v in harness.items():
        assert after[k] == v, k  # byte for byte: reward text, success, source
    # the 4 outcome-less episodes took the judge's verdict, and say so
    judged = {k: v for k, v in after.items() if k not in harness}
    assert {v[:3] for v in judged.values()} == {("0.0", False, "judge:judge-a")}
    with StoreConnection(db, read_only=True) as store:
        row = store.query("SELECT scores, extra FROM episodes WHERE reward = 1.0 "
                          "AND status = 'completed' LIMIT 1")[0]
    scores, extra = json.loads(row["scores"]), json.loads(row["extra"])
    assert scores["judge.correctness"] == 1.0 and scores["judge.judge-a.correctness"] == 1.0
    assert "correctness" not in scores  # the harness-scored episode keeps its own names
    assert extra["judges"]["judge-a"]["rubric_hash"] == RUBRIC_HASH
    assert extra["judges"]["judge-a"]["model"] == "judge-a"


def test_failed_judge_changes_nothing_and_usage_is_unknown(
        store_with_unknowns: Path, tmp_path: Path) -> None:
    db = store_with_unknowns
    before = _outcomes(db)
    with FakeOpenAI(default="500") as srv:
        counts = _judge(db, srv, "judge-x", tmp_path / "c", "--limit", "2")
    assert counts["failed"] == 2 and counts["judged"] == 0
    assert _outcomes(db) == before
    with StoreConnection(db, read_only=True) as store:
        rows = store.query("SELECT scores, extra, judge_usage FROM episodes "
                           "WHERE json_extract(extra, '$.judges') IS NOT NULL")
    assert len(rows) == 2
    for r in rows:
        entry = json.loads(r["extra"])["judges"]["judge-x"]
        assert entry["usage"] is None and entry["error"]
        assert r["judge_usage"] is None  # unknown, never 0
        assert not any(k.startswith("judge.") for k in json.loads(r["scores"]))


def test_second_judge_adds_scores_and_edits_none(
        store_with_unknowns: Path, tmp_path: Path) -> None:
    db = store_with_unknowns
    with FakeOpenAI(responder=_incorrect) as srv:
        _judge(db, srv, "judge-a", tmp_path / "c")
    first = _outcomes(db)
    with FakeOpenAI(responder=lambda r: answer_verdict(5, 5, 5)) as srv:
        _judge(db, srv, "judge-b", tmp_path / "c")
    assert _outcomes(db) == first  # including the judge-a outcomes of the 4 unknowns
    with StoreConnection(db, read_only=True) as store:
        rows = [json.loads(r["scores"]) for r in store.query(
            "SELECT scores FROM episodes WHERE status = 'completed'")]
    assert all(s["judge.correctness"] == 1.0 for s in rows)  # the first judge's, kept
    assert all(s["judge.judge-a.correctness"] == 1.0 for s in rows)
    assert all(s["judge.judge-b.correctness"] == 5.0 for s in rows)


def test_summary_outcome_choice_counts_judged_separately(
        store_with_unknowns: Path, tmp_path: Path) -> None:
    db = store_with_unknowns
    with FakeOpenAI(responder=_incorrect) as srv:
        _judge(db, srv, "judge-a", tmp_path / "c")

    def row(*args: str) -> dict[str, Any]:
        res = CliRunner().invoke(app, ["--db", str(db), "summary", "-f", "json", *args])
        assert res.exit_code == 0, res.output
        (r,) = json.loads(res.stdout)["rows"]
        return r

    anyr, harness, judge = row(), row("--outcome", "harness"), row("--outcome", "judge")
    # any: the 60 harness outcomes + the judge's 4, counted apart
    assert (anyr["successes"], anyr["outcome_unknown_episodes"]) == (27, 0)
    assert anyr["judged_outcome_episodes"] == 4
    # harness: the judged 4 are unknown
    assert (harness["successes"], harness["outcome_unknown_episodes"]) == (27, 4)
    assert harness["judged_outcome_episodes"] == 0
    # judge: the judge said "incorrect" wherever it judged (62 completed episodes)
    assert (judge["successes"], judge["judged_outcome_episodes"]) == (0, 62)
    assert judge["outcome_unknown_episodes"] == 2  # the 2 errored episodes, never judged


def test_incorrect_judge_leaves_the_whole_demo_and_fixtures_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixtures: Path) -> None:
    """The acceptance run of issue 10 on more than one format: the whole demo (evallog
    folders and JSONL) plus real harness outcomes (tau-bench rewards, a SWE-Bench Pro
    run's resolved flags, a Terminal-Bench submission); a judge answering "incorrect" to
    everything leaves every harness reward, success and outcome source identical."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "s.duckdb"
    res = CliRunner().invoke(app, ["--db", str(db), "ingest", str(EXAMPLES),
                                   str(fixtures / "tau-bench"),
                                   str(fixtures / "swebench-pro" / "gpt-4o-paper"),
                                   str(fixtures / "terminal-bench" /
                                       "20250711_openhands_claude-4-sonnet")])
    assert res.exit_code == 0, res.output
    before = _outcomes(db)
    harness = {k: v for k, v in before.items() if not v[3]}
    assert len(harness) == len(before) > 1000
    with FakeOpenAI(responder=_incorrect) as srv:
        counts = _judge(db, srv, "judge-a", tmp_path / "c")
    assert counts["failed"] == 0 and counts["judged"] > 0
    assert _outcomes(db) == before
