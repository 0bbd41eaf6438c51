"""Coverage and consistency are visible (issue 10 item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.stats import wilson_interval

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
CLAUDE37 = "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"
runner = CliRunner()


def _summary(db: Path, *args: str) -> dict:
    res = runner.invoke(app, ["--db", str(db), "summary", "-f", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_swebench_leaderboard_disagreement_is_flagged(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["--db", str(db), "ingest", str(FIXTURES / "swebench-verified")])
    assert res.exit_code == 0, res.output
    doc = _summary(db, "-e", CLAUDE37)
    checks = doc["published"]
    assert len(checks) == 2  # the Verified and bash-only boards
    for c in checks:  # per-instance file: 51 / 500 resolved; the board says 52.8%
        assert (c["published"], c["evalatlas"], c["n_evalatlas"], c["agrees"]) == (
            0.528, 0.102, 500, False)
    assert any(CLAUDE37 in n and "differ" in n for n in doc["notes"])
    # the other systems' boards agree with their files to the board's rounding
    everything = _summary(db)["published"]
    agree = [c for c in everything if c["agrees"]]
    assert len(agree) >= 30


def test_terminal_bench_header_accuracy_recomputed(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    runner.invoke(app, ["--db", str(db), "ingest", str(FIXTURES / "terminal-bench")])
    checks = [c for c in _summary(db)["published"]
              if c["source"] == "terminal-bench results.json"]
    assert checks and all(c["agrees"] for c in checks)


@pytest.fixture
def partial(tmp_path: Path) -> Path:
    """An experiment of a 10-task benchmark that reports 4 tasks (3 passed)."""
    exp = {"experiment_id": "e1", "experiment_name": "partial", "timestamp": 1.0,
           "framework_name": "x", "framework_version": "1",
           "agent": {"agent_id": "a1", "name": "agent"}, "benchmark_name": "bench",
           "benchmark_subset": {"name": "bench", "n_tasks": 10}}
    eps = [{"experiment_id": "e1", "task_id": f"t{i}", "trajectory_id": f"t{i}",
            "reward": 1.0 if i < 3 else 0.0} for i in range(4)]
    src = tmp_path / "partial.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [exp, *eps]) + "\n")
    db = tmp_path / "p.duckdb"
    assert runner.invoke(app, ["--db", str(db), "ingest", str(src)]).exit_code == 0
    return db


def test_partial_coverage_is_shown_and_missing_can_fail(partial: Path) -> None:
    doc = _summary(partial)
    (row,) = doc["rows"]
    assert row["task_coverage"] == "4 / 10" and row["benchmark_tasks"] == 10
    assert row["success_rate"] == 0.75 and not row["missing_as_failures"]
    assert any("tasks 4 / 10" in n and "reported tasks only" in n for n in doc["notes"])
    table = runner.invoke(app, ["--db", str(partial), "summary", "-f", "markdown"]).stdout
    assert "4 / 10" in table
    (failed,) = _summary(partial, "--missing", "fail")["rows"]
    assert failed["success_rate"] == 0.3 and failed["missing_as_failures"]
    assert (failed["success_rate_ci_low"], failed["success_rate_ci_high"]) == pytest.approx(
        wilson_interval(3, 10))
