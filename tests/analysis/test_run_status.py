"""Run status per experiment (issue 21, point 4): the rules of
:func:`evalatlas.analysis.run_status.run_status` on catalog rows, and how a summary row
made of several experiments combines them."""

from __future__ import annotations

from evalatlas.analysis.run_status import group_status, run_status


def _row(**kw) -> dict:
    base = {"experiment_name": "e", "framework": None, "planned_tasks": None,
            "inspect_status": None, "inspect_epochs": None, "from_journal": False,
            "episodes": 10, "max_attempt": 0, "unfinished_episodes": 0,
            "cancelled_episodes": 0}
    return {**base, **kw}


def test_inspect_started_error_cancelled_are_incomplete() -> None:
    crashed = run_status(_row(framework="inspect_ai", inspect_status="started",
                              inspect_epochs=2, planned_tasks=40, episodes=56))
    assert crashed == {"status": "incomplete", "planned_samples": 80, "observed_samples": 56,
                       "run_status_note": "incomplete: 56 of 80 planned samples (Inspect status "
                                      "started)"}
    journal = run_status(_row(inspect_status="started", from_journal=True, planned_tasks=40,
                              episodes=12))
    assert journal["run_status_note"] == ("incomplete: 12 of 40 planned samples (Inspect status "
                                      "started, log rebuilt from _journal/)")
    for status in ("error", "cancelled"):
        assert run_status(_row(inspect_status=status, planned_tasks=5))["status"] == \
            "incomplete"
    ok = run_status(_row(inspect_status="success", planned_tasks=40, episodes=40))
    assert ok["status"] == "complete" and ok["run_status_note"] is None


def test_evallog_counts_planned_tasks_times_attempts() -> None:
    short = run_status(_row(planned_tasks=20, max_attempt=2, episodes=50))
    assert short["run_status_note"] == ("incomplete: 50 of 60 planned samples (20 tasks x 3 "
                                        "attempts)")
    assert run_status(_row(planned_tasks=20, max_attempt=2, episodes=60))["status"] == \
        "complete"
    unknown_plan = run_status(_row(planned_tasks=None, episodes=7))
    assert (unknown_plan["status"], unknown_plan["planned_samples"]) == ("complete", None)


def test_only_cube_status_json_marks_unfinished_episodes() -> None:
    cube = run_status(_row(framework="cube-harness", planned_tasks=10, unfinished_episodes=2))
    assert cube["status"] == "incomplete"
    assert cube["run_status_note"] == ("incomplete: 10 of 10 planned samples (episodes 2 queued "
                                   "or running)")
    # SWE-bench's "incomplete" episodes are instances never submitted: failures, not a
    # run that stopped
    swe = run_status(_row(framework="swe-bench", planned_tasks=10, unfinished_episodes=2))
    assert swe["status"] == "complete"


def test_no_episodes_no_status() -> None:
    assert run_status(_row(episodes=0, planned_tasks=1000))["status"] is None


def test_group_status_combines_experiments() -> None:
    a = run_status(_row(inspect_status="started", planned_tasks=40, inspect_epochs=2,
                        episodes=56))
    b = run_status(_row(inspect_status="success", planned_tasks=10, episodes=10))
    both = group_status([a, b])
    assert both["status"] == "incomplete" and both["planned_samples"] == 90
    assert both["run_status_note"] == ("1 of 2 experiments incomplete: 56 of 80 planned samples "
                                   "(Inspect status started)")
    assert group_status([b])["status"] == "complete"
    assert group_status([])["status"] is None
