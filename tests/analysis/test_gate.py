"""The CI gate's statistics (analysis/gate.py), shown by simulation with fixed seeds:
false alarms under no change, power at the reported mde, sequential peeking, the
promptfoo #5847 and deepeval #3110 shapes, and ``gate plan`` against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.analysis.gate import (
    TEST_MCNEMAR,
    TEST_SEQUENTIAL,
    TEST_SIGN_FLIP,
    GateDataError,
    decide,
    gate_sides,
    paired_numbers,
    plan_sides,
)
from evalatlas.errors import ArgumentError
from evalatlas.stats.noninferiority import mcnemar_drop_pvalue
from evalatlas.stats.paired import holm_adjust
from evalatlas.stats.sequential import sequential_drop_test

ALPHA = 0.05
RESAMPLES = 999
"""Sign flips per simulated suite (the gate's default is 9,999; any count keeps the test
valid, Phipson & Smyth 2010)."""


def _mc_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def _suite(rng: np.random.Generator, p: np.ndarray, drop: float = 0.0,
           max_attempts: int = 5) -> tuple[np.ndarray, ...]:
    """Per-task proportions of one simulated suite: each task its own probability ``p``,
    1..max_attempts attempts a side, the candidate's probability ``max(p - drop, 0)``."""
    n = p.size
    kb = rng.integers(1, max_attempts + 1, n)
    kc = rng.integers(1, max_attempts + 1, n)
    q = np.clip(p - drop, 0, 1)
    return rng.binomial(kb, p) / kb, rng.binomial(kc, q) / kc, kb, kc


def _verdict(vb: np.ndarray, vc: np.ndarray, kb: np.ndarray, kc: np.ndarray,
             **kw: object) -> tuple[str, dict]:
    row = paired_numbers(vb, vc, base_attempts=kb, cand_attempts=kc,
                         n_resamples=RESAMPLES, **kw)  # type: ignore[arg-type]
    verdict = decide(row["p_value"], row["diff"], row["mde"], max_drop=row["max_drop"],
                     alpha=ALPHA, sequential=bool(kw.get("sequential")))
    return verdict, row


def _null_and_power(seed: int, n_tasks: int, max_attempts: int, sims: int
                    ) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    alarms, mdes = 0, []
    for _ in range(sims):
        # heterogeneous: from 0.3 to 1 (mean 0.7), none so low that a drop of the mde
        # would be cut at 0 (the true mean drop is then exactly the mde)
        p = 0.3 + 0.7 * rng.beta(2, 1.5, n_tasks)
        verdict, row = _verdict(*_suite(rng, p, max_attempts=max_attempts))
        alarms += verdict == "regression"
        mdes.append(row["mde"])
    mde = float(np.median(mdes))
    hits = 0
    for _ in range(sims):
        p = 0.3 + 0.7 * rng.beta(2, 1.5, n_tasks)
        verdict, _ = _verdict(*_suite(rng, p, drop=mde, max_attempts=max_attempts))
        hits += verdict == "regression"
    return alarms / sims, mde, hits / sims


def test_no_change_false_alarms_and_power_at_the_reported_mde() -> None:
    """2,000 suites of 60 heterogeneous tasks with 1 to 5 attempts a side (sign-flip
    test): false alarms at most alpha + 2 MC SEs; a true drop equal to the reported mde
    (the median over the no-change suites) is detected in 80% +/- 5 points."""
    sims = 2_000
    false_alarms, mde, power = _null_and_power(20261126, 60, 5, sims)
    assert false_alarms <= ALPHA + 2 * _mc_se(ALPHA, sims)
    assert 0.05 < mde < 0.3
    assert abs(power - 0.80) <= 0.05, (mde, power)


def test_single_binary_attempt_mcnemar_false_alarms_and_power() -> None:
    """The McNemar path (one binary attempt a side): the same two properties."""
    sims = 2_000
    rng = np.random.default_rng(7)
    row = paired_numbers(np.array([1.0, 0.0]), np.array([0.0, 0.0]),
                         base_attempts=np.ones(2), cand_attempts=np.ones(2))
    assert row["test"] == TEST_MCNEMAR
    false_alarms, mde, power = _null_and_power(int(rng.integers(1 << 30)), 200, 1, sims)
    assert false_alarms <= ALPHA + 2 * _mc_se(ALPHA, sims)
    assert abs(power - 0.80) <= 0.05, (mde, power)


