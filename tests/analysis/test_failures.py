"""analysis/failures.py: category shares with task-clustered intervals, near-duplicate
root causes, and the suspect-task rule; numbers checked by hand and against the Wilson
interval."""

from __future__ import annotations

import math
from typing import Any

import pytest

from evalatlas.analysis.failures import (
    CATEGORIES,
    category_shares,
    failures_result,
    group_root_causes,
    jaccard,
    suspect_tasks,
)
from evalatlas.stats.intervals import wilson_interval


def ep(group: str, task: str, cat: str | None, *, failed: bool = True,
       feasible: bool | None = None, agent: str | None = None, cause: str | None = None,
       evidence: str | None = None) -> dict[str, Any]:
    return {"group_name": group, "agent": agent or group, "benchmark": "b", "task_id": task,
            "trajectory_id": f"{task}-{group}", "failed": failed, "failure_category": cat,
            "feasible": feasible, "failure_root_cause": cause, "evidence": evidence}


def test_shares_over_investigated_failures_with_wilson_when_one_attempt_per_task() -> None:
    rows = ([ep("a", f"t{i}", "wrong_answer") for i in range(6)]
            + [ep("a", f"u{i}", "tool_misuse") for i in range(2)]
            + [ep("a", "v0", None), ep("a", "v1", None)]  # failed, not investigated
            + [ep("a", "w0", None, failed=False)])  # a success: not a failure
    out = {r["category"]: r for r in category_shares(rows)}
    assert list(out) == list(CATEGORIES)
    wa = out["wrong_answer"]
    assert (wa["failures"], wa["investigated"], wa["not_investigated"], wa["episodes"]) == \
        (10, 8, 2, 6)
    assert wa["share"] == pytest.approx(0.75)
    # distinct tasks, 0/1 values: the clustered interval has n_eff = n and t with 7 df
    lo, hi = wa["ci_low"], wa["ci_high"]
    w_lo, w_hi = wilson_interval(6, 8)
    assert lo < w_lo < 0.75 < w_hi < hi  # t quantile (7 df) is wider than z
    assert lo >= 0.0 and hi <= 1.0
    none = out["timeout_or_limit"]
    assert none["share"] == 0.0 and none["ci_low"] == 0.0 and 0 < none["ci_high"] < 1


def test_shares_cluster_attempts_of_a_task() -> None:
    # two tasks x 3 attempts, each task all one category: only 2 independent units
    rows = [ep("a", "t1", "wrong_answer") for _ in range(3)] + \
        [ep("a", "t2", "incomplete") for _ in range(3)]
    out = {r["category"]: r for r in category_shares(rows)}
    clustered = out["wrong_answer"]
    assert clustered["share"] == 0.5
    w_lo, w_hi = wilson_interval(3, 6)
    assert clustered["ci_low"] < w_lo and clustered["ci_high"] > w_hi  # wider than naive


def test_a_group_without_investigated_failures_has_no_share() -> None:
    out = category_shares([ep("a", "t", None)])
    assert all(r["share"] is None and r["interval_reason"] == "no investigated failure"
               for r in out)
    assert out[0]["not_investigated"] == 1


def test_root_causes_group_near_duplicates() -> None:
    causes = ["The agent used the wrong file path.", "The agent used a wrong file path",
              "Agent used wrong file paths.", "The tests time out after 30 seconds.",
              "The agent used the wrong file path.", None, "  "]
    cats = ["tool_misuse", "tool_misuse", "wrong_answer", "timeout_or_limit",
            "tool_misuse", None, None]
    groups = group_root_causes(causes, categories=cats)
    assert groups[0] == {"cause": "The agent used the wrong file path.", "count": 4,
                         "variants": 3, "category": "tool_misuse"}
    assert groups[1]["cause"] == "The tests time out after 30 seconds."
    assert groups[1]["count"] == 1 and len(groups) == 2
    assert jaccard(frozenset(), frozenset()) == 1.0
    with pytest.raises(ValueError, match="threshold"):
        group_root_causes(causes, threshold=0)


def test_suspect_rule_needs_a_majority_of_three_verdicts_from_two_agents() -> None:
    rows = [
        # t1: 3 of 4 infeasible, by two agents -> suspect
        ep("a", "t1", "task_broken", feasible=False), ep("b", "t1", "task_broken",
                                                         feasible=False, evidence="no such API"),
        ep("b", "t1", "task_broken", feasible=False), ep("c", "t1", "wrong_answer",
                                                         feasible=True),
        # t2: 3 infeasible, but all from one agent -> not suspect
        *[ep("a", "t2", "task_broken", feasible=False) for _ in range(3)],
        # t3: 2 of 2 -> too few verdicts
        ep("a", "t3", "task_broken", feasible=False), ep("b", "t3", "task_broken",
                                                         feasible=False),
        # t4: 2 of 4 -> no majority
        ep("a", "t4", "task_broken", feasible=False), ep("b", "t4", "task_broken",
                                                         feasible=False),
        ep("c", "t4", "wrong_answer", feasible=True), ep("c", "t4", "x", feasible=True),
        # t5: only unknown verdicts -> not listed
        ep("a", "t5", "other", feasible=None),
    ]
    tasks = {t["task_id"]: t for t in suspect_tasks(rows)}
    assert set(tasks) == {"t1", "t2", "t3", "t4"}
    assert tasks["t1"]["suspect"] and (tasks["t1"]["infeasible"], tasks["t1"]["judged"]) == (3, 4)
    assert tasks["t1"]["agents"] == ["a", "b"]
    assert any(e["evidence"] == "no such API" for e in tasks["t1"]["evidence"])
    assert not tasks["t2"]["suspect"] and not tasks["t3"]["suspect"]
    assert not tasks["t4"]["suspect"]
    assert suspect_tasks(rows)[0]["task_id"] == "t1"  # suspect first
    res = failures_result(rows)
    assert res.suspect == [("b", "t1")]
    d = res.to_dict()
    assert d["schema"] == "evalatlas.failures/1"
    assert [t["task_id"] for t in d["suspect_tasks"]] == ["t1"]
    assert len(d["infeasible_tasks"]) == 4
    assert all(math.isfinite(r["share"]) for r in d["rows"] if r["share"] is not None)
