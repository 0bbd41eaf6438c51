"""Outcome summary from the store: Terminal-Bench's own pass@k and accuracy reproduced."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalatlas.analysis.summary import outcome_rows
from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.standard_errors import clustered_standard_error
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.outcomes import task_outcome_counts


def outcome_summary(store: StoreConnection, by: str = "agent", *,
                    experiment: list[str] | None = None, ks: list[int] | None = None) -> list[dict]:
    """Per-group outcome rows: the store's per-task counts through the analysis."""
    counts, labels = task_outcome_counts(store, by, experiment=experiment)
    return outcome_rows(counts, labels, by, ks=ks)


FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
TB = FIXTURES / "terminal-bench"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("outcomes") / "s.duckdb"
    with StoreConnection(path) as s:
        ingest_paths(s, [TB, FIXTURES / "swebench-pro" / "gpt-4o-paper"])
        yield s


def test_harness_pass_at_k_and_accuracy(store: StoreConnection) -> None:
    rows = {r["agent"]: r for r in outcome_summary(store)}
    for sub in ("20250902_orchestrator_claude-4-sonnet",
                "20250902_orchestrator_qwen-3-coder-480B"):
        harness = json.loads((TB / sub / "results.json").read_text())
        row = rows[f"LeadArchitectAgent ({sub})"]
        assert (row["episodes"], row["tasks"], row["min_attempts"]) == (400, 80, 5)
        assert row["success_rate"] == harness["accuracy"]
        # k = 1..5 (the fewest attempts); the harness reports k = 2, 4, 5
        assert list(row["pass_at_k"]) == list(row["pass_hat_k"]) == ["1", "2", "3", "4", "5"]
        assert {k: row["pass_at_k"][k]["value"] for k in harness["pass_at_k"]} == \
            pytest.approx(harness["pass_at_k"], abs=1e-15)
        for v in [*row["pass_at_k"].values(), *row["pass_hat_k"].values()]:
            assert 0 <= v["ci_low"] <= v["value"] <= v["ci_high"] <= 1 and v["tasks"] == 80


def test_intervals_are_the_stats_functions(store: StoreConnection) -> None:
    (row,) = [r for r in outcome_summary(store) if r["agent"] == "ob1-agent:ob1-sdk"]
    ep = store.query_arrays(
        "SELECT e.task_id, CAST(e.success AS DOUBLE) AS s FROM episodes e "
        "JOIN experiments x USING (experiment_id) WHERE x.agent_name = 'ob1-agent:ob1-sdk'")
    n, c = len(ep["s"]), int(np.sum(ep["s"]))
    assert (row["success_rate_ci_low"], row["success_rate_ci_high"]) == pytest.approx(
        wilson_interval(c, n))
    assert row["success_rate_se_clustered"] == pytest.approx(
        clustered_standard_error(ep["s"], ep["task_id"]), rel=1e-12)
    # five attempts per task are correlated: the clustered interval is wider than Wilson's
    width = row["success_rate_clustered_ci_high"] - row["success_rate_clustered_ci_low"]
    assert width > row["success_rate_ci_high"] - row["success_rate_ci_low"]


def test_single_attempt_has_no_default_k_and_explicit_k_is_empty(store: StoreConnection) -> None:
    (row,) = [r for r in outcome_summary(store, by="experiment")
              if r["experiment"] == "gpt-4o-paper"]
    assert (row["episodes"], row["successes"]) == (619, 36)
    assert list(row["pass_at_k"]) == ["1"]  # one attempt: k = 1 only
    assert row["pass_at_k"]["1"]["value"] == pytest.approx(36 / 619)
    (row,) = [r for r in outcome_summary(store, by="experiment", ks=[1, 2])
              if r["experiment"] == "gpt-4o-paper"]
    assert row["pass_at_k"]["1"]["value"] == pytest.approx(36 / 619)
    assert row["pass_at_k"]["2"] == {"value": None, "ci_low": None, "ci_high": None,
                                     "tasks": 0, "tasks_total": 619}


