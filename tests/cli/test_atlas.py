"""``evalatlas atlas ...`` end to end on real fixtures and a drifted benchmark."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
runner = CliRunner()

AGENT_FIELDS = {"agent", "agent_id", "ability", "ability_se", "ability_ci_low",
                "ability_ci_high", "tasks_observed", "flags"}
ITEM_FIELDS = {"benchmark", "task_id", "task_version_hash", "difficulty", "discrimination",
               "difficulty_se", "discrimination_se", "flags"}
DIAG_FIELDS = {"heldout_auc", "heldout_log_loss", "ece", "cells_observed", "cells_heldout",
               "model", "seconds"}


def _run(args: list[str], code: int = 0) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == code, res.output
    return res.stdout if code == 0 else res.output


@pytest.fixture(scope="module")
def swe_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("atlas") / "s.duckdb"
    _run(["--db", str(db), "ingest", str(FIXTURES / "swebench-verified")])
    return db


def _write_drifted(path: Path) -> None:
    """3 agents on benchmark 'toy': task t1 changed version after agent a ran it."""
    lines = []
    for agent in ("a", "b", "c"):
        lines.append({"experiment_id": f"exp-{agent}", "experiment_name": f"run {agent}",
                      "agent": {"name": f"agent-{agent}", "config": {"name": agent},
                                "description": f"{agent} react agent on gpt-4o"},
                      "benchmark_name": "toy",
                      "benchmark_subset": {"name": "toy", "n_tasks": 5}})
        for t in range(1, 5):
            version = "v1" if (t == 1 and agent == "a") else "v2"
            lines.append({"experiment_id": f"exp-{agent}", "task_id": f"t{t}",
                          "task_version_hash": version, "trajectory_id": f"{agent}-{t}",
                          "reward": float((t + ord(agent)) % 2)})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def test_fit_json_fields(swe_db: Path) -> None:
    out = json.loads(_run(["--db", str(swe_db), "atlas", "fit", "--holdout", "0.1",
                           "--seed", "3", "--format", "json"]))
    assert out["schema"] == "evalatlas.atlas.fit/1"
    assert len(out["agents"]) == 20 and len(out["items"]) == 500
    for row in out["agents"]:
        assert row.keys() >= AGENT_FIELDS
        assert row["ability_ci_low"] < row["ability"] < row["ability_ci_high"]
    for row in out["items"]:
        assert row.keys() >= ITEM_FIELDS
        assert row["discrimination"] > 0 and row["discrimination_se"] > 0
    d = out["diagnostics"]
    assert d.keys() >= DIAG_FIELDS
    assert d["model"] == "2pl" and d["cells_heldout"] == round(0.1 * 20 * 500)
    # issue 21.7: the stored fit uses every cell; the held-out ones score diagnostics only
    assert d["cells_observed"] == 20 * 500
    assert all(r["tasks_observed"] == 500 for r in out["agents"])
    assert 0.8 < d["heldout_auc"] <= 1 and 0 <= d["ece"] < 0.1
    # tasks nobody / everybody solved are named, not dropped
    flagged = {f for r in out["items"] for f in r["flags"]}
    assert {"no_success", "all_success"} <= flagged
    # stored: abilities reads the same fit back
    ab = json.loads(_run(["--db", str(swe_db), "atlas", "abilities", "--format", "json"]))
    assert ab["fit_id"] == out["fit_id"]
    assert {r["agent_id"]: r["ability"] for r in ab["rows"]} == {
        r["agent_id"]: r["ability"] for r in out["agents"]}


def test_1pl_has_null_discrimination(swe_db: Path) -> None:
    out = json.loads(_run(["--db", str(swe_db), "atlas", "fit", "--model", "1pl",
                           "--format", "json"]))
    assert all(r["discrimination"] is None and r["discrimination_se"] is None
               for r in out["items"])


def test_items_next_tasks_estimate(swe_db: Path) -> None:
    items = json.loads(_run(["--db", str(swe_db), "atlas", "items", "-b",
                             "swe-bench-verified", "--format", "json"]))
    assert len(items["rows"]) == 500
    fit = json.loads(_run(["--db", str(swe_db), "atlas", "abilities", "-b",
                           "swe-bench-verified", "--format", "json"]))
    agent = fit["rows"][0]["agent"]
    nxt = json.loads(_run(["--db", str(swe_db), "atlas", "next-tasks", agent, "--k", "5",
                           "-b", "swe-bench-verified", "--format", "json"]))
    # every system ran all 500 instances: nothing left to suggest, and it says so
    assert nxt["rows"] == []
    assert nxt["notes"] == [f"{agent} ran every one of the 500 tasks of this fit: there is "
                            "no task left to suggest (`atlas estimate` gives its measured "
                            "success rate)"]
    est = json.loads(_run(["--db", str(swe_db), "atlas", "estimate", agent, "-b",
                           "swe-bench-verified", "--format", "json"]))
    for key in ("ability", "ability_ci_low", "ability_ci_high", "predicted_success_rate",
                "predicted_success_rate_ci_low", "predicted_success_rate_ci_high",
                "tasks_observed"):
        assert key in est
    assert est["tasks_observed"] == 500
    # measured, not predicted: no zero-width interval, and the note says why
    assert est["predicted_success_rate_ci_low"] is None
    assert est["predicted_success_rate_ci_high"] is None
    assert any("measured, not predicted" in n for n in est["notes"])
    # an observed agent: estimate and abilities agree (one fit on all its cells)
    assert est["method"] == "fitted"
    assert est["ability"] == fit["rows"][0]["ability"]
    # a typo is an error naming the closest agents, not a cold start
    err = _run(["--db", str(swe_db), "atlas", "estimate", "nobody", "-b",
                "swe-bench-verified"], code=2)
    assert "'nobody' matches no agent" in err and "(--new-agent)" in err
    err = _run(["--db", str(swe_db), "atlas", "next-tasks", "Gemini 3 Pro Previwe"], code=2)
    assert "closest: agent Gemini 3 Pro Preview (2025-11-18)" in err
    # names people type
    typed = json.loads(_run(["--db", str(swe_db), "atlas", "estimate", agent.upper(), "-b",
                             "SWE bench verified", "--format", "json"]))
    assert typed == est
    new = json.loads(_run(["--db", str(swe_db), "atlas", "estimate", "nobody", "-b",
                           "swe-bench-verified", "--new-agent", "--format", "json"]))
    assert new["method"] == "population-prior" and new["tasks_observed"] == 0
    assert new["agent_id"] is None and "a new agent (cold start)" in new["notes"][0]
    assert new["predicted_success_rate_ci_high"] - new["predicted_success_rate_ci_low"] > 0.4
    # the CLI's JSON is the API's to_dict() (ea.atlas)
    fitted = ea.atlas.stored_fit(swe_db, benchmark=["swe-bench-verified"])
    assert fitted.abilities().to_dict() == fit
    assert ea.atlas.with_verdicts(fitted.item_table(), ea.failures(
        swe_db, benchmark="swe-bench-verified")).to_dict() == items  # + investigator verdicts
    api_next = ea.atlas.suggest_tasks(agent, swe_db, count=5, benchmark="swe-bench-verified")
    assert api_next.to_dict() == nxt
    assert ea.atlas.estimate(agent, swe_db, benchmark="swe-bench-verified").to_dict() == est


def test_matrix_long_format(swe_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.parquet"
    _run(["--db", str(swe_db), "atlas", "matrix", "-o", str(out)])
    t = pq.read_table(out)
    assert t.num_rows == 20 * 500
    assert {"agent_id", "task_id", "task_version_hash", "k", "n", "value"} <= set(
        t.column_names)
    out_csv = tmp_path / "m.csv"
    _run(["--db", str(swe_db), "atlas", "matrix", "-o", str(out_csv)])
    with out_csv.open(encoding="utf-8") as fh:
        assert sum(1 for _ in csv.DictReader(fh)) == 20 * 500


def test_drift_listing_and_refuse(tmp_path: Path) -> None:
    src = tmp_path / "toy.jsonl"
    _write_drifted(src)
    db = tmp_path / "d.duckdb"
    _run(["--db", str(db), "ingest", str(src)])
    rows = json.loads(_run(["--db", str(db), "atlas", "drift", "--format", "json"]))["rows"]
    assert rows == [{"benchmark": "toy", "task_id": "t1", "hashes": [
        {"task_version_hash": "v1", "agents": ["agent-a"]},
        {"task_version_hash": "v2", "agents": ["agent-b", "agent-c"]}]}]
    assert ea.atlas.drift(db).rows == rows
    assert ea.atlas.drift(db).to_dict() == json.loads(
        _run(["--db", str(db), "atlas", "drift", "--format", "json"]))
    err = _run(["--db", str(db), "atlas", "fit", "--drift", "refuse"], code=2)
    assert "t1" in err and "v1" in err and "v2" in err
    out = json.loads(_run(["--db", str(db), "atlas", "fit", "--holdout", "0",
                           "--format", "json"]))
    t1 = sorted(r["task_version_hash"] for r in out["items"] if r["task_id"] == "t1")
    assert t1 == ["v1", "v2"]  # two items by default
    assert out["drifted_tasks"][0]["task_id"] == "t1"
    merged = json.loads(_run(["--db", str(db), "atlas", "fit", "--drift", "merge",
                              "--holdout", "0", "--format", "json"]))
    assert len([r for r in merged["items"] if r["task_id"] == "t1"]) == 1
    # coverage: 4 of n_tasks=5 run -> sensitivity band
    cov = out["coverage"][0]
    assert cov["tasks_run"] == 4 and cov["n_tasks"] == 5
    assert (cov["success_rate_unreported_as_failures"]
            <= cov["success_rate_unreported_as_predicted"])
    est = json.loads(_run(["--db", str(db), "atlas", "estimate", "newcomer",
                           "--description", "a react agent on gpt-4o", "--format", "json"]))
    assert est["method"] == "description-nearest-neighbour"
    assert any("weak" in n for n in est["notes"])


def test_bad_options_fail_cleanly(swe_db: Path) -> None:
    err = _run(["--db", str(swe_db), "atlas", "fit", "--model", "3pl"], code=2)
    assert "unknown model" in err
    err = _run(["--db", str(swe_db), "atlas", "fit", "-b", "no-such-benchmark"], code=2)
    assert "'no-such-benchmark' matches no benchmark; closest: benchmark" in err
    err = _run(["--db", str(swe_db), "atlas", "items", "--sort", "discrimination",
                "--hardest"], code=2)
    assert "hardest orders by difficulty" in err


def test_items_sorted_with_observed_success(swe_db: Path) -> None:
    """Issue 21.7: ``atlas items --sort difficulty|discrimination --top N [--hardest]``."""
    _run(["--db", str(swe_db), "atlas", "fit", "--model", "2pl"])  # the latest fit
    full = json.loads(_run(["--db", str(swe_db), "atlas", "items", "--format", "json"]))
    hard = json.loads(_run(["--db", str(swe_db), "atlas", "items", "--hardest", "--top", "5",
                            "--format", "json"]))
    assert len(hard["rows"]) == 5
    by_diff = sorted(full["rows"], key=lambda r: (-r["difficulty"], r["task_id"]))
    assert [r["task_id"] for r in hard["rows"]] == [r["task_id"] for r in by_diff[:5]]
    assert hard["notes"][-1] == "the first 5 of 500 items by difficulty, hardest first"
    easy = json.loads(_run(["--db", str(swe_db), "atlas", "items", "--sort", "DIFFICULTY",
                            "--top", "3", "--format", "json"]))
    assert [r["difficulty"] for r in easy["rows"]] == sorted(
        r["difficulty"] for r in full["rows"])[:3]
    disc = json.loads(_run(["--db", str(swe_db), "atlas", "items", "--sort",
                            "discrimination", "--top", "4", "--format", "json"]))
    assert [r["discrimination"] for r in disc["rows"]] == sorted(
        (r["discrimination"] for r in full["rows"]), reverse=True)[:4]
    # the observed success rate: successes over attempts of the 20 systems on the task
    for r in hard["rows"]:
        assert r["success_rate_observed"] is not None and 0 <= r["success_rate_observed"] <= 1
    assert min(r["success_rate_observed"] for r in full["rows"]) == 0.0
    table = _run(["--db", str(swe_db), "atlas", "items", "--hardest", "--top", "2"])
    assert "observed success" in table
