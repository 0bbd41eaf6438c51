"""``atlas fit --exclude-infeasible`` and the verdict column of ``atlas items``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_fit_exclude_infeasible_and_items_verdicts(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    with ea.open(db) as s:
        s.ingest(REPO / "examples")
        s.con.execute("""UPDATE episodes SET findings = '{"difficulty": "hard",
            "feasible": false, "failure_category": "task_broken",
            "failure_root_cause": "No such file.", "evidence": "ENOENT"}'
            WHERE success = false AND task_id = 'toy-013'""")
    r = runner.invoke(app, ["--db", str(db), "atlas", "fit", "--exclude-infeasible",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    fit = json.loads(r.stdout)
    assert fit["excluded_tasks"] == [["toybench", "toy-013"]]
    assert "toy-013" not in {i["task_id"] for i in fit["items"]}
    assert any("left out of the fit" in n for n in fit["notes"])
    r = runner.invoke(app, ["--db", str(db), "atlas", "fit", "--format", "json"])
    assert "toy-013" in {i["task_id"] for i in json.loads(r.stdout)["items"]}
    r = runner.invoke(app, ["--db", str(db), "atlas", "items", "--format", "json"])
    assert r.exit_code == 0, r.output
    items = {i["task_id"]: i for i in json.loads(r.stdout)["rows"]}
    assert items["toy-013"]["suspect"] and "suspect" in items["toy-013"]["flags"]
    assert items["toy-000"]["investigated"] == 0
    r = runner.invoke(app, ["--db", str(db), "atlas", "items", "--format", "markdown"])
    assert r.exit_code == 0 and "infeasible / investigated" in r.stdout
    assert " suspect" in r.stdout