def test_sequential_peeking_stays_valid_fixed_sample_peeking_does_not() -> None:
    """No change, 500 tasks, a look after every 10: the sequential gate's false alarms
    stay at most alpha; the fixed-sample gate run at the same looks (stopping at the
    first 'regression') is visibly higher. Single binary attempts (McNemar, the gate's
    fixed-sample test for them) keep the fixed arm fast; the benchmark runs 1-5
    attempts."""
    rng = np.random.default_rng(99)
    sims = 500
    seq_alarms = fixed_alarms = 0
    for _ in range(sims):
        p = rng.beta(2, 1.5, 500)
        vb, vc = rng.binomial(1, p).astype(float), rng.binomial(1, p).astype(float)
        # the gate at look t reports the e-process's maximum over tasks 1..t, so an alarm
        # at any look is an alarm by task 500
        seq_alarms += sequential_drop_test(vc - vb, alpha=ALPHA).rejected_at is not None
        b_only = np.cumsum((vb == 1) & (vc == 0))
        c_only = np.cumsum((vb == 0) & (vc == 1))
        fixed_alarms += any(mcnemar_drop_pvalue(int(b_only[t - 1]), int(c_only[t - 1]))
                            < ALPHA for t in range(10, 501, 10))
    assert seq_alarms / sims <= ALPHA + 2 * _mc_se(ALPHA, sims)
    assert fixed_alarms / sims > 2 * ALPHA
    assert fixed_alarms > 3 * seq_alarms


def _side(outcomes: dict[str, list[int]], benchmark: str = "bench",
          start: float = 0.0) -> dict[str, np.ndarray]:
    tasks, success, ts = [], [], []
    t = start
    for task, outs in outcomes.items():
        for o in outs:
            tasks.append(task)
            success.append(float(o))
            ts.append(t)
            t += 1
    n = len(tasks)
    return {"task": np.array(tasks, dtype=object),
            "benchmark": np.full(n, benchmark, dtype=object),
            "split": np.full(n, None, dtype=object), "success": np.array(success),
            "reward": np.array(success), "timestamp": np.array(ts)}


def test_promptfoo_5847_shape_is_listed_as_a_hard_regression() -> None:
    """49 tasks at 10/10 on both sides and one at 10/10 -> 0/10: the average moves by 2
    points (98%); the task is named as a hard regression whatever the verdict."""
    base = _side({f"task-{i:02d}": [1] * 10 for i in range(50)})
    cand = _side({**{f"task-{i:02d}": [1] * 10 for i in range(49)}, "task-49": [0] * 10})
    res = gate_sides(base, cand)
    (row,) = res.rows
    assert row["regressed_tasks"] == ["task-49"]
    assert row["candidate_rate"] == pytest.approx(0.98)
    assert row["test"] == TEST_SIGN_FLIP and row["p_value"] == 0.5  # one non-zero pair
    assert row["flaky_tasks"] == []
    assert "1 hard regression(s)" in row["sentence"]


def test_deepeval_3110_shape_threshold_flips_gate_passes() -> None:
    """A suite whose true mean sits on a threshold (80%): reruns with nothing changed put
    the mean on either side of it, so a threshold gate flips; the paired gate passes
    (false alarms about alpha)."""
    rng = np.random.default_rng(3110)
    p = np.clip(rng.beta(8, 2, 40), 0, 1)
    p *= 0.8 / p.mean()
    p = np.clip(p, 0, 1)
    baseline = {f"t{i}": list(rng.binomial(1, p[i], 3)) for i in range(40)}
    base = _side(baseline)
    above, passes, reruns = 0, 0, 300
    for _ in range(reruns):
        cand = _side({f"t{i}": list(rng.binomial(1, p[i], 3)) for i in range(40)})
        above += cand["success"].mean() >= 0.8
        res = gate_sides(base, cand, n_resamples=RESAMPLES)
        passes += res.verdict != "regression"
    assert 0.25 < above / reruns < 0.75  # the threshold gate's verdict is a coin flip
    assert passes / reruns >= 1 - ALPHA - 2 * _mc_se(ALPHA, reruns)


def test_flaky_tasks_listed_and_excluded_on_request() -> None:
    base = _side({"a": [1, 0, 1], "b": [1, 1, 1], "c": [0, 0, 0], "d": [1, 1]})
    cand = _side({"a": [0, 0, 0], "b": [1, 1, 1], "c": [0, 0, 1], "d": [0, 0]})
    res = gate_sides(base, cand)
    (row,) = res.rows
    assert row["flaky_tasks"] == [{"task_id": "a", "successes": 2, "attempts": 3}]
    assert row["regressed_tasks"] == ["d"] and row["tested_tasks"] == 4
    kept = gate_sides(base, cand, exclude_flaky=True)
    assert kept.rows[0]["tested_tasks"] == 3 and kept.rows[0]["excluded_flaky"] == 1
    assert any("flaky" in n and "left out" in n for n in kept.notes)
    # per-task values: a 2/3 -> 0, b 1 -> 1, c 0 -> 1/3, d 1 -> 0
    assert row["diff"] == pytest.approx((-2 / 3 + 0 + 1 / 3 - 1) / 4)
    assert kept.rows[0]["diff"] == pytest.approx((0 + 1 / 3 - 1) / 3)


