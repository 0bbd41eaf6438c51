"""compose/failures.py: one composition behind ea.failures, the report view and the atlas
exclusion; the experiment selection keeps only those experiments' episodes."""

from __future__ import annotations

from pathlib import Path

import evalatlas as ea
from evalatlas.compose.failures import failures
from evalatlas.report.failures import failures_data

REPO = Path(__file__).resolve().parents[2]


def test_one_composition_for_api_report_and_selection(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with ea.open(db) as s:
        s.ingest(REPO / "examples")
        assert failures_data(s, None, 0.95) is None  # no findings: no report view
        s.con.execute("""UPDATE episodes SET findings = '{"difficulty": "hard",
            "feasible": false, "failure_category": "task_broken",
            "failure_root_cause": "Broken.", "evidence": "e"}'
            WHERE success = false AND task_id = 'toy-013'""")
        whole = failures(s)
        assert whole.to_dict() == ea.failures(s).to_dict()
        data = failures_data(s, None, 0.95)
        assert data is not None
        assert data["shares"] == [r for r in whole.rows if r["episodes"]]
        name = s.query("SELECT experiment_name n FROM experiments WHERE agent_name = "
                       "'tiny-mini'")[0]["n"]
        one = failures(s, experiment=[name])
    assert {r["group"] for r in one.rows} == {"tiny-mini"}
    assert whole.meta["investigated_episodes"] > one.meta["investigated_episodes"] > 0
    assert whole.suspect == [("toybench", "toy-013")] and one.suspect == []
