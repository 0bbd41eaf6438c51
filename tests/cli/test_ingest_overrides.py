"""``ingest --model --agent-name --label`` and one model per spelling (issue 21 point 7),
``--format json`` with ``--json`` as its alias."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

runner = CliRunner()
TB = "terminal-bench"
CURSOR = "20250811_cursor-cli_claude-4-sonnet"  # model unknown in its metadata


def _ok(args: list[str]) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_overrides_are_applied_and_recorded(fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    report = json.loads(_ok(["--db", str(db), "ingest", str(fixtures / TB / CURSOR),
                             "--model", "anthropic/claude-sonnet-4-20250514",
                             "--agent-name", "Cursor CLI", "--label", "team=a",
                             "--format", "JSON"]))
    assert report["episodes"] == 400 and report["experiments"] == 1
    with ea.open(db, read_only=True) as store:
        (x,) = store.experiments().to_dict("records")
        assert (x["agent_name"], x["llm_model"]) == ("Cursor CLI",
                                                     "anthropic/claude-sonnet-4-20250514")
        assert json.loads(x["labels"])["team"] == "a"
        over = json.loads(x["extra"])["overrides"]
        assert over["model"] == {"source": None,
                                 "override": "anthropic/claude-sonnet-4-20250514"}
        assert over["agent_name"]["override"] == "Cursor CLI"
        eps = store.episodes()
        # every episode without a usage model of its own takes the model: its cost is
        # computed from its tokens where it has them
        assert set(eps.llm_model) == {"anthropic/claude-sonnet-4-20250514"}
        assert (eps.cost_usd.notna() == (eps.prompt_tokens.notna()
                                         | eps.completion_tokens.notna())).all()
    err = runner.invoke(app, ["--db", str(db), "ingest", str(fixtures / TB / CURSOR),
                              "--label", "team"])
    assert err.exit_code == 2 and "must be written key=value" in err.output


def test_one_model_whatever_the_spelling(fixtures: Path, tmp_path: Path) -> None:
    """Terminal-Bench: openai/neulab/claude-sonnet-4-20250514 (OpenHands) and
    anthropic/claude-sonnet-4-20250514 (mini-swe-agent) are one model."""
    db = tmp_path / "s.duckdb"
    _ok(["--db", str(db), "ingest", str(fixtures / TB / "20250711_openhands_claude-4-sonnet"),
         str(fixtures / TB / "20250825_swe-agent-mini_claude-4-sonnet"), "--json"])
    with ea.open(db, read_only=True) as store:
        raw = set(store.episodes().llm_model)
        assert raw == {"openai/neulab/claude-sonnet-4-20250514",
                       "anthropic/claude-sonnet-4-20250514"}  # stored as the source said
        (row,) = ea.summary(store, "model").rows
    assert row["model"] == "claude-sonnet-4-20250514" and row["episodes"] == 800
    env = json.loads(_ok(["--db", str(db), "summary", "--by", "model", "-f", "json"]))
    assert [r["model"] for r in env["rows"]] == ["claude-sonnet-4-20250514"]


def test_ingest_of_an_empty_path_is_refused(tmp_path: Path, monkeypatch) -> None:
    """Issue 28.2: ``evalatlas ingest ''`` ingested the working directory."""
    (tmp_path / "here.jsonl").write_text('{"experiment_id": "x", "task_id": "t", '
                                         '"trajectory_id": "r", "reward": 1.0}\n')
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["--db", str(tmp_path / "s.duckdb"), "ingest", ""])
    assert res.exit_code == 2 and "an empty path names no file or folder" in res.output
    assert not (tmp_path / "s.duckdb").exists()  # nothing created