def test_groups_holm_and_left_out_tasks() -> None:
    """Two benchmarks, Holm across them; tasks only one side ran are counted, not used."""
    b1 = _side({f"x{i}": [1] for i in range(30)}, "alpha-bench")
    c1 = _side({**{f"x{i}": [0] for i in range(12)}, **{f"x{i}": [1] for i in range(12, 30)},
                "extra": [1]}, "alpha-bench")
    b2 = _side({f"y{i}": [i % 2] for i in range(20)}, "beta-bench")
    c2 = _side({f"y{i}": [i % 2] for i in range(18)}, "beta-bench")
    base = {k: np.concatenate([b1[k], b2[k]]) for k in b1}
    cand = {k: np.concatenate([c1[k], c2[k]]) for k in c1}
    res = gate_sides(base, cand)
    a, b = res.rows
    assert (a["group"], b["group"]) == ("alpha-bench", "beta-bench")
    assert a["test"] == TEST_MCNEMAR and a["p_value"] == mcnemar_drop_pvalue(12, 0)
    assert (a["candidate_only_tasks"], b["baseline_only_tasks"]) == (1, 2)
    assert [a["p_holm"], b["p_holm"]] == holm_adjust([a["p_value"], b["p_value"]])
    assert a["verdict"] == "regression" and b["verdict"] == "pass"
    assert res.verdict == "regression" and res.exit_code() == 1
    assert "Holm" in a["sentence"] and "40.0 points worse on alpha-bench" in a["sentence"]
    assert any("left out 0 task(s) only the baseline ran and 1" in n for n in res.notes)
    # the interval is 1 - 2 alpha (90%), inside [-1, 1], and excludes 0 here
    assert -1 <= a["diff_ci_low"] <= a["diff"] <= a["diff_ci_high"] < 0


def test_inconclusive_margin_and_exit_codes() -> None:
    """A 10-point drop on 10 tasks is not significant and below the suite's mde."""
    base = _side({f"t{i}": [1, 1, 0] for i in range(10)})
    cand = _side({**{f"t{i}": [1, 0, 0] for i in range(3)},
                  **{f"t{i}": [1, 1, 0] for i in range(3, 10)}})
    res = gate_sides(base, cand)
    (row,) = res.rows
    assert row["verdict"] == "inconclusive" and row["mde"] > -row["diff"]
    assert res.exit_code() == 0 and res.exit_code(fail_inconclusive=True) == 3
    assert "only detects drops of" in row["sentence"]
    # allowing a 15-point drop: the observed 10 is within it, so pass
    allowed = gate_sides(base, cand, max_drop=0.15)
    assert allowed.verdict == "pass" and allowed.rows[0]["mde"] > 0.15


def test_sequential_orders_by_the_candidates_first_timestamp() -> None:
    base = _side({f"t{i}": [1] for i in range(40)})
    # the candidate finished the failing tasks first (earliest timestamps)
    outcomes = {f"t{i}": [0 if i >= 25 else 1] for i in range(40)}
    cand = _side(dict(sorted(outcomes.items(), key=lambda kv: kv[1][0])))
    res = gate_sides(base, cand, sequential=True)
    (row,) = res.rows
    assert row["test"] == TEST_SEQUENTIAL and row["verdict"] == "regression"
    seq = sequential_drop_test([-1.0] * 15 + [0.0] * 25)
    assert row["p_value"] == pytest.approx(seq.p_value) and row["rejected_at"] == \
        seq.rejected_at
    assert (row["diff_ci_low"], row["diff_ci_high"]) == pytest.approx((seq.low, seq.high))


def test_errors() -> None:
    base = _side({"a": [1]})
    with pytest.raises(GateDataError, match="share no task"):
        gate_sides(base, _side({"b": [1]}))
    with pytest.raises(ArgumentError, match="max_drop"):
        gate_sides(base, base, max_drop=5)
    with pytest.raises(ArgumentError, match="by must be one of"):
        gate_sides(base, base, by="agent")  # type: ignore[arg-type]
    big = _side({"a": [1], "b": [1]})
    big["reward"] = np.array([5.0, 2.0])
    with pytest.raises(GateDataError, match="sequential test needs values in"):
        gate_sides(big, big, metric="reward", sequential=True)


def test_plan_agrees_with_simulation_within_ten_percent() -> None:
    """``gate plan`` from a baseline of 300 tasks x 5 attempts says N tasks x 3 attempts
    detect a 5-point drop with 80% power; simulated suites of 0.9 N tasks fall short of 80%
    and suites of 1.1 N reach it (so the simulated N lies within 10% of the plan's)."""
    rng = np.random.default_rng(2025)
    p_true = rng.beta(2, 1.5, 300)
    observed = _side({f"t{i}": list(rng.binomial(1, p_true[i], 5)) for i in range(300)})
    plan = plan_sides(observed, drop=0.05, attempts=3)
    need = plan.meta["tasks_needed"]
    assert plan.meta["attempts_per_task"] == 3 and 100 < need < 2_000
    sims = 1_000

    def power(n: int) -> float:
        hits = 0
        for _ in range(sims):
            p = rng.choice(p_true, n)
            kb = kc = np.full(n, 3)
            vb = rng.binomial(3, p) / 3
            vc = rng.binomial(3, np.clip(p - 0.05, 0, 1)) / 3
            verdict, _ = _verdict(vb, vc, kb, kc)
            hits += verdict == "regression"
        return hits / sims

    se = _mc_se(0.8, sims)
    low, high = power(round(0.9 * need)), power(round(1.1 * need))
    assert low < 0.8 + 2 * se and high > 0.8 - 2 * se, (need, low, high)
    assert low < high
