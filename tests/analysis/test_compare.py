"""The one pair rule and the one Holm adjustment of ``compare`` (and of the report's
paired matrix), checked on worked examples."""

from __future__ import annotations

import numpy as np
import pytest

from evalatlas.analysis.compare import aligned_pair, compare_pair, holm_rows


def test_aligned_pair_mcnemar_worked_example() -> None:
    # 6 tasks, one attempt each: A solves 5 that B fails, both fail one.
    # McNemar exact: 5 discordant pairs all for A, p = 2 * 0.5**5 = 0.0625
    sa = np.array([1, 1, 1, 1, 1, 0], dtype=float)
    sb = np.zeros(6)
    r = aligned_pair(sa, sb)
    assert r["test"] == "McNemar"
    assert r["p"] == pytest.approx(0.0625)
    assert (r["discordant_a_only"], r["discordant_b_only"]) == (5, 0)
    assert r["diff"] == pytest.approx(5 / 6)
    assert -1 <= r["diff_ci_low"] < r["diff"] < r["diff_ci_high"] <= 1
    assert r["score_diff"] is None and r["cost_a"] is None  # not compared: missing


def test_compare_pair_is_aligned_pair_on_the_shared_tasks() -> None:
    """compare's episodes are grouped per task, then the same rule applies."""
    a = {"task": np.array(["t1", "t1", "t2", "t3", "t4"], dtype=object),
         "attempt": np.array([0, 1, 0, 0, 0]), "success": np.array([1, 0, 1, 1, 0.0]),
         "score": np.full(5, np.nan), "cost": np.full(5, np.nan)}
    b = {"task": np.array(["t1", "t2", "t3", "t5"], dtype=object),
         "attempt": np.array([0, 0, 0, 0]), "success": np.array([0, 0, 1, 1.0]),
         "score": np.full(4, np.nan), "cost": np.full(4, np.nan)}
    full = compare_pair(a, b)
    assert (full["shared_tasks"], full["tasks_only_a"], full["tasks_only_b"]) == (3, 1, 1)
    direct = aligned_pair(np.array([0.5, 1.0, 1.0]), np.array([0.0, 0.0, 1.0]))
    for k in ("diff", "diff_ci_low", "diff_ci_high", "test", "p", "detectable_difference"):
        assert full[k] == direct[k], k
    assert full["test"] == "Wilcoxon"  # a per-task mean of 0.5 is not 0/1


def test_holm_rows_worked_example() -> None:
    # Holm (1979): sorted p 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    rows = [{"p": 0.01}, {"p": 0.04}, {"p": 0.03}, {"p": None}]
    holm_rows(rows)
    # a missing p stays missing and does not count as a comparison
    assert [r["p_holm"] for r in rows] == pytest.approx([0.03, 0.06, 0.06, None])


def test_holm_rows_leaves_a_single_comparison_alone() -> None:
    rows = [{"p": 0.02}]
    holm_rows(rows)
    assert "p_holm" not in rows[0]
