"""``evalatlas speedups`` over a store holding the real website table and a synthetic run."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalatlas.analysis.speedups import summarise
from evalatlas.analysis.speedups import task_payloads as _payloads
from evalatlas.cli.main import app
from evalatlas.metrics.outcomes import pass_at_k_over_tasks
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.speedups import load_speedup_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters"))
from test_fceval import RUN, SNAP_OK, TESTS_OK, _multi_agent_run, _pane, _trial

CSV = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "formulacode" / \
    "website_data.csv"
runner = CliRunner()


def task_payloads(store: StoreConnection, **filters: list[str]) -> list[dict]:
    rows = load_speedup_rows(store, **filters)
    return _payloads(rows.episodes, rows.measurements, rows.bounds)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("speedups")
    run_dir = root / RUN
    _multi_agent_run(run_dir)
    # a second attempt of the same task by gpt-4.1 that fails its tests: pass@k inputs
    by = {"terminus-2:gpt-4.1": {"m.f": {"agent/nop": 2.0, "oracle/nop": 1.0}}}
    for a in (2, 3):
        _trial(run_dir, "pandas_dev-pandas_105", "", _pane(
            {**TESTS_OK, "failed": 1} if a == 2 else TESTS_OK,
            {"last_agent": "terminus-2:gpt-4.1", "per_benchmark_speedups_by_agent": by},
            SNAP_OK), attempt=a)
    # tokens from the agent's JSON log, no reported cost: pricing fills it at ingest
    d = _trial(run_dir, "tok-task", "", _pane(
        TESTS_OK, {"last_agent": "codex:gpt-5", "per_benchmark_speedups": {
            "m.f": {"agent/nop": 2.0, "oracle/nop": 1.0}}}, SNAP_OK))
    (d / "agent-logs").mkdir()
    (d / "agent-logs" / "log.json").write_text(json.dumps([
        {"step": 1}, {"llm_metrics": {"accumulated_token_usage": {
            "prompt_tokens": 1000, "completion_tokens": 200}}}]))
    (run_dir / "run_metadata.json").write_text("{}")
    path = root / "s.duckdb"
    with StoreConnection(path) as store:
        rep = ingest_paths(store, [CSV, run_dir])
    assert rep.episodes == 9 + 4 + 2 + 1
    return path


def _json(db: Path, *args: str) -> dict:
    res = runner.invoke(app, ["--db", str(db), "speedups", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_by_agent(db: Path) -> None:
    env = _json(db)
    assert env["schema"] == "evalatlas.speedups/1" and env["level"] == 4
    rows = {r["agent"]: r for r in env["rows"]}
    assert set(rows) == {"nop", "oracle:oracle", "codex:gpt-5", "terminus-2:claude",
                         "terminus-2:gpt-5",
                         "terminus-2:oracle", "terminus-2:claude-sonnet-4",
                         "terminus-2:gpt-4.1"}
    cl = rows["terminus-2:claude-sonnet-4"]  # fell back: 1 - gmean(2, 1.5)
    assert cl["advantage"] == pytest.approx(1 - math.sqrt(3))
    assert cl["success_rate"] == 0.0 and cl["fallbacks"] == 1
    assert cl["beat_oracle_share"] == 0.0  # 1 - 2 and 1 - 1.5 are both negative
    # gpt-4.1: attempts 0 (passes), 1 (1 failure, single trial -> fails), 2 (passes)
    g = rows["terminus-2:gpt-4.1"]
    assert g["n_tasks"] == 3 and g["tasks"] == 1
    assert g["success_rate"] == pytest.approx(2 / 3)
    assert "accuracy" not in g and "mean_success_rate" not in g  # one name per metric
    assert set(g["pass_at_k"]) == {"2"}
    assert g["pass_at_k"]["2"] == pytest.approx(pass_at_k_over_tasks({"t": [1, 0, 1]}, 2))
    assert g["pass_at_k"]["2"] == pytest.approx(1.0)
    adv = [math.sqrt(6) - math.sqrt(3), 0.0, 1.0]  # the failed attempt falls back: 1 - 1
    assert g["advantage"] == pytest.approx(np.mean(adv))
    assert g["advantage_ci_low"] <= g["advantage"] <= g["advantage_ci_high"]
    assert g["mean_speedup"] == pytest.approx((math.sqrt(6) + 1.0 + 2.0) / 3)
    web = rows["terminus-2:gpt-5"]
    assert web["success_rate"] is None and web["pass_at_k"] == {}
    assert web["num_valid_benchmarks"] == 213 and web["n_tasks"] == 3
    # gpt-5 at the reference's override prices: 1000 x 1.25e-6 + 200 x 1e-5
    cx = rows["codex:gpt-5"]
    assert cx["mean_cost_per_task"] == pytest.approx(0.00325)
    assert cx["cost_weighted_advantage"] == pytest.approx(1.0 / 0.00325)
    assert cx["mean_trajectory_length"] == 2.0
    assert env["cost_by_agent_model"] == pytest.approx(
        {"codex:gpt-5": 0.00325, "terminus-2:claude-sonnet-4": 0.25})


def test_store_levels_equal_ingest_scores(db: Path) -> None:
    with StoreConnection(db, read_only=True) as store:
        payloads = task_payloads(store, agent=["terminus-2:claude"])
        scores = store.query(
            "SELECT e.task_id, TRY_CAST(e.scores->>'$.advantage_level2' AS DOUBLE) AS l2 "
            "FROM episodes e JOIN experiments x USING (experiment_id) "
            "WHERE x.agent_name = 'terminus-2:claude'")
    by_task = {s["task_id"]: s["l2"] for s in scores}
    assert len(payloads) == 3
    for p in payloads:
        assert p["agent_advantage_level2"] == pytest.approx(by_task[p["task_id"]], rel=1e-12)
    (row,) = summarise(payloads, level=2)
    assert row["advantage"] == pytest.approx(np.mean(list(by_task.values())))


@pytest.mark.parametrize("level", [1, 2, 3])
def test_level_and_by_task(db: Path, level: int) -> None:
    env = _json(db, "--level", str(level), "--by", "task", "--agent", "terminus-2:gpt-5")
    assert [r["task_id"] for r in env["rows"]] == [
        "astropy_astropy_21", "pandas_dev-pandas_15", "scikit-learn_scikit-learn_9"]
    for r in env["rows"]:
        assert r["advantage"] == r[f"agent_advantage_level{level}"]


def test_detail(db: Path) -> None:
    env = _json(db, "--detail", "--agent", "terminus-2:claude-sonnet-4")
    assert env["schema"] == "evalatlas.speedups.detail/1"
    rows = {r["benchmark"]: r for r in env["rows"]}
    assert rows["m.A.f(1)"]["speedup_agent"] == 1.0 and rows["m.A.f(1)"][
        "fallback_to_baseline"] is True
    assert rows["m.A.f(1)"]["params"] == "1"


def test_table_and_markdown_render(db: Path) -> None:
    res = runner.invoke(app, ["--db", str(db), "speedups", "--format", "markdown"])
    assert res.exit_code == 0 and "terminus-2:gpt-4.1" in res.stdout
    res = runner.invoke(app, ["--db", str(db), "speedups", "--by", "nope"])
    assert res.exit_code == 2


def test_empty_store(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "e.duckdb"):
        pass
    res = runner.invoke(app, ["--db", str(tmp_path / "e.duckdb"), "speedups"])
    assert res.exit_code == 2  # an empty store is an error that says how to fill it
    assert "is empty" in res.output and "evalatlas ingest" in res.output


@pytest.mark.parametrize(("args", "kwargs"), [
    ([], {}),
    (["--level", "2", "--by", "task", "--confidence", "0.9"],
     {"level": 2, "by": "task", "confidence": 0.9}),
    (["--agent", "terminus-2:gpt-4.1", "--agent", "codex:gpt-5"],
     {"agent": ["terminus-2:gpt-4.1", "codex:gpt-5"]}),
    (["--task", "no-such-task"], {"task": ["no-such-task"]}),
])
def test_cli_json_is_the_api_results_to_dict(db: Path, args: list[str], kwargs: dict) -> None:
    """``evalatlas speedups --format json`` prints ``ea.speedups(...).to_dict()`` and
    nothing more (the total-cost sentence is one of the result's notes)."""
    import evalatlas as ea

    cli = _json(db, *args)
    with ea.open(db, read_only=True) as store:
        result = ea.speedups(store, **kwargs)
    assert cli == result.to_dict()
    assert cli["notes"] == result.notes and len(result.notes) == 1
    assert result.notes[0].startswith("total cost: " if result.rows else
                                      "the store has no FC-Eval episodes")


@pytest.mark.parametrize(("args", "kwargs"), [
    (["--limit", "5"], {"limit": 5}),
    (["--agent", "terminus-2:claude-sonnet-4"], {"agent": ["terminus-2:claude-sonnet-4"]}),
    # names people type (issue 21.5): case and separators do not matter
    (["--agent", "Terminus 2:Claude Sonnet 4"], {"agent": "terminus-2:claude-sonnet-4"}),
])
def test_detail_cli_json_is_the_api_results_to_dict(db: Path, args: list[str],
                                                    kwargs: dict) -> None:
    import evalatlas as ea

    cli = _json(db, "--detail", *args)
    with ea.open(db, read_only=True) as store:
        assert cli == ea.speedup_detail(store, **kwargs).to_dict()


def test_unknown_agent_is_an_error_with_candidates(db: Path) -> None:
    import evalatlas as ea
    from evalatlas.errors import ArgumentError

    res = runner.invoke(app, ["--db", str(db), "speedups", "--detail", "--agent", "nobody"])
    assert res.exit_code == 2 and "'nobody' matches no agent" in res.output
    with ea.open(db, read_only=True) as store, pytest.raises(ArgumentError, match="agent"):
        ea.speedup_detail(store, agent="nobody")
