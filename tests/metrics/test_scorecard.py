"""The 0-100 scorecard: worked examples, the upstream bugs and the fixed modes."""

from __future__ import annotations

import pytest

from evalatlas.metrics.scorecard import (
    AbsoluteAnchors,
    ScorecardInput,
    anchored,
    minmax,
    scorecard,
)


def test_minmax():
    assert minmax([1.0, 2.0, 3.0], higher_is_better=True) == [0.0, 0.5, 1.0]
    assert minmax([1.0, 2.0, 3.0], higher_is_better=False) == [1.0, 0.5, 0.0]
    assert minmax([2.0, 2.0], higher_is_better=False) == [1.0, 1.0]  # flat -> 1.0
    assert minmax([None, 1.0, 3.0], higher_is_better=True) == [None, 0.0, 1.0]


def test_capability_reference_check_multi_agent():
    # reference section 12: (4.9 + 4.4 + 4.9) / 15 -> 94.7 in the multi-agent report,
    # because upstream ignores the coordination metrics (quirk 11)
    inp = ScorecardInput("Pydantic AI", 4.9, 4.4, 4.9,
                         aggregates={"coordination_success_rate": 5 / 7})
    up = scorecard([inp], "upstream")[0]
    assert up["capability"] == pytest.approx(94.666, abs=1e-3)
    fixed = scorecard([inp], "relative")[0]
    assert fixed["capability"] == pytest.approx(100 * (0.94666 + 5 / 7) / 2, abs=1e-3)


def test_capability_signals_and_clamping():
    inp = ScorecardInput("x", 6.0, 5.0, 5.0, aggregates={
        "multi_hop_chain_success_rate": 0.5, "multi_hop_avg_hop_coverage": 1.5,
        "unrelated": 0.0})
    row = scorecard([inp], "upstream")[0]
    assert row["capability"] == pytest.approx(100 * (1.0 + 0.5 + 1.0) / 3)
    assert scorecard([ScorecardInput("none")], "relative")[0]["capability"] is None


def test_efficiency_upstream_averages_weighted_terms_max_33():
    best = ScorecardInput("a", avg_latency=1.0, total_cost_usd=0.1, total_tokens=10)
    worst = ScorecardInput("b", avg_latency=3.0, total_cost_usd=0.3, total_tokens=30)
    up = scorecard([best, worst], "upstream")
    assert up[0]["efficiency"] == pytest.approx(100 / 3)  # 33.3, quirk 12
    assert up[1]["efficiency"] == 0.0
    rel = scorecard([best, worst], "relative")
    assert rel[0]["efficiency"] == pytest.approx(100.0)
    mid = ScorecardInput("c", avg_latency=2.0, total_cost_usd=0.1, total_tokens=30)
    rel = scorecard([best, worst, mid], "relative")
    assert rel[2]["efficiency"] == pytest.approx(100 * (0.4 * 0.5 + 0.4 * 1.0 + 0.2 * 0.0))


def test_single_framework_gets_one_on_scaled_parts():
    solo = ScorecardInput("solo", 5, 5, 5, avg_latency=50, total_cost_usd=1, total_tokens=9,
                          maintainability_index=30, avg_cyclomatic_complexity=9,
                          type_annotation_ratio=0.5)
    row = scorecard([solo], "relative")[0]
    assert row["efficiency"] == 100.0
    assert row["developer_experience"] == pytest.approx(100 * (1 + 1 + 0.5) / 3)


def test_developer_experience_parts_and_na():
    a = ScorecardInput("a", maintainability_index=40, avg_cyclomatic_complexity=2,
                       type_annotation_ratio=1.0, review_avg_score=4.0)
    b = ScorecardInput("b", maintainability_index=20, avg_cyclomatic_complexity=4,
                       type_annotation_ratio=0.5)
    rows = scorecard([a, b, ScorecardInput("c")], "relative")
    assert rows[0]["developer_experience"] == pytest.approx(100 * (1 + 1 + 1 + 0.8) / 4)
    assert rows[1]["developer_experience"] == pytest.approx(100 * (0 + 0 + 0.5) / 3)
    assert rows[2]["developer_experience"] is None  # N/A


def test_missing_efficiency_inputs():
    a = ScorecardInput("a", avg_latency=1.0, total_cost_usd=None, total_tokens=10)
    b = ScorecardInput("b", avg_latency=2.0, total_cost_usd=0.2, total_tokens=20)
    rel = scorecard([a, b], "relative")
    assert rel[0]["efficiency"] == pytest.approx(100.0)  # weights renormalised over 0.6
    up = scorecard([a, b], "upstream")  # upstream reads missing as 0 (the cheapest)
    assert up[0]["efficiency"] == pytest.approx(100 / 3)


def test_absolute_mode_is_independent_of_other_frameworks():
    a = ScorecardInput("a", 4, 4, 4, avg_latency=30.0, total_cost_usd=0.1, total_tokens=50_000,
                       n_questions=10, maintainability_index=30.0,
                       avg_cyclomatic_complexity=5.5, type_annotation_ratio=1.0)
    b = ScorecardInput("b", 2, 2, 2, avg_latency=200.0, total_cost_usd=9.0,
                       total_tokens=9e6, n_questions=10, maintainability_index=5.0,
                       avg_cyclomatic_complexity=30.0)
    alone = scorecard([a], "absolute")[0]
    with_b = scorecard([a, b], "absolute")[0]
    assert alone["efficiency"] == with_b["efficiency"]
    assert alone["developer_experience"] == with_b["developer_experience"]
    # latency 30 of 120 -> 0.75; cost 0.01/q of 0.05 -> 0.8; tokens 5000/q of 50000 -> 0.9
    assert alone["efficiency"] == pytest.approx(100 * (0.4 * 0.75 + 0.4 * 0.8 + 0.2 * 0.9))
    # MI 30 on 10..50 -> 0.5; CC 5.5 on 1..10 -> 0.5; annotations 1.0
    assert alone["developer_experience"] == pytest.approx(100 * (0.5 + 0.5 + 1.0) / 3)
    assert scorecard([b], "absolute")[0]["efficiency"] == 0.0  # clamped
    assert anchored(60.0, *AbsoluteAnchors().latency_s) == 0.5
    with pytest.raises(ValueError, match="unknown scorecard mode"):
        scorecard([a], "best")