def test_pass_at_k_interval_stays_in_unit_range(tmp_path: Path) -> None:
    """pass@2 of 0.95 over 20 tasks: the CLT interval would end above 1 (1.007)."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    with StoreConnection(tmp_path / "s.duckdb") as s:
        ingest_paths(s, [examples])
        rows = {r["agent"]: r for r in outcome_summary(s)}
    p2 = rows["planner-sonnet"]["pass_at_k"]["2"]
    assert p2["value"] == pytest.approx(0.95) and p2["tasks"] == 20
    assert 0.0 <= p2["ci_low"] < 0.95 < p2["ci_high"] <= 1.0
    for row in rows.values():
        for v in row["pass_at_k"].values():
            assert 0.0 <= v["ci_low"] <= v["value"] <= v["ci_high"] <= 1.0


def _per_group_reference(n_rows: np.ndarray, c_rows: np.ndarray, task_rows: np.ndarray,
                         agent_rows: np.ndarray, ks: list[int] | None) -> dict:
    """The per-group computation outcome_rows made before it took every group at once
    (one call of each single-group stats function per group and k)."""
    from evalatlas.metrics.outcomes import (
        attempt_k_values,
        pass_at_k_counts,
        pass_hat_k_counts,
    )
    from evalatlas.stats.bounded import bounded_interval_from_totals, bounded_mean_interval
    from evalatlas.stats.standard_errors import clustered_mean_interval

    _, code = np.unique(task_rows.astype(str), return_inverse=True)
    nt = np.bincount(code, weights=n_rows).astype(float)
    ct = np.bincount(code, weights=c_rows).astype(float)
    se = clustered_mean_interval(nt, ct, ct).se
    clustered = bounded_interval_from_totals(nt, ct, ct, binary=True)
    row = {"episodes": int(n_rows.sum()), "tasks": int(code.max()) + 1,
           "min_attempts": int(n_rows.min()), "successes": int(c_rows.sum()),
           "success_rate_se_clustered": None if np.isnan(se) else se,
           "success_rate_clustered_ci_low": clustered.low,
           "success_rate_clustered_ci_high": clustered.high, "pass_at_k": {}, "pass_hat_k": {}}
    if np.unique(agent_rows.astype(str)).size > 1:
        return row
    for k in ks if ks is not None else attempt_k_values(int(n_rows.max())):
        for name, fn in (("pass_at_k", pass_at_k_counts), ("pass_hat_k", pass_hat_k_counts)):
            per_task = fn(n_rows, c_rows, k)
            ok = per_task[~np.isnan(per_task)]
            iv = bounded_mean_interval(ok) if ok.size else None
            row[name][str(k)] = {
                "value": iv and iv.estimate, "ci_low": iv and iv.low,
                "ci_high": iv and iv.high, "tasks": int(ok.size),
                "tasks_total": int(per_task.size)}
            if iv and iv.reason:
                row[name][str(k)]["ci_note"] = iv.reason
    return row


@pytest.mark.parametrize("by", ["agent", "benchmark", "model"])
@pytest.mark.parametrize("ks", [None, [1, 3, 7]])
def test_all_groups_at_once_equal_one_group_at_a_time(store: StoreConnection, by: str,
                                                      ks: list[int] | None) -> None:
    """outcome_rows takes every group at once (issue 23, 100M episodes); its numbers are
    those of the per-group computation it replaced, on Terminal-Bench and SWE-Bench Pro."""
    counts, labels = task_outcome_counts(store, by)
    rows = {r[by] if by != "agent" else r["agent_id"]: r
            for r in outcome_rows(counts, labels, by, ks=ks)}
    keys = np.asarray(counts["k"], dtype=object)
    assert len(rows) == len(set(keys.tolist())) >= 2
    for key in set(keys.tolist()):
        mine = keys == key
        ref = _per_group_reference(np.asarray(counts["n"])[mine], np.asarray(counts["c"])[mine],
                                   np.asarray(counts["task"], dtype=object)[mine],
                                   np.asarray(counts["agent_k"], dtype=object)[mine], ks)
        got = rows[key if by == "agent" else labels[key]]
        flat_got, flat_ref = _flat({n: got[n] for n in ref}), _flat(ref)
        assert flat_got.keys() == flat_ref.keys(), key
        for name, value in flat_ref.items():
            assert type(flat_got[name]) is type(value), (key, name)
            assert flat_got[name] == (value if value is None or isinstance(value, str)
                                      else pytest.approx(value, rel=1e-12)), (key, name)


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_group_min_max_of_small_integers_equals_ufunc_at() -> None:
    """The (group, value) table path of _group_min_max (attempts, agent numbers: no
    np.minimum.at over 10M cells) gives what np.minimum/maximum.at give, groups without
    rows included (inf / -inf), and floats and large values still take ufunc.at."""
    from evalatlas.analysis.summary import _group_min_max

    rng = np.random.default_rng(3)
    for values, n_groups in ((rng.integers(0, 11, 5_000), 40), (np.array([0, 7, 3]), 5),
                             (rng.integers(0, 10**9, 300), 7),
                             (rng.random(500) * 4 - 2, 9)):
        g = rng.integers(0, n_groups - 1, values.size)  # the last group has no rows
        lo, hi = np.full(n_groups, np.inf), np.full(n_groups, -np.inf)
        np.minimum.at(lo, g, values.astype(float))
        np.maximum.at(hi, g, values.astype(float))
        got_lo, got_hi = _group_min_max(values, g, n_groups)
        assert got_lo.tolist() == lo.tolist() and got_hi.tolist() == hi.tolist()
        assert got_lo.dtype == got_hi.dtype == np.float64
