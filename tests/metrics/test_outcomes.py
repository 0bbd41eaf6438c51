"""Seed 001's worked examples, its edge cases, pass@k, and the ProjectScylla dry run."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalatlas.metrics.outcomes import (
    Uplift,
    accuracy,
    composite_score,
    compute_statistics,
    cost_delta,
    cost_of_pass,
    cost_variance,
    default_k_values,
    duration,
    impl_rate,
    letter_grade,
    pass_at_k,
    pass_at_k_counts,
    pass_at_k_over_tasks,
    pass_hat_k,
    pass_hat_k_over_tasks,
    pass_rate,
    pass_rate_variance,
    tier_uplift,
)

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DRYRUN = FIXTURES / "scylla" / "dryrun"

# ---------------------------------------------------------------- seed 001 examples


def test_seed_example_1_single_run() -> None:
    p = pass_rate(True)
    i = impl_rate(0.85)
    assert (p, i) == (1.0, 0.85)
    assert cost_of_pass(0.50, p) == 0.50
    comp = composite_score(p, i)
    assert comp == pytest.approx(0.925)
    assert letter_grade(comp) == "B"


def test_seed_example_2_ten_run_aggregation() -> None:
    runs = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    s = compute_statistics(runs)
    assert (s.median, s.mean, s.mode, s.min, s.max, s.count) == (1.0, 0.8, 1.0, 0.0, 1.0, 10)
    assert s.std_dev == pytest.approx(0.4)
    # ProjectScylla's code uses the sample deviation since 2026-03-25 (scylla.md §3.8)
    assert compute_statistics(runs, ddof=1).std_dev == pytest.approx(0.4216, abs=5e-5)


def test_seed_example_3_cross_tier() -> None:
    medians = {"T0": 0.70, "T1": 0.80, "T2": 0.85, "T3": 0.90}
    ups = {t: tier_uplift(v, medians["T0"]) for t, v in medians.items() if t != "T0"}
    assert {t: round(u.value, 3) for t, u in ups.items()} == {  # type: ignore[arg-type]
        "T1": 0.143, "T2": 0.214, "T3": 0.286}
    assert ups["T1"].absolute == pytest.approx(0.10)
    var = pass_rate_variance(medians.values())
    assert round(var, 5) == 0.00547
    assert var == pytest.approx(0.021875 / 4)
    # sample variance, as the code now computes (scylla.md: "probably 0.00729")
    assert round(pass_rate_variance(medians.values(), ddof=1), 5) == 0.00729


def test_seed_uplift_and_composite_formulas() -> None:
    assert tier_uplift(0.90, 0.75).value == pytest.approx(0.20)
    assert tier_uplift(0.60, 0.75).value == pytest.approx(-0.20)
    assert tier_uplift(0.75, 0.75).value == 0.0
    assert composite_score(1.0, 0.5, weights=(0.7, 0.3)) == pytest.approx(0.85)
    assert composite_score(0.0, 0.5, weights=(0.0, 1.0)) == 0.5


def test_grade_scales() -> None:
    seed = [(0.95, "A"), (0.9499, "B"), (0.85, "B"), (0.75, "C"), (0.65, "D"), (0.6499, "F"),
            (0.0, "F"), (1.0, "A")]
    assert [letter_grade(s) for s, _ in seed] == [g for _, g in seed]
    scylla = [(1.0, "S"), (0.9999, "A"), (0.80, "A"), (0.60, "B"), (0.40, "C"), (0.20, "D"),
              (0.1999, "F")]
    assert [letter_grade(s, "scylla") for s, _ in scylla] == [g for _, g in scylla]


# ---------------------------------------------------------------- edge cases


def test_no_runs() -> None:
    s = compute_statistics([])
    assert s.count == 0 and all(math.isnan(x) for x in
                                (s.median, s.mean, s.mode, s.min, s.max, s.std_dev))
    assert math.isnan(pass_rate([]))
    assert math.isnan(pass_rate([None, None]))
    assert math.isnan(cost_delta([]))
    assert math.isnan(pass_rate_variance([]))
    assert math.isnan(accuracy([]))


def test_zero_baseline_uplift_is_undefined_with_reason() -> None:
    u = tier_uplift(0.5, 0.0)
    assert u == Uplift(None, "baseline score is 0: relative uplift undefined", 0.5)
    assert tier_uplift(0.5, -0.1).value is None
    assert tier_uplift(float("nan"), 0.5) == Uplift(None, "missing score")
    assert tier_uplift(None, 0.5).value is None


def test_duration() -> None:
    from datetime import UTC, datetime

    assert duration(100.0, 303.132624) == pytest.approx(203.132624)
    start = datetime(2026, 1, 20, 6, 13, 7, tzinfo=UTC)
    end = datetime(2026, 1, 20, 6, 16, 30, 500000, tzinfo=UTC)
    assert duration(start, end) == 203.5
    assert math.isnan(duration(None, 5.0))
    with pytest.raises(ValueError, match="before start"):
        duration(10.0, 5.0)
    with pytest.raises(ValueError, match="both"):
        duration(start, 5.0)


def test_cost_of_pass_edges() -> None:
    assert cost_of_pass(1.0, 0.0) == math.inf
    assert cost_of_pass(1.0, -0.5) == math.inf
    assert cost_of_pass(2.0, 0.5) == 4.0
    assert math.isnan(cost_of_pass(None, 0.5))
    assert math.isnan(cost_of_pass(1.0, float("nan")))


def test_infinite_cost_of_pass_in_aggregates() -> None:
    # scylla.md §3.6: calculate_all([inf, 1, 2]) -> median 2, mean inf, mode 1, max inf
    s = compute_statistics([math.inf, 1.0, 2.0])
    assert (s.median, s.mean, s.mode, s.min, s.max) == (2.0, math.inf, 1.0, 1.0, math.inf)
    assert math.isnan(s.std_dev) and s.std_dev_note == "undefined: infinite values"
    assert compute_statistics([math.inf, math.inf, 1.0]).median == math.inf
    assert math.isnan(cost_variance([1.0, math.inf]))
    assert cost_delta([1.0, math.inf]) == math.inf


def test_nan_scores_are_excluded_and_counted() -> None:
    s = compute_statistics([0.5, float("nan"), 1.0, None])
    assert (s.count, s.n_nan, s.mean, s.median) == (2, 2, 0.75, 0.75)
    assert pass_rate([True, None, False, True]) == pytest.approx(2 / 3)
    assert math.isnan(composite_score(float("nan"), 0.5))
    assert letter_grade(float("nan")) is None
    assert math.isnan(impl_rate(None))


def test_mode_smallest_on_ties_and_rounding() -> None:
    assert compute_statistics([3.0, 1.0, 2.0, 3.0, 1.0]).mode == 1.0
    assert compute_statistics([0.1 + 0.2, 0.3, 0.5]).mode == 0.3
    assert compute_statistics([0.1 + 0.2, 0.3, 0.5], mode_decimals=None).mode == 0.3


def test_ddof1_single_value_and_bad_inputs() -> None:
    s = compute_statistics([0.5], ddof=1)
    assert math.isnan(s.std_dev) and "at least 2" in (s.std_dev_note or "")
    assert compute_statistics([0.5]).std_dev == 0.0
    with pytest.raises(ValueError):
        compute_statistics([1.0], ddof=2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        letter_grade(1.2)
    with pytest.raises(ValueError):
        letter_grade(0.5, "nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive sum"):
        composite_score(1.0, 1.0, weights=(0.0, 0.0))
    assert impl_rate(1.3) == 1.0 and impl_rate(1.3, clamp=False) == 1.3


# ---------------------------------------------------------------- pass@k


def test_fc_eval_pass_at_k_examples() -> None:
    # fc-eval.md §9 upstream tests
    assert default_k_values(3) == [2]
    assert default_k_values(5) == [2, 4, 5]
    assert default_k_values(1) == []
    assert default_k_values(10) == [2, 4, 5, 8, 10]
    assert default_k_values(16) == [2, 4, 5, 8, 10, 16]
    tasks = {"a": [False] * 5, "b": [True] * 5, "c": [True, True, False, False, False]}
    assert pass_at_k_over_tasks(tasks, 2) == pytest.approx((0 + 1 + 0.7) / 3)
    assert pass_at_k_over_tasks([[True] * 3, [True, False, False]], 2) == pytest.approx(0.8333,
                                                                                     abs=5e-5)


def test_pass_at_k_matches_combinatorial_definition() -> None:
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(
                    math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_pass_at_k_tasks_with_too_few_attempts() -> None:
    assert math.isnan(pass_at_k(2, 1, 3))
    # skipped in the average (terminal-bench), not counted as 0
    assert pass_at_k_over_tasks([[True, False], [True, True, False, False]], 3) == \
        pytest.approx(pass_at_k(4, 2, 3))
    assert math.isnan(pass_at_k_over_tasks([[True]], 2))
    assert pass_hat_k_over_tasks([[True, True, False], [True, True]], 2) == \
        pytest.approx((1 / 3 + 1) / 2)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 0)


def test_pass_at_1_is_accuracy_with_equal_attempts() -> None:
    tasks = [[True, False, False], [True, True, True], [False, False, True]]
    flat = [x for t in tasks for x in t]
    assert pass_at_k_over_tasks(tasks, 1) == pytest.approx(accuracy(flat))
    assert accuracy([True, None, False, True]) == 0.5  # None counts as unresolved


def test_vectorised_pass_at_k_matches_scalar() -> None:
    rng = np.random.default_rng(1)
    n = rng.integers(1, 40, size=500)
    c = rng.integers(0, 41, size=500) % (n + 1)
    for k in (1, 2, 5, 10):
        got = pass_at_k_counts(n, c, k)
        want = np.array([pass_at_k(int(a), int(b), k) for a, b in zip(n, c, strict=True)])
        np.testing.assert_allclose(got, want, atol=1e-12, equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_hypothesis_pass_at_k_bounded_and_monotone(nc: tuple[int, int]) -> None:
    n, c = nc
    prev_at, prev_hat = -1.0, 2.0
    for k in range(1, n + 1):
        at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
        assert 0.0 <= at <= 1.0 and 0.0 <= hat <= 1.0
        assert at >= prev_at - 1e-12  # pass@k never falls as k grows
        assert hat <= prev_hat + 1e-12  # pass^k never rises
        assert hat <= c / n + 1e-12 and at >= c / n - 1e-12  # pass^k <= pass@1 <= pass@k
        prev_at, prev_hat = at, hat


# ---------------------------------------------------------------- ProjectScylla dry run


def _runs() -> list[dict[str, str]]:
    with (DRYRUN / "data" / "runs.csv").open() as f:
        return list(csv.DictReader(f))


def test_scylla_dryrun_subtests_pass_rate_and_cop() -> None:
    runs = _runs()
    with (DRYRUN / "data" / "subtests.csv").open() as f:
        subtests = {r["tier"]: r for r in csv.DictReader(f)}
    for tier, row in subtests.items():
        tier_runs = [r for r in runs if r["tier"] == tier]
        pr = pass_rate([r["passed"] == "True" for r in tier_runs])
        mean_cost = compute_statistics([float(r["cost_usd"]) for r in tier_runs]).mean
        assert pr == float(row["pass_rate"])
        assert cost_of_pass(mean_cost, pr) == pytest.approx(float(row["cop"]), rel=1e-12)
        scores = compute_statistics([float(r["score"]) for r in tier_runs])
        assert scores.median == pytest.approx(float(row["median_score"]))
        # one run per tier: the sample deviation is undefined (subtests.csv leaves it empty)
        assert row["std_score"] == "" and math.isnan(
            compute_statistics([float(r["score"]) for r in tier_runs], ddof=1).std_dev)


def test_scylla_dryrun_by_model_summary() -> None:
    runs = _runs()
    text = (DRYRUN / "data" / "summary.json").read_text().replace("NaN", "null")
    model = json.loads(text)["by_model"]["Sonnet 4.5"]
    score = compute_statistics([float(r["score"]) for r in runs], ddof=1)
    impl = compute_statistics([float(r["impl_rate"]) for r in runs], ddof=1)
    cost = compute_statistics([float(r["cost_usd"]) for r in runs])
    assert score.mean == pytest.approx(model["mean_score"], rel=1e-12)
    assert score.median == pytest.approx(model["median_score"], rel=1e-12)
    assert score.std_dev == pytest.approx(model["std_score"], rel=1e-9)  # pandas: ddof=1
    assert (score.min, score.max) == (model["min_score"], model["max_score"])
    assert impl.std_dev == pytest.approx(model["std_impl_rate"], rel=1e-9)
    assert impl.median == pytest.approx(model["median_impl_rate"])
    assert cost.median == pytest.approx(model["median_cost"])
    pr = pass_rate([r["passed"] == "True" for r in runs])
    assert cost_of_pass(cost.mean, pr) == pytest.approx(model["cop"], rel=1e-12)
    tier_cops = [cost_of_pass(float(r["cost_usd"]), pass_rate(r["passed"] == "True"))
                 for r in runs]
    assert min(tier_cops) == pytest.approx(model["frontier_cop"])
    assert cost_delta(float(r["cost_usd"]) for r in runs) == pytest.approx(
        0.24744315 - 0.06531415)


def test_scylla_dryrun_run_grades_use_current_scale() -> None:
    for r in _runs():
        assert letter_grade(float(r["score"]), "scylla") == r["grade"]


# ---------------------------------------------------------------- Terminal-Bench harness

TB = FIXTURES / "terminal-bench"
TB_5_ATTEMPT = sorted(TB.glob("20250902_orchestrator_*/results.json"))


@pytest.mark.parametrize("path", TB_5_ATTEMPT, ids=lambda p: p.parent.name)
def test_terminal_bench_pass_at_k_and_accuracy_reproduced(path: Path) -> None:
    """The harness's own pass_at_k and accuracy, recomputed from its trial rows."""
    run = json.loads(path.read_text())
    by_task: dict[str, list[bool | None]] = {}
    for trial in run["results"]:
        by_task.setdefault(trial["task_id"], []).append(trial["is_resolved"])
    m = min(len(v) for v in by_task.values())
    assert default_k_values(m) == sorted(int(k) for k in run["pass_at_k"])
    for k, value in run["pass_at_k"].items():
        assert pass_at_k_over_tasks(by_task, int(k)) == pytest.approx(value, rel=1e-12)
        n = np.array([len(v) for v in by_task.values()])
        c = np.array([sum(1 for s in v if s) for v in by_task.values()])
        assert float(np.mean(pass_at_k_counts(n, c, int(k)))) == pytest.approx(value, rel=1e-12)
    assert accuracy([t["is_resolved"] for t in run["results"]]) == pytest.approx(
        run["accuracy"], rel=1e-12)


def test_terminal_bench_fixture_present() -> None:
    assert len(TB_5_ATTEMPT) == 2


def test_reward_from_correctness_one_rule_clamped() -> None:
    import math

    from evalatlas.metrics.outcomes import reward_from_correctness

    assert [reward_from_correctness(c) for c in (1, 2, 3, 4, 5)] == [0, 0.25, 0.5, 0.75, 1]
    assert reward_from_correctness(0) == 0.0 and reward_from_correctness(10) == 1.0  # clamped
    assert reward_from_correctness(None) is None and reward_from_correctness(math.nan) is None
