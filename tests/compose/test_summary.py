"""The composed summary (issue 21): benchmarks never pooled, filters, run status, the
source's headline beside ours, pass@k over the tasks that allow it, cost per episode and
per success with intervals, rows ranked by success rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_logs import derived_log, graded_log, journal_only_eval, write_json
from typer.testing import CliRunner

import evalatlas.api as ea
from evalatlas.cli.main import app
from evalatlas.errors import ArgumentError


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _exp(eid: str, agent: str, bench: str, n_tasks: int) -> dict:
    # the agent id hashes the agent's config: one config per agent name
    return {"experiment_id": eid, "experiment_name": eid,
            "agent": {"name": agent, "config": {"agent": agent}},
            "benchmark_name": bench, "benchmark_subset": {"name": bench, "n_tasks": n_tasks}}


def _ep(eid: str, task: str, attempt: int, reward: float, cost: float | None = None) -> dict:
    row = {"experiment_id": eid, "task_id": task, "trajectory_id": f"{eid}-{task}-{attempt}",
           "attempt": attempt, "reward": reward}
    if cost is not None:
        row["usage"] = {"total_cost_usd": cost}
    return row


@pytest.fixture
def two_benchmarks(tmp_path: Path) -> Path:
    """alpha ran bench-x (4 tasks x 2 attempts) and bench-y (2 tasks x 1); beta ran
    bench-x only."""
    rows = [_exp("ax", "alpha", "bench-x", 4), _exp("ay", "alpha", "bench-y", 2),
            _exp("bx", "Beta", "bench-x", 4)]
    for t, outs in enumerate([(1, 1), (1, 0), (0, 0), (1, 1)]):
        rows += [_ep("ax", f"t{t}", a, float(o), cost=0.5 + a + 0.25 * t)
                 for a, o in enumerate(outs)]
    rows += [_ep("ay", "y0", 0, 0.0, cost=1.0), _ep("ay", "y1", 0, 0.0, cost=1.0)]
    for t, outs in enumerate([(1, 1), (1, 1), (0, 1), (1, 1)]):
        rows += [_ep("bx", f"t{t}", a, float(o), cost=2.0) for a, o in enumerate(outs)]
    db = tmp_path / "two.duckdb"
    with ea.open(db) as store:
        rep = store.ingest(_jsonl(tmp_path / "runs.jsonl", rows))
        assert rep.rejected == 0, rep.problems[:3]
    return db


def test_an_agent_on_two_benchmarks_gets_a_row_per_benchmark(two_benchmarks: Path) -> None:
    res = ea.summary(two_benchmarks)
    assert res.meta["group_by"] == ["benchmark", "agent"]
    assert [(r["benchmark"], r["agent"]) for r in res.rows] == [
        ("bench-x", "Beta"), ("bench-x", "alpha"), ("bench-y", "alpha")]
    x_alpha = res.rows[1]
    assert (x_alpha["episodes"], x_alpha["successes"], x_alpha["success_rate"]) == (8, 5, 0.625)
    assert x_alpha["pass_at_k"]["2"]["value"] == pytest.approx(0.75)  # t0, t1, t3
    assert res.rows[2]["success_rate"] == 0.0 and res.rows[2]["tasks"] == 2
    assert any("never pooled" in n for n in res.notes)
    # nothing pools 5 + 0 successes over 10 episodes
    assert all(r["episodes"] != 10 for r in res.rows)


def test_benchmark_and_agent_filters(two_benchmarks: Path) -> None:
    res = ea.summary(two_benchmarks, benchmark="BENCH-Y")
    assert res.meta["group_by"] == ["agent"]
    assert [(r["agent"], r["episodes"]) for r in res.rows] == [("alpha", 2)]
    res = ea.summary(two_benchmarks, agent=["beta"])  # names without case
    assert [(r["agent"], r["episodes"]) for r in res.rows] == [("Beta", 8)]
    res = ea.summary(two_benchmarks, agent="alpha", benchmark="bench-x")
    assert [(r["agent"], r["episodes"]) for r in res.rows] == [("alpha", 8)]
    # the one matcher of names people type (issue 21.5): closest candidates listed
    with pytest.raises(ArgumentError, match=r"benchmark: 'bench-z' matches no benchmark; "
                                            r"closest: benchmark bench-x, benchmark bench-y"):
        ea.summary(two_benchmarks, benchmark="bench-z")
    with pytest.raises(ArgumentError, match=r"agent: 'gamma' matches no agent; closest: "
                                            r"agent alpha"):
        ea.summary(two_benchmarks, agent="gamma")
    res = ea.summary(two_benchmarks, benchmark="Bench Y")  # separators alike
    assert [(r["agent"], r["episodes"]) for r in res.rows] == [("alpha", 2)]


def test_rows_are_ranked_by_success_rate_ties_by_name(tmp_path: Path) -> None:
    rows = [_exp(e, a, "b", 2) for e, a in (("e1", "zeta"), ("e2", "Alpha"), ("e3", "mid"))]
    for e, outs in (("e1", (1, 1)), ("e2", (1, 0)), ("e3", (1, 0))):
        rows += [_ep(e, f"t{i}", 0, float(o)) for i, o in enumerate(outs)]
    db = tmp_path / "r.duckdb"
    with ea.open(db) as store:
        store.ingest(_jsonl(tmp_path / "r.jsonl", rows))
    assert [r["agent"] for r in ea.summary(db).rows] == ["zeta", "Alpha", "mid"]
    out = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "csv"]).output
    assert [line.split(",")[0] for line in out.splitlines()[1:4]] == ["zeta", "Alpha", "mid"]


def test_cost_per_episode_and_per_success_with_intervals(two_benchmarks: Path) -> None:
    (row,) = ea.summary(two_benchmarks, agent="alpha", benchmark="bench-x").rows
    # task t costs 0.5 + 0.25 t and 1.5 + 0.25 t: 8 episodes, $11; 5 successes
    assert row["cost_per_episode"] == pytest.approx(11 / 8)
    assert row["cost_per_success"] == pytest.approx(11 / 5)
    for f in ("cost_per_episode", "cost_per_success"):
        lo, hi = row[f"{f}_ci_low"], row[f"{f}_ci_high"]
        assert lo is not None and 0 <= lo <= row[f] <= hi, (f, lo, hi)
    (y,) = ea.summary(two_benchmarks, benchmark="bench-y").rows
    # every task costs the same: no spread to estimate, so no interval, and a reason
    assert y["cost_per_episode"] == 1.0 and y["cost_per_episode_ci_low"] is None
    assert "no spread" in y["cost_per_episode_ci_note"]
    assert y["cost_per_success"] == float("inf")  # spent $2, never succeeded
    assert ea.summary(two_benchmarks, benchmark="bench-y").to_dict()["rows"][0][
        "cost_per_success"] == "inf"


def test_pass_at_k_over_the_tasks_with_k_scored_attempts(tmp_path: Path) -> None:
    rows = [_exp("e", "solo", "b", 3)]
    rows += [_ep("e", "t0", 0, 1.0), _ep("e", "t0", 1, 0.0), _ep("e", "t1", 0, 0.0),
             _ep("e", "t1", 1, 0.0), _ep("e", "t2", 0, 1.0)]
    # t2's second attempt errored: no outcome, not a scored attempt
    rows.append({"experiment_id": "e", "task_id": "t2", "trajectory_id": "e-t2-1",
                 "attempt": 1, "reward": None, "status": "error"})
    db = tmp_path / "p.duckdb"
    with ea.open(db) as store:
        store.ingest(_jsonl(tmp_path / "p.jsonl", rows))
    (row,) = ea.summary(db).rows
    p2 = row["pass_at_k"]["2"]
    assert (p2["tasks"], p2["tasks_total"]) == (2, 3)
    assert p2["value"] == pytest.approx(0.5)  # t0 passes within 2, t1 does not
    assert row["pass_at_k"]["1"]["tasks"] == 3
    out = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "markdown"]).output
    assert "@2 50.0%" in out and "over 2 of 3 tasks" in out


def test_inspect_epochs_with_max_reducer_show_the_harness_headline(tmp_path: Path,
                                                                   fixtures: Path) -> None:
    # 5 samples x 2 epochs, max reducer: Inspect says 0.8 (any success), per attempt 0.5
    outcomes = [["C", "I"], ["I", "C"], ["C", "C"], ["I", "I"], ["I", "C"]]
    log = write_json(derived_log(fixtures, samples=5, epochs=2, outcomes=outcomes,
                                 reducer="max", task="arith-hidden-b"), tmp_path / "b.json")
    db = tmp_path / "i.duckdb"
    with ea.open(db) as store:
        assert store.ingest(log).rejected == 0
    res = ea.summary(db)
    (row,) = res.rows
    assert row["success_rate"] == 0.5 and row["run_status"] == "complete"
    (head,) = row["published"]
    assert head["value"] == pytest.approx(0.8) and head["agrees"] is True
    assert head["differs_because"] == ("Inspect: max over 2 epochs, i.e. any success; "
                                       "evalatlas: per attempt")
    table = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "markdown"]).output
    assert "80.0% (Inspect: max over 2 epochs, i.e. any success; evalatlas: per attempt)" \
        in table


def test_crashed_inspect_run_is_incomplete_with_planned_samples(tmp_path: Path,
                                                                fixtures: Path) -> None:
    # 40 samples x 2 epochs planned, 56 logged, status started (the crashed run)
    outcomes = [["C", "I"] if i % 2 else ["I", "I"] for i in range(40)]
    log = write_json(derived_log(fixtures, samples=40, epochs=2, outcomes=outcomes,
                                 status="started", done=56, run="crash"),
                     tmp_path / "crash.json")
    db = tmp_path / "c.duckdb"
    with ea.open(db) as store:
        assert store.ingest(log).rejected == 0
    res = ea.summary(db)
    (row,) = res.rows
    assert row["episodes"] == 56 and row["planned_samples"] == 80
    assert row["run_status"] == "incomplete"
    assert row["run_status_note"] == "incomplete: 56 of 80 planned samples (Inspect status started)"
    assert row["sample_coverage"] == "56 / 80"
    assert any("did not finish" in n and "56 of 80" in n for n in res.notes)
    table = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "markdown"]).output
    assert "incomplete: 56 of 80 planned samples" in table


def test_journal_only_eval_and_cancelled_log_are_incomplete(tmp_path: Path,
                                                            fixtures: Path) -> None:
    crashed = journal_only_eval(fixtures, tmp_path / "crashed.eval")
    db = tmp_path / "j.duckdb"
    with ea.open(db) as store:
        assert store.ingest(crashed, fixtures / "inspect" / POPULARITY_CANCELLED).rejected == 0
    rows = {r["agent"]: r for r in ea.summary(db).rows}
    j = rows["ollama/gemma3"]
    assert j["run_status"] == "incomplete"
    assert j["run_status_note"] == ("incomplete: Inspect status started, log rebuilt from "
                                "_journal/, though all 1 planned samples ran")
    c = rows["openai/gpt-4o-mini"]
    assert c["run_status_note"] == ("incomplete: Inspect status cancelled, though all 3 planned "
                                "samples ran")


POPULARITY_CANCELLED = "2025-05-12T20-28-13-04-00_popularity.json"


def test_evallog_with_fewer_episodes_than_planned_is_incomplete(tmp_path: Path) -> None:
    rows = [_exp("e", "solo", "b", 4), _exp("f", "full", "b", 2)]
    rows += [_ep("e", "t0", 0, 1.0), _ep("e", "t0", 1, 0.0), _ep("e", "t1", 0, 1.0)]
    rows += [_ep("f", "t0", 0, 1.0), _ep("f", "t1", 0, 0.0)]
    db = tmp_path / "e.duckdb"
    with ea.open(db) as store:
        store.ingest(_jsonl(tmp_path / "e.jsonl", rows))
    rows_by = {r["agent"]: r for r in ea.summary(db).rows}
    assert rows_by["solo"]["run_status_note"] == ("incomplete: 3 of 8 planned samples "
                                              "(4 tasks x 2 attempts)")
    assert rows_by["solo"]["planned_samples"] == 8
    assert rows_by["full"]["run_status"] == "complete"


def test_cube_running_episodes_make_the_run_incomplete(tmp_path: Path, fixtures: Path) -> None:
    import shutil

    exp = tmp_path / "v2_with_status"
    shutil.copytree(fixtures / "cube" / "xray" / "v2_with_status", exp)
    status = exp / "episodes" / "task_1_ep0" / "status.json"
    data = json.loads(status.read_text())
    data["status"] = "RUNNING"
    status.write_text(json.dumps(data))
    db = tmp_path / "cube.duckdb"
    with ea.open(db) as store:
        assert store.ingest(exp).rejected == 0
    (row,) = ea.summary(db).rows
    assert row["run_status"] == "incomplete"
    assert "episodes 1 queued or running" in row["run_status_note"]


def test_swebench_claude_37_headline_differs_from_its_own_data(fixtures: Path,
                                                               tmp_path: Path) -> None:
    db = tmp_path / "swe.duckdb"
    run = fixtures / "swebench-verified" / "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"
    with ea.open(db) as store:
        assert store.ingest(run).rejected == 0
    res = ea.summary(db)
    (row,) = res.rows
    assert row["success_rate"] == pytest.approx(0.102)
    assert [h["board"] for h in row["published"]] == ["Verified"]
    head = row["published"][0]
    assert head["value"] == pytest.approx(0.528) and head["agrees"] is False
    assert head["differs_because"] == "the source's own per-sample data give 10.2%"
    # one row per board, each named: no two rows alike
    boards = [(p["board"], p["published"]) for p in res.meta["published"]]
    assert boards == [("Verified", 0.528), ("bash-only", 0.528)]
    out = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "markdown"]).output
    assert "Published by the source vs recomputed by evalatlas (2 numbers)" in out
    assert "| Verified | reward | accuracy | 0.528 | 0.102 |" in out
    assert "| bash-only | reward | accuracy | 0.528 | 0.102 |" in out


def test_compare_and_atlas_say_a_run_did_not_finish(tmp_path: Path, fixtures: Path) -> None:
    outcomes = [["C", "I"] if i % 3 else ["I", "C"] for i in range(40)]
    crash = write_json(derived_log(fixtures, samples=40, epochs=2, outcomes=outcomes,
                                   status="started", done=56, run="crash"),
                       tmp_path / "crash.json")
    ok = derived_log(fixtures, samples=40, epochs=2, outcomes=outcomes, run="ok")
    ok["eval"]["model"] = "openai/gpt-4o"  # another agent on the same task
    ok = write_json(ok, tmp_path / "ok.json")
    db = tmp_path / "ca.duckdb"
    with ea.open(db) as store:
        assert store.ingest(crash, ok).rejected == 0
    cmp = ea.compare(db, "crash", "ok")
    assert any("1 experiment(s) did not finish" in n and
               "crash: incomplete: 56 of 80 planned samples" in n for n in cmp.notes)
    out = CliRunner().invoke(app, ["--db", str(db), "compare", "crash", "ok"]).output
    assert "incomplete: 56 of 80 planned samples" in " ".join(out.split())
    from evalatlas.atlas.api import fit

    assert any("did not finish" in n and "56 of 80" in n for n in fit(db).notes)


def test_coverage_notes_name_benchmark_and_agent(tmp_path: Path) -> None:
    rows = [_exp("ax", "alpha", "bench-x", 6), _exp("ay", "alpha", "bench-y", 1)]
    rows += [_ep("ax", f"t{t}", 0, 1.0) for t in range(4)] + [_ep("ay", "y0", 0, 0.0)]
    db = tmp_path / "cov.duckdb"
    with ea.open(db) as store:
        store.ingest(_jsonl(tmp_path / "cov.jsonl", rows))
    notes = ea.summary(db).notes
    assert any(n.startswith("bench-x / alpha: tasks 4 / 6; the missing 2 are left out")
               for n in notes), notes


def test_a_graders_usage_is_shown_apart_from_the_agents_and_in_the_run_total(
        tmp_path: Path, fixtures: Path) -> None:
    """Issue #21 point 6: an Inspect log whose grader (model roles) used tokens; the
    grader's 3 samples: 110 + 111 + 112 = 333 tokens, 3 x $0.01; the agent's 198 tokens,
    3 x $0.001 (the popularity fixture's own token counts)."""
    log = write_json(graded_log(fixtures), tmp_path / "graded.json")
    db = tmp_path / "g.duckdb"
    with ea.open(db) as store:
        assert store.ingest(log).rejected == 0
    (row,) = ea.summary(db).rows
    assert (row["total_tokens"], row["judge_tokens"], row["run_total_tokens"]) == \
        (198, 333, 198 + 333)
    assert row["total_cost_usd"] == pytest.approx(0.003)
    assert row["judge_cost_usd"] == pytest.approx(0.03)
    assert row["run_total_cost_usd"] == pytest.approx(0.033)
    assert (row["judge_usage_episodes"], row["judge_cost_unknown_episodes"]) == (3, 0)
    # the same numbers as the adapter's run totals in the experiment record
    with ea.open(db, read_only=True) as store:
        (extra,) = [r["extra"] for r in store.query("SELECT extra FROM experiments")]
    totals = json.loads(extra)["inspect"]["usage_totals"]
    assert totals["total"]["total_tokens"] == row["run_total_tokens"]
    assert totals["total"]["total_cost"] == pytest.approx(row["run_total_cost_usd"])

    out = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    (jrow,) = doc["rows"]
    assert (jrow["judge_tokens"], jrow["run_total_tokens"]) == (333, 531)
    assert jrow["judge_cost_usd"] == pytest.approx(0.03)
    note = next(n for n in doc["notes"] if "judge tokens" in n)
    assert "per-sample model_usage" in note and "retried" in note
    table = CliRunner().invoke(app, ["--db", str(db), "summary", "--format", "markdown"])
    assert table.exit_code == 0, table.output
    for text in ("judge tokens", "judge cost", "total tokens (agent+judge)",
                 "total cost (agent+judge)", "| 333 |", "| 531 |", "$0.0300", "$0.0330"):
        assert text in table.output, text


def test_without_judge_usage_the_judge_fields_are_none_not_zero(
        two_benchmarks: Path) -> None:
    res = ea.summary(two_benchmarks)
    for row in res.rows:
        assert row["judge_usage_episodes"] == 0
        assert (row["judge_tokens"], row["judge_cost_usd"], row["run_total_tokens"],
                row["run_total_cost_usd"]) == (None, None, None, None)
    assert not any("judge tokens" in n for n in res.notes)
    table = CliRunner().invoke(app, ["--db", str(two_benchmarks), "summary"]).output
    assert "judge" not in table  # no column of dashes in the terminal table
