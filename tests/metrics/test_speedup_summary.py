"""Run-level aggregation of FC-Eval task payloads (seed table, reference section 9)."""

from __future__ import annotations

import math

import pytest

from evalatlas.metrics.speedup import task_metrics
from evalatlas.metrics.speedup_summary import (
    advantages_gmean,
    agent_metrics_summary,
    beat_oracle_share,
    cost_weighted_advantage,
    task_success,
)


def _payloads() -> list[dict]:
    a = task_metrics(["m.A.f", "m.g"], [4.0, 1.0], [2.0, 1.0], pytest_failed=False,
                     snapshot_failed=False, task_cost_usd=0.5, trajectory_length=10)
    b = task_metrics(["m.f"], [3.0], [2.0], pytest_failed=True, snapshot_failed=False,
                     task_cost_usd=1.5, trajectory_length=30)
    return [a.as_dict(), b.as_dict()]


def test_summary_matches_seed_table() -> None:
    a, b = _payloads()
    # a: L4 = gmean(4,1) - gmean(2,1) = 2 - sqrt 2; b: fallback -> 1 - 2 = -1
    assert a["agent_advantage"] == pytest.approx(2 - math.sqrt(2))
    assert b["agent_advantage"] == pytest.approx(-1.0)
    s = agent_metrics_summary([a, b])
    assert s["mean_speedup"] == pytest.approx((2.0 + 1.0) / 2)
    assert s["mean_success_rate"] == 0.5
    assert s["num_benchmarks"] == 3 and s["num_valid_benchmarks"] == 3
    assert s["agent_advantage"] == pytest.approx((2 - math.sqrt(2) - 1) / 2)
    assert s["agent_advantage_level4"] == s["agent_advantage"]
    # L1: a has one module group (m): same as L4; L2: groups (m,A) and (m,None)
    assert s["agent_advantage_level2"] == pytest.approx(((4 - 2 + 0) / 2 - 1) / 2)
    assert s["mean_cost_per_task"] == 1.0 and s["total_cost_usd"] == 2.0
    assert s["cost_weighted_advantage"] == pytest.approx(s["agent_advantage"] / 1.0)
    assert s["mean_trajectory_length"] == 20.0


def test_missing_values_follow_upstream_defaults_or_stay_missing() -> None:
    s = agent_metrics_summary([{"success": None}, {"task_speedup": 3.0,
                                                   "pytest_failed": True}])
    assert s["mean_speedup"] == 2.0  # missing task speedup counts 1.0
    assert s["agent_advantage"] == 0.0  # missing advantage counts 0
    assert s["mean_success_rate"] == 0.0  # unknown correctness excluded; 1 known failure
    assert s["mean_cost_per_task"] is None and s["cost_weighted_advantage"] is None
    assert s["mean_trajectory_length"] is None
    assert agent_metrics_summary([]) == {"n_tasks": 0}


def test_cost_weighted_advantage_is_a_ratio() -> None:
    assert cost_weighted_advantage(0.2, 0.5) == pytest.approx(0.4)
    assert cost_weighted_advantage(0.2, 0.0) == 0.0
    assert cost_weighted_advantage(0.2, None) is None


def test_task_success() -> None:
    assert task_success({"success": False}) is False
    assert task_success({"snapshot_failed": True}) is False
    assert task_success({"pytest_failed": False}) is True
    assert task_success({}) is None


def test_advantages_gmean_and_beat_share() -> None:
    assert advantages_gmean([0.0, 3.0]) == pytest.approx(math.sqrt(4) - 1)
    assert advantages_gmean([-1.0, 1.0]) == 0.0  # 1 + adv not > 0: arithmetic mean
    assert advantages_gmean([]) is None
    assert beat_oracle_share([0.1, -0.2, 0.0, 0.3, None, float("nan")]) == 0.5
    assert beat_oracle_share([]) is None
