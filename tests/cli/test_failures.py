"""``evalatlas failures``: the JSON envelope evalatlas.failures/1 equals ``ea.failures``,
tables show shares, root causes and suspect tasks, and a store without findings says so."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _store(tmp_path: Path, findings: bool = True) -> Path:
    """The demo store; with ``findings``, every failed episode of task toy-013 is
    called infeasible (3 agents) and the rest wrong answers."""
    db = tmp_path / "f.duckdb"
    with ea.open(db) as s:
        s.ingest(REPO / "examples")
        if findings:  # test data written straight into the store, as an import would
            s.con.execute("""
                UPDATE episodes SET findings = CASE WHEN task_id = 'toy-013' THEN
                  '{"difficulty": "hard", "feasible": false, "failure_category":
                    "task_broken", "failure_root_cause": "The grader expects a typo.",
                    "evidence": "<b>expected: 4l</b>"}'
                  ELSE '{"difficulty": "easy", "feasible": true, "failure_category":
                    "wrong_answer", "failure_root_cause": "Off by one."}' END
                WHERE success = false AND trajectory_id NOT LIKE '%ep2'""")
    return db


def test_json_envelope_is_the_api_result(tmp_path: Path) -> None:
    db = _store(tmp_path)
    r = runner.invoke(app, ["--db", str(db), "failures", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out == ea.failures(db).to_dict()
    assert out["schema"] == "evalatlas.failures/1"
    tiny = {x["category"]: x for x in out["rows"] if x["group"] == "tiny-mini"}
    assert tiny["wrong_answer"]["failures"] == 33
    inv = tiny["wrong_answer"]["investigated"]
    assert tiny["wrong_answer"]["not_investigated"] == 33 - inv > 0  # the ep2 attempts
    assert tiny["wrong_answer"]["episodes"] + tiny["task_broken"]["episodes"] == inv
    for x in out["rows"]:
        if x["share"] is not None:
            assert 0 <= x["ci_low"] <= x["share"] <= x["ci_high"] <= 1
    assert [t["task_id"] for t in out["suspect_tasks"]] == ["toy-013"]
    assert "have no failure category" in " ".join(out["notes"])


def test_table_and_markdown_show_causes_and_suspects(tmp_path: Path) -> None:
    db = _store(tmp_path)
    r = runner.invoke(app, ["--db", str(db), "failures", "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert "Top root causes" in r.stdout and "Off by one." in r.stdout
    assert "toy-013" in r.stdout and "yes" in r.stdout
    assert "<b>" not in r.stdout  # agent-produced text is escaped
    r = runner.invoke(app, ["--db", str(db), "failures", "--by", "label:tier"])
    assert r.exit_code == 0 and "T0" in r.stdout
    r = runner.invoke(app, ["--db", str(db), "failures", "--by", "nonsense"])
    assert r.exit_code == 2 and "Traceback" not in r.output and "by" in r.output


def test_without_findings_every_failure_is_not_investigated(tmp_path: Path) -> None:
    db = _store(tmp_path, findings=False)
    out = ea.failures(db, benchmark="toybench")
    assert all(r["share"] is None for r in out.rows)
    assert sum(r["not_investigated"] for r in out.rows if r["category"] == "other") == 69
    assert out.meta["suspect_tasks"] == []
