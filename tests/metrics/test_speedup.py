"""FC-Eval speedup metrics: the seed's and the reference's worked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.metrics.speedup import (
    benchmark_speedup,
    deconstruct_benchmark,
    fallback_speedups,
    gmean,
    level_advantages,
    median_time,
    merge_pytest_failed,
    merge_snapshot_failed,
    pytest_block_failed,
    snapshot_block_failed,
    speedups_from_sample_matrix,
    task_metrics,
    task_speedup,
)

WORKED = {  # reference fc-eval.md section 5: name -> (agent/nop, oracle/nop)
    "pkg.module.func_a(1)": (4.0, 2.0),
    "pkg.module.func_b(2)": (3.0, 2.0),
    "pkg.Bench.time_case(3)": (6.0, 2.0),
}


def _worked_levels() -> dict[int, float]:
    names = [deconstruct_benchmark(n)[:3] for n in WORKED]
    return level_advantages(names, [a for a, _ in WORKED.values()],
                            [o for _, o in WORKED.values()])


def test_worked_example_levels() -> None:
    lv = _worked_levels()
    assert lv[4] == pytest.approx(72 ** (1 / 3) - 2)
    assert lv[4] == pytest.approx(2.16017, abs=5e-6)
    assert lv[1] == pytest.approx(((math.sqrt(12) - 2) + (6 - 2)) / 2)
    assert lv[1] == pytest.approx(2.73205, abs=5e-6)
    assert lv[2] == pytest.approx(2.73205, abs=5e-6)
    assert lv[3] == pytest.approx((2 + 1 + 4) / 3)
    assert lv[3] == pytest.approx(2.33333, abs=5e-6)


def test_worked_example_task_speedup() -> None:
    assert task_speedup([a for a, _ in WORKED.values()]) == pytest.approx(4.16017, abs=5e-6)


def test_worked_example_through_the_payload() -> None:
    names = list(WORKED)
    tm = task_metrics(names, [a for a, _ in WORKED.values()], [o for _, o in WORKED.values()],
                      pytest_failed=False, snapshot_failed=False)
    assert tm.agent_advantage == pytest.approx(2.16017, abs=5e-6)
    assert tm.agent_advantage_level3 == pytest.approx(2.33333, abs=5e-6)
    assert tm.task_speedup == pytest.approx(4.16017, abs=5e-6)
    assert tm.num_valid_benchmarks == 3 and tm.success and not tm.fallback_to_baseline
    assert tm.per_benchmark_speedups["pkg.Bench.time_case(3)"]["advantage"] == 4.0


def test_payload_has_every_seed_field() -> None:
    seed_fields = {
        "per_benchmark_speedups", "pytest_summary", "snapshot_summary", "pytest_failed",
        "snapshot_failed", "success", "fallback_to_baseline", "agent_advantage",
        "agent_advantage_level1", "agent_advantage_level2", "agent_advantage_level3",
        "agent_advantage_level4", "num_benchmarks", "num_valid_benchmarks", "task_speedup",
        "task_cost_usd", "trajectory_length",
    }
    tm = task_metrics(["a.f"], [2.0], [1.0], pytest_failed=False, snapshot_failed=False)
    assert set(tm.as_dict()) == seed_fields


def test_helix_example_speedups() -> None:
    # KE7/helix official_score tests: nop 10, oracle 5, agent 4
    s = benchmark_speedup([10.0], [5.0], [4.0])
    assert s.valid and s.reason is None
    assert s.speedup_agent == pytest.approx(2.5)
    assert s.speedup_oracle == pytest.approx(2.0)
    assert s.advantage == pytest.approx(0.5)


def test_speedup_uses_nanmedian() -> None:
    s = benchmark_speedup([9.0, 10.0, 11.0, float("nan")], [5.0, 5.0], [1.0, 4.0, 4.0, 100.0])
    assert s.baseline_time == 10.0 and s.agent_time == 4.0
    assert s.speedup_agent == pytest.approx(2.5)


@pytest.mark.parametrize("nop, oracle, agent, why", [
    (None, [1.0], [1.0], "no nop samples"),
    ([1.0], [], [1.0], "no oracle samples"),
    ([1.0], [1.0], [0.0], "agent median"),
    ([0.0], [1.0], [1.0], "nop median"),
    ([1.0], [float("nan")], [1.0], "oracle median"),
    ([1.0], [1.0], [float("inf")], "agent median"),
    ([1e308], [1e-308], [1.0], "speedup is not finite"),
])
def test_invalid_benchmarks(nop, oracle, agent, why) -> None:
    s = benchmark_speedup(nop, oracle, agent)
    assert not s.valid and why in (s.reason or "")
    assert s.speedup_agent is None and s.advantage is None


def test_sample_matrix_agrees_with_scalar() -> None:
    rng = np.random.default_rng(1)
    nop, ora, agt = (rng.uniform(0.5, 2.0, (50, 7)) for _ in range(3))
    agt[3, :] = 0.0
    ora[7, :] = np.nan
    sa, so, ok = speedups_from_sample_matrix(nop, ora, agt)
    for i in range(50):
        s = benchmark_speedup(nop[i], ora[i], agt[i])
        assert ok[i] == s.valid
        if s.valid:
            assert sa[i] == pytest.approx(s.speedup_agent)
            assert so[i] == pytest.approx(s.speedup_oracle)
        else:
            assert math.isnan(sa[i])
    assert not ok[3] and not ok[7] and ok.sum() == 48


def test_median_time_missing() -> None:
    assert median_time(None) is None
    assert median_time([]) is None
    assert median_time([float("nan")]) is None
    assert median_time([3.0, 1.0, 2.0]) == 2.0


@pytest.mark.parametrize("name, expected", [  # reference section 4 (KE7/helix tests)
    ("pkg.sub.Bench.time_case(10)", ("pkg.sub", "Bench", "time_case", "10")),
    ("pkg.sub.module.func(10, 'x')", ("pkg.sub.module", None, "func", "10, 'x'")),
    ("func(1)", (None, None, "func", "1")),
    ("", (None, None, None, None)),
    ("  a..b  ", ("a", None, "b", None)),
    ("Bench.time_x", ("Bench", None, "time_x", None)),  # 2 parts: no class
    (".Bench.time_x", ("Bench", None, "time_x", None)),
    ("x.Bench.time_x", ("x", "Bench", "time_x", None)),
    ("f(a)(b)", (None, None, "f", "a)(b")),  # cut at the first "("
    ("f(1", (None, None, "f(1", None)),  # no closing ")": not a parameter list
])
def test_deconstruct(name, expected) -> None:
    assert deconstruct_benchmark(name) == expected
    assert deconstruct_benchmark(name, variant="adapter") == expected


def test_gmean_variants() -> None:
    assert gmean([2.0, 8.0]) == pytest.approx(4.0)
    assert gmean([2.0, 8.0, -1.0, 0.0, float("nan"), float("inf"), None]) == pytest.approx(4.0)
    assert gmean([]) is None
    assert gmean([0.0, -3.0]) is None
    # adapter: the denominator counts the non-positive value (upstream quirk 4)
    assert gmean([4.0, -1.0], variant="adapter") == pytest.approx(2.0)
    assert gmean([], variant="adapter") is None


def test_levels_drop_unusable_and_empty() -> None:
    names = [("m", None, "f"), ("m", None, "g"), ("n", None, "h")]
    lv = level_advantages(names, [2.0, -1.0, None], [1.0, 1.0, 1.0])
    assert lv == {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}
    assert level_advantages([], [], []) == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}
    assert task_speedup([]) == 1.0
    with pytest.raises(ValueError):
        level_advantages(names, [1.0], [1.0])


def test_fallback_example_every_level_minus_one() -> None:
    # reference section 6: oracle speedups all 2.0 -> every level = -1.0
    names = ["m.A.f(1)", "m.A.f(2)", "m.g", "n.h"]
    tm = task_metrics(names, [5.0, 6.0, 7.0, 8.0], [2.0] * 4, pytest_failed=True,
                      snapshot_failed=False)
    assert tm.fallback_to_baseline and not tm.success
    for lv in (tm.agent_advantage_level1, tm.agent_advantage_level2,
               tm.agent_advantage_level3, tm.agent_advantage_level4):
        assert lv == pytest.approx(-1.0)
    assert tm.task_speedup == 1.0
    entry = tm.per_benchmark_speedups["m.g"]
    assert entry == {"agent/nop": 1.0, "oracle/nop": 2.0, "advantage": -1.0,
                     "fallback_to_baseline": True}


def test_fallback_not_for_nop_and_nonfinite_oracle() -> None:
    tm = task_metrics(["m.f"], [3.0], [2.0], pytest_failed=True, snapshot_failed=True,
                      is_nop=True)
    assert not tm.fallback_to_baseline and tm.agent_advantage == pytest.approx(1.0)
    assert fallback_speedups([2.0, float("nan"), None]) == (
        [1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [-1.0, 0.0, 0.0])


def test_tests_block_rules() -> None:
    ok = {"error": 0, "failed": 0, "passed": 30, "total": 30}
    assert not pytest_block_failed(ok)
    assert pytest_block_failed({"failed": 0, "passed": 3})  # no "error" key fails
    assert pytest_block_failed({"results": {"skipped": True}})  # the "tests skipped" payload
    assert pytest_block_failed({"error": 1, "failed": 0})
    assert pytest_block_failed({"error": 0, "failed": 2})
    assert pytest_block_failed({"error": 2, "failed": 0})
    assert pytest_block_failed(None)


def test_snapshot_block_rules() -> None:
    # a failed count alone does not fail (the real PitBench trace: failed 4, passed)
    assert not snapshot_block_failed({"failed": 4, "passed": 52, "total": 76})
    assert snapshot_block_failed({"failed": 0, "pass-to-fail": 1})
    assert not snapshot_block_failed({"failed": 3, "fail-to-fail": 3, "pass-to-fail": 0})
    assert snapshot_block_failed({"error": "no baseline"})
    assert snapshot_block_failed(None)


def test_merge_rules() -> None:
    assert not merge_pytest_failed(3, 3)  # no more failures than the oracle
    assert merge_pytest_failed(4, 3)
    assert merge_pytest_failed(1, None)  # no oracle: any failure
    assert not merge_pytest_failed(0, None)
    assert not merge_snapshot_failed("PASSED", 0)
    assert merge_snapshot_failed(None, 0)  # missing status fails
    assert merge_snapshot_failed("passed", 2)
    assert merge_snapshot_failed("failed", 0)
