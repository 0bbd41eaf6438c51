"""atlas.fit(exclude_tasks=...) and atlas.with_verdicts: the investigator's suspect tasks
left out of the fit (which then equals a fit on the data without them), and its verdict
beside each item's difficulty."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

import evalatlas as ea
from evalatlas import atlas
from evalatlas.analysis.failures import item_verdict_rows
from evalatlas.store import atlas as atlas_store

REPO = Path(__file__).resolve().parents[2]
SUSPECT = ("toybench", "toy-013")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The demo store; every failed episode of toy-013 called infeasible (3 agents), the
    other failures feasible wrong answers (test data, as an imported log would carry)."""
    db = tmp_path / "demo.duckdb"
    with ea.open(db) as s:
        s.ingest(REPO / "examples")
        s.con.execute("""
            UPDATE episodes SET findings = CASE WHEN task_id = 'toy-013' THEN
              '{"difficulty": "hard", "feasible": false, "failure_category": "task_broken",
                "failure_root_cause": "The grader expects 41.", "evidence": "expected 41"}'
              ELSE '{"difficulty": "easy", "feasible": true,
                "failure_category": "wrong_answer", "failure_root_cause": "Off by one."}'
              END WHERE success = false""")
    return db


def test_suspect_tasks_are_left_out_and_the_fit_is_the_fit_without_them(demo: Path) -> None:
    suspect = ea.failures(demo).suspect
    assert suspect == [SUSPECT]
    full = atlas.fit(demo, seed=0)
    fitted = atlas.fit(demo, seed=0, exclude_tasks=suspect)
    assert {r["task_id"] for r in full.item_rows} - {r["task_id"] for r in fitted.item_rows} \
        == {"toy-013"}
    assert fitted.settings["excluded_tasks"] == [list(SUSPECT)]
    assert any("toy-013 (toybench)" in n for n in fitted.notes)
    # the same fit as on the episodes without the task
    with ea.open(demo, read_only=True) as s:
        frame = atlas_store.matrix_episodes(s)
    by_hand = atlas.fit(frame.filter(pc.not_equal(frame["task_id"], "toy-013")), seed=0)
    a = {r["agent"]: r["ability"] for r in fitted.agent_rows}
    b = {r["agent"]: r["ability"] for r in by_hand.agent_rows}
    assert a == pytest.approx(b, abs=1e-9)
    assert a != pytest.approx({r["agent"]: r["ability"] for r in full.agent_rows}, abs=1e-6)
    # coverage is over the tasks that remain (19 of 19, not 19 of 20)
    assert {(c["tasks_run"], c["n_tasks"]) for c in fitted.coverage_rows} == {(19, 19)}
    # a frame source excludes too; a matrix cannot
    assert atlas.fit(frame, seed=0, exclude_tasks=suspect).agent_rows == fitted.agent_rows
    with pytest.raises(atlas.AtlasError, match="exclude_tasks needs episodes"):
        atlas.fit(full.matrix, exclude_tasks=suspect)
    none = atlas.fit(demo, exclude_tasks=[("toybench", "no-such-task")])
    assert none.settings["excluded_tasks"] == [] and "No task to leave out" in none.notes[-1]


def test_items_carry_the_verdict_and_flag_suspect_tasks_every_agent_fails(demo: Path) -> None:
    items = atlas.with_verdicts(atlas.fit(demo).item_table(), ea.failures(demo))
    rows = {r["task_id"]: r for r in items.rows}
    t = rows["toy-013"]
    assert t["suspect"] and t["infeasible"] == t["investigated"] > 0
    assert "suspect" in t["flags"]
    assert "suspect_all_fail" not in t["flags"]  # some agent solved it in the demo
    other = next(r for k, r in rows.items() if k != "toy-013" and r["investigated"])
    assert other["infeasible"] == 0 and not other["suspect"]
    # pure: a suspect task no agent solved gets both flags
    out = item_verdict_rows(
        [{"benchmark": "b", "task_id": "t", "flags": ["no_success"]},
         {"benchmark": "b", "task_id": "u", "flags": []}],
        [{"benchmark": "b", "task_id": "t", "judged": 4, "infeasible": 3, "suspect": True}])
    assert out[0]["flags"] == ["no_success", "suspect", "suspect_all_fail"]
    assert (out[1]["investigated"], out[1]["suspect"], out[1]["flags"]) == (0, False, [])
