"""Aggregation over questions and multi-run averaging (reference sections 9 and 10)."""

from __future__ import annotations

import math
import statistics

import pytest

from evalatlas.metrics.framework_aggregate import (
    QuestionResult,
    aggregate_questions,
    average_question_runs,
    average_runs,
    extra_averages,
    representative_index,
    sample_stdev,
)
from evalatlas.metrics.profiles import MultiHopChainProfile


def q(qid, run=0, c=4.0, comp=3.0, f=5.0, lat=10.0, tok=100, cost=0.01, status="completed",
      extra=None, answer=None):
    return QuestionResult(question_id=qid, run=run, correctness=c, completeness=comp,
                          faithfulness=f, latency_s=lat, total_tokens=tok, cost_usd=cost,
                          retrieval_precision=1.0, retrieval_recall=0.5, status=status,
                          extra_metrics=extra or {}, answer=answer or f"{qid} run {run}")


def test_means_and_sums():
    agg = aggregate_questions([q("q1", c=4, lat=7.2, tok=2100, cost=0.001575),
                               q("q2", c=2, lat=2.8, tok=900, cost=0.000425)])
    assert agg["avg_latency"] == pytest.approx(5.0)
    assert agg["avg_correctness"] == 3.0
    assert agg["total_tokens"] == 3000 and agg["total_cost_usd"] == pytest.approx(0.002)
    assert agg["avg_retrieval_recall"] == 0.5


def test_timeouts_score_zero_and_judge_failures_are_left_out():
    qs = [q("q1", c=5), q("q2", c=None, comp=None, f=None, status="timeout", tok=None,
                          cost=None, lat=120.0),
          q("q3", c=None, comp=None, f=None)]
    agg = aggregate_questions(qs)
    assert agg["avg_correctness"] == 2.5  # (5 + 0) / 2: the timeout is 0, q3 left out
    assert agg["judge_missing"] == 1
    assert agg["total_tokens"] == 200 and agg["tokens_unknown"] == 1
    assert agg["cost_unknown"] == 1
    assert math.isnan(aggregate_questions([])["avg_correctness"])


def test_extra_aggregates_over_questions_that_have_the_key():
    ms = [{"hop_coverage": 1.0, "chain_success": True, "label": "x"},
          {"hop_coverage": 0.5, "chain_success": False}, {"is_multi_hop": False}]
    assert extra_averages(ms) == {"hop_coverage_avg": 0.75, "chain_success_avg": 0.5,
                                  "is_multi_hop_avg": 0.0}
    agg = aggregate_questions([q("q1", extra=ms[0]), q("q2", extra=ms[1])],
                              MultiHopChainProfile().aggregate_metrics)
    assert agg["extra_aggregates"]["hop_coverage_avg"] == 0.75
    assert agg["extra_aggregates"]["multi_hop_questions"] == 0.0  # profile added on top


def test_representative_is_closest_to_mean_earliest_on_ties():
    assert representative_index([5.0, 3.0, 4.0]) == 2  # mean 4
    assert representative_index([5.0, 3.0]) == 0  # mean 4, tie -> earliest
    assert representative_index([None, 2.0, 4.0, 4.0]) == 2
    assert representative_index([None, None]) == 0


def test_sample_stdev():
    assert sample_stdev([4, 5, 3]) == pytest.approx(statistics.stdev([4, 5, 3]))
    assert math.isnan(sample_stdev([4.0]))


def test_average_question_runs():
    runs = [q("q1", run=0, c=5, lat=10, tok=100, extra={"chain_success": True, "note": "s"}),
            q("q1", run=1, c=3, lat=20, tok=300, extra={"chain_success": False}),
            q("q1", run=2, c=4, lat=30, tok=None, extra={"chain_success": True})]
    avg = average_question_runs(runs)
    assert avg.correctness == 4.0 and avg.latency_s == 20.0
    assert avg.total_tokens == 400  # summed over runs (the unknown one left out)
    assert avg.answer == "q1 run 2"  # closest to mean correctness 4
    assert avg.extra_metrics["chain_success"] == pytest.approx(2 / 3)
    assert "note" not in avg.extra_metrics  # strings dropped
    assert avg.extra_metrics["correctness_stddev"] == pytest.approx(1.0)
    assert avg.run == -1 and avg.n_runs == 3


def test_average_runs_keeps_profile_aggregates():
    prof = MultiHopChainProfile()
    hop = {"is_multi_hop": True, "hop_coverage": 1.0, "grounded_hop_coverage": 1.0,
           "chain_success": True}
    miss = {"is_multi_hop": True, "hop_coverage": 0.5, "grounded_hop_coverage": 0.0,
            "chain_success": False}
    runs = {0: [q("q1", 0, c=5, extra=hop), q("q2", 0, c=1, extra=miss)],
            1: [q("q1", 1, c=3, extra=miss), q("q2", 1, c=1, extra=miss)]}
    questions, agg = average_runs(runs, prof.aggregate_metrics)
    assert [x.question_id for x in questions] == ["q1", "q2"]
    ea = agg["extra_aggregates"]
    # upstream loses this after averaging (quirk 8); here: mean over runs of the rate
    assert ea["multi_hop_chain_success_rate"] == pytest.approx(0.25)
    assert ea["multi_hop_avg_hop_coverage"] == pytest.approx((0.75 + 0.5) / 2)
    assert agg["run_count"] == 2
    # run means of correctness: run0 = 3, run1 = 2 -> sample sd of [3, 2]
    assert agg["correctness_run_stddev"] == pytest.approx(statistics.stdev([3.0, 2.0]))
    assert agg["avg_correctness"] == 2.5 and agg["total_tokens"] == 400
    assert ea["correctness_stddev_avg"] == pytest.approx(statistics.stdev([5, 3]) / 2)
