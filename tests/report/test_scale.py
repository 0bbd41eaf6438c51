"""The report on stores shaped to break it (issue #28, 6), scaled down: many agents,
many tasks, megabyte names, bidi controls. Full sizes: benchmarks/bench_report_scale.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from synthetic import build_store

from evalatlas.report.build import TIED_NAMES, ReportOptions, build_report_data
from evalatlas.report.document import report_of
from evalatlas.report.names import FULL_NAME_LIMIT, NAME_LIMIT, display_name
from evalatlas.report.specs import BOARD_ROWS, COST_POINTS, FOREST_ROWS, all_views
from evalatlas.store.db import StoreConnection


def _views(data: dict) -> dict[str, dict]:
    return {v["id"]: v for v in all_views(data)}


@pytest.fixture(scope="module")
def many_agents(tmp_path_factory: pytest.TempPathFactory) -> dict:
    db = tmp_path_factory.mktemp("many") / "many.duckdb"
    build_store(db, 1_200, 3)
    with StoreConnection(db, read_only=True) as store:
        return build_report_data(store, ReportOptions(max_heat_agents=100))


def _brute_force_ranks(board: list[dict]) -> dict[str, tuple[int, int]]:
    """The previous all-pairs rule (no pair compared): rank and tied count per key."""
    def better(x: dict, y: dict) -> bool:
        lx, hy = x["summary"]["success_rate_ci_low"], y["summary"]["success_rate_ci_high"]
        return lx is not None and hy is not None and lx > hy

    out = {}
    for b in board:
        rank = 1 + sum(1 for o in board if o is not b and better(o, b))
        tied = sum(1 for o in board if o is not b and not better(o, b) and not better(b, o)
                   and o["summary"]["success_rate"] is not None)
        out[b["key"]] = (rank, tied)
    return out


def test_many_agents_are_summarised(many_agents: dict) -> None:
    s = many_agents["sections"][0]
    heat = s["heatmap"]
    assert heat["agents_binned"] and len(heat["agents"]) == 100
    assert heat["n_agents"] == 1_200
    assert any("agents into 100 bins" in n for n in heat["notes"])
    assert all(len(row) == len(heat["tasks"]) for row in heat["percent"])
    assert all(-1 <= v <= 100 for row in heat["percent"] for v in row)
    views = _views(many_agents)
    board = views["s0-leaderboard"]
    assert len(board["rows"]) == BOARD_ROWS
    assert any(f"{BOARD_ROWS:,} best-ranked of 1,200" in n for n in board["notes"])
    assert len(views["s0-forest"]["rows"]) == FOREST_ROWS
    assert len(views["s0-cost"]["rows"]) == COST_POINTS
    assert len(s["pairs"]["agents"]) == 20 and len(s["pairs"]["rows"]) == 190
    assert all(len(b["tied_with"]) <= TIED_NAMES for b in s["leaderboard"])


def test_ranks_equal_the_all_pairs_rule(tmp_path: Path) -> None:
    """The sorted/array rank and tie counts equal the old loop over all pairs (with no
    pair compared, so that only intervals decide)."""
    db = tmp_path / "r.duckdb"
    build_store(db, 150, 60)
    with StoreConnection(db, read_only=True) as store:
        data = build_report_data(store, ReportOptions(max_matrix_agents=1))
    board = data["sections"][0]["leaderboard"]
    expected = _brute_force_ranks(board)
    assert {b["key"]: (b["rank"], b["tied_count"]) for b in board} == expected
    assert len({b["rank"] for b in board}) > 3  # the intervals do separate some


def test_many_tasks_heatmap_binned_and_pairs_once(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    build_store(db, 20, 3_000)
    with StoreConnection(db, read_only=True) as store:
        report = report_of(store, ReportOptions(max_cells=6_000))
    heat = report.data["sections"][0]["heatmap"]
    assert heat["binned"] and not heat["agents_binned"] and len(heat["tasks"]) == 300
    pairs = _views(report.data)["s0-pairs"]["rows"]
    assert len(pairs) == 190 and len({frozenset((p["a"], p["b"])) for p in pairs}) == 190
    assert len(report.to_html().encode()) < 1.5 * 2**20


def test_megabyte_names_are_stored_once_and_shortened(tmp_path: Path) -> None:
    db = tmp_path / "n.duckdb"
    build_store(db, 5, 20)
    big = "y" * 1_000_000
    with StoreConnection(db) as store:
        store.con.execute("UPDATE experiments SET agent_name = ? || 'agent' "
                          "WHERE agent_id = 'agent0000'", [big])
        store.con.execute("UPDATE episodes SET task_id = ? || 'task' "
                          "WHERE task_id = 'task-00000'", [big])
    with StoreConnection(db, read_only=True) as store:
        report = report_of(store)
    html = report.to_html()
    assert len(html.encode()) < 1.2 * 2**20  # the runtime is ~0.9 MB of it
    assert "y" * (FULL_NAME_LIMIT + 1) not in html
    board = report.data["sections"][0]["leaderboard"]
    long_row = next(b for b in board if b["name"].startswith("yyy"))
    assert len(long_row["name"]) == NAME_LIMIT and long_row["name"].endswith("…")
    assert len(long_row["full_name"]) == FULL_NAME_LIMIT
    heat = report.data["sections"][0]["heatmap"]
    assert max(len(t) for t in heat["tasks"]) <= NAME_LIMIT + 12


def test_bidi_controls_are_shown_not_obeyed(tmp_path: Path) -> None:
    """An agent named "\\u202eo4-tpg" would read as "gpt-4o" (issue #28)."""
    db = tmp_path / "b.duckdb"
    build_store(db, 3, 10)
    with StoreConnection(db) as store:
        store.con.execute("UPDATE experiments SET agent_name = ? WHERE agent_id = "
                          "'agent0000'", ["\u202eo4-tpg"])
        store.con.execute("UPDATE experiments SET agent_name = ? WHERE agent_id = "
                          "'agent0001'", ["gpt-4o"])
        store.con.execute("UPDATE episodes SET task_id = ? WHERE task_id = 'task-00001'",
                          ["task\u2066\u202eevil\u2069"])
    with StoreConnection(db, read_only=True) as store:
        report = report_of(store)
    names = {b["name"] for b in report.data["sections"][0]["leaderboard"]}
    assert "\\u202eo4-tpg" in names and "gpt-4o" in names
    html = report.to_html()
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", html)
    assert "task\\u2066\\u202eevil\\u2069" in report.data["sections"][0]["heatmap"]["tasks"]
    assert display_name("a\u202eb\x1b[31mc\nd") == "a\\u202eb\\x1b[31mc d"
