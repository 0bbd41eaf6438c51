"""Store queries behind ``evalatlas speedups`` on a small published-style table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalatlas.analysis.speedups import run_totals, summarise
from evalatlas.analysis.speedups import task_payloads as _payloads
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.speedups import benchmark_detail, load_speedup_rows


def task_payloads(store: StoreConnection, **filters: list[str]) -> list[dict]:
    rows = load_speedup_rows(store, **filters)
    return _payloads(rows.episodes, rows.measurements, rows.bounds)

ROWS = [  # agent, task, benchmark, agent/nop, oracle/nop
    ("a,m", "t1", "pkg.module.func_a(1)", 4.0, 2.0),
    ("a,m", "t1", "pkg.module.func_b(2)", 3.0, 2.0),
    ("a,m", "t1", "pkg.Bench.time_case(3)", 6.0, 2.0),
    ("a,m", "t2", "pkg.f", 1.0, 2.0),
    ("a,m", "t2", "pkg.g", "nan", 2.0),
    ("b,m", "t1", "pkg.f", 2.0, 1.0),
]


@pytest.fixture
def store(tmp_path: Path) -> StoreConnection:
    path = tmp_path / "website_data.csv"
    lines = ["id,level,agent_id,agent/nop,oracle/nop,task_id,benchmark_name,advantage"]
    lines += [f'{i},param-level,"{a}",{x},{y},{t},{n},' for i, (a, t, n, x, y)
              in enumerate(ROWS)]
    path.write_text("\n".join(lines) + "\n")
    s = StoreConnection(tmp_path / "s.duckdb")
    rep = ingest_paths(s, [path])
    assert rep.episodes == 3 and rep.measurements == 6 and rep.rejected == 1
    return s


def test_payloads_recompute_the_worked_example(store: StoreConnection) -> None:
    ps = {(p["agent"], p["task_id"]): p for p in task_payloads(store)}
    w = ps[("a:m", "t1")]  # the reference's worked example
    assert w["agent_advantage_level4"] == pytest.approx(2.16017, abs=5e-6)
    assert w["agent_advantage_level1"] == pytest.approx(2.73205, abs=5e-6)
    assert w["agent_advantage_level3"] == pytest.approx(2.33333, abs=5e-6)
    assert w["task_speedup"] == pytest.approx(4.16017, abs=5e-6)
    assert w["success"] is None  # the table has no test results
    t2 = ps[("a:m", "t2")]
    assert t2["num_benchmarks"] == 2 and t2["num_valid_benchmarks"] == 1
    assert t2["agent_advantage"] == pytest.approx(-1.0)
    store.close()


def test_summaries_by_agent_and_task(store: StoreConnection) -> None:
    ps = task_payloads(store)
    rows = {r["agent"]: r for r in summarise(ps, level=3)}
    a = rows["a:m"]
    assert a["advantage"] == pytest.approx((7 / 3 - 1.0) / 2)
    assert a["mean_speedup"] == pytest.approx((72 ** (1 / 3) + 1.0) / 2)
    assert a["beat_oracle_share"] == pytest.approx(3 / 4)
    assert a["success_rate"] is None and a["pass_at_k"] == {}
    lo, hi = a["advantage_ci_low"], a["advantage_ci_high"]
    assert lo <= a["advantage"] <= hi and not math.isnan(lo)
    by_task = summarise(ps, "task")
    assert [(r["task_id"], r["agent"]) for r in by_task] == [
        ("t1", "a:m"), ("t1", "b:m"), ("t2", "a:m")]
    with pytest.raises(ValueError, match="--by"):
        summarise(ps, "model")
    with pytest.raises(ValueError, match="--level"):
        summarise(ps, level=5)
    totals = run_totals(ps)
    assert totals["total_cost_usd"] is None and totals["cost_unknown_episodes"] == 3
    store.close()


def test_detail_filters(store: StoreConnection) -> None:
    rows = benchmark_detail(store, agent=["a:m"], task=["t2"])
    assert [(r["benchmark"], r["valid"]) for r in rows] == [("pkg.f", True), ("pkg.g", False)]
    assert "finite" in rows[1]["invalid_reason"]
    assert len(benchmark_detail(store, limit=2)) == 2
    store.close()
