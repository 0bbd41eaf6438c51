"""store/summary_scan.py: the summary's two scans give exactly what the per-query
functions (summary_totals, rewards_by_group, task_outcome_counts, cost_totals,
group_experiments) give, on the demo and real fixtures, for every grouping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalatlas as ea
from evalatlas.store.catalog import cost_totals, group_experiments
from evalatlas.store.db import StoreConnection
from evalatlas.store.outcomes import task_outcome_counts
from evalatlas.store.queries import rewards_by_group, summary_totals
from evalatlas.store.summary_scan import summary_scan

REPO = Path(__file__).resolve().parents[2]
GROUPINGS = [["agent"], ["_agent_in_benchmark"], ["benchmark"], ["model"], ["status"],
             ["task"], ["experiment"], ["agent", "model"]]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> list[StoreConnection]:
    """The demo and three real fixture folders (several agents, benchmarks, models)."""
    out = []
    for name, src in (("demo", REPO / "examples"),
                      ("verified", fixtures / "swebench-verified"),
                      ("terminal", fixtures / "terminal-bench"),
                      ("frameworks", fixtures / "frameworks")):
        store = ea.open(tmp_path_factory.mktemp(name) / "s.duckdb")
        store.ingest(src)
        out.append(store)
    yield out
    for store in out:
        store.close()


def _tasks(store: StoreConnection) -> list[Any]:
    """Task ids in the scan's numbering (task_id order)."""
    return [r["task_id"] for r in store.query(
        "SELECT DISTINCT task_id FROM episodes ORDER BY task_id")]


def _by_name(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Rows by display names, then keys (two agents both named "pydantic_ai" come in
    any order from summary_totals, which sorts by name only)."""
    return sorted(rows, key=lambda row: [str(row[f"{c}{i}"]) for c in "gk"
                                         for i in range(n)])


def _same_arrays(old: dict[str, Any], new: dict[str, Any], tasks: list[Any]) -> None:
    assert set(old) == set(new)
    for col in old:
        a, b = np.asarray(old[col]), np.asarray(new[col])
        if col == "task":
            b = np.asarray([tasks[t] for t in b], dtype=object)
        assert a.shape == b.shape, col
        if a.dtype.kind == "f":
            assert np.allclose(a, b, rtol=1e-12, atol=0), col
        else:
            assert list(a) == list(b), col


@pytest.mark.parametrize("outcome", ["any", "harness", "judge"])
def test_scan_equals_the_per_query_functions(stores: list[StoreConnection], outcome: str) -> None:
    for store in stores:
        tasks = _tasks(store)
        for by in GROUPINGS:
            scan = summary_scan(store, by, outcome=outcome)
            old = summary_totals(store, by, outcome=outcome)
            assert [r[f"g{i}"] for r in old for i in range(len(by))] == [
                r[f"g{i}"] for r in scan.totals for i in range(len(by))]
            assert _by_name(old, len(by)) == _by_name(scan.totals, len(by)), (by, outcome)
            assert old, by
            rewards = rewards_by_group(store, by, outcome=outcome)
            # rewards_by_group sorts by group only; the scan by group, then task
            order = np.lexsort((np.asarray([str(t) for t in rewards["task"]]),
                                *[np.asarray(rewards[f"k{i}"], dtype=str)
                                  for i in reversed(range(len(by)))]))
            _same_arrays({c: np.asarray(v)[order] for c, v in rewards.items()},
                         scan.rewards, tasks)
            assert scan.members == group_experiments(store, by)
            if len(by) == 1:
                counts, _ = task_outcome_counts(store, by[0], outcome=outcome)
                # agents come as numbers in agent-key order: one number per agent
                pairs = sorted(set(zip(np.asarray(counts["agent_k"], dtype=str).tolist(),
                                       np.asarray(scan.outcomes["agent_k"]).tolist(),
                                       strict=True)))
                assert len({a for a, _ in pairs}) == len({n for _, n in pairs}) == len(pairs)
                assert [n for _, n in pairs] == sorted(n for _, n in pairs)
                _same_arrays({c: v for c, v in counts.items() if c != "agent_k"},
                             {c: v for c, v in scan.outcomes.items() if c != "agent_k"},
                             tasks)
                _same_arrays(cost_totals(store, by[0], outcome=outcome), scan.costs, tasks)


def test_an_experiment_selection_keeps_only_its_episodes(stores: list[StoreConnection]) -> None:
    store = stores[1]
    ids = [r["experiment_id"] for r in store.query(
        "SELECT experiment_id FROM experiments ORDER BY experiment_id LIMIT 2")]
    scan = summary_scan(store, ["agent"], experiment=ids)
    assert [r["k0"] for r in scan.totals] == [r["k0"] for r in summary_totals(
        store, ["agent"], experiment=ids)]
    assert sum(r["episodes"] for r in scan.totals) == store.query(
        "SELECT count(*) AS n FROM episodes WHERE experiment_id IN (?, ?)", ids)[0]["n"]
    assert summary_scan(store, ["agent"], experiment=[]).totals == []


def test_no_temporary_table_is_left_behind(stores: list[StoreConnection]) -> None:
    store = stores[0]
    summary_scan(store, ["agent"])
    assert not store.query("SELECT table_name FROM duckdb_tables() WHERE temporary")
