"""``evalatlas agents`` (issue 21 point 5): what the store holds, by the names to type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

runner = CliRunner()


@pytest.fixture
def db(fixtures: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    with ea.open(path) as store:
        store.ingest(fixtures / "inspect", fixtures / "tau-bench")
    return path


def _json(db: Path, *args: str) -> dict:
    res = runner.invoke(app, ["--db", str(db), "agents", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_agents_lists_ids_episodes_tasks_benchmarks(db: Path) -> None:
    env = _json(db)
    assert env["schema"] == "evalatlas.agents/1" and env["list"] == "agents"
    got = [(r["name"], r["episodes"], r["tasks"], r["benchmarks"]) for r in env["rows"]]
    # two agent ids share the name openai/gpt-4o-mini (two Inspect logs): two rows
    assert got == [("gpt-4o", 200, 50, ["tau-bench-airline"]),
                   ("ollama/gemma3", 1, 1, ["popularity"]),
                   ("openai/gpt-4o-mini", 10, 10, ["popularity"]),
                   ("openai/gpt-4o-mini", 3, 3, ["popularity"])]
    assert len({r["id"] for r in env["rows"]}) == 4
    with ea.open(db, read_only=True) as store:
        assert ea.agents(store).to_dict() == env
        frame = store.episodes()
        assert len(frame[frame.agent_id == env["rows"][0]["id"]]) == 200
    table = runner.invoke(app, ["--db", str(db), "agents"]).stdout
    assert "agent id" in table and env["rows"][2]["id"][:12] in table


def test_experiments_and_benchmarks(db: Path) -> None:
    exps = _json(db, "--experiments")["rows"]
    assert [(r["name"], r["episodes"]) for r in exps] == [
        ("2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr", 10),
        ("2025-05-12T20-28-13-04-00_popularity", 3),
        ("gpt-4o-airline.reduced", 200), ("log_read_sample", 1)]
    benches = _json(db, "--benchmarks")["rows"]
    assert [(r["name"], r["episodes"], r["tasks"], r["experiments"], r["agents"])
            for r in benches] == [("popularity", 14, 10, 3, 3),
                                  ("tau-bench-airline", 200, 50, 1, 1)]


def test_filters_take_names_people_type(db: Path) -> None:
    rows = _json(db, "--benchmark", "Tau Bench")["rows"]
    assert [r["name"] for r in rows] == ["gpt-4o"]
    rows = _json(db, "--experiments", "--agent", "OpenAI/GPT-4o-mini")["rows"]
    assert len(rows) == 2
    res = runner.invoke(app, ["--db", str(db), "agents", "--agent", "gpt-4o-mni"])
    assert res.exit_code == 2
    assert "'gpt-4o-mni' matches no agent; closest: agent openai/gpt-4o-mini" in res.output
    res = runner.invoke(app, ["--db", str(db), "agents", "--experiments", "--benchmarks"])
    assert res.exit_code == 2 and "choose one" in res.output
