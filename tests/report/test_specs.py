"""Views as data: specs, rows and tables from report data, without a browser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.report.build import ReportOptions, build_report_data
from evalatlas.report.specs import all_views, chart_rows, heatmap_rows, view_rows
from evalatlas.store.db import StoreConnection

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("specs") / "demo.duckdb"
    r = CliRunner().invoke(app, ["--db", str(db), "ingest", str(EXAMPLES)])
    assert r.exit_code == 0, r.output
    return db


@pytest.fixture(scope="module")
def data(demo: Path) -> dict:
    with StoreConnection(demo, read_only=True) as store:
        return build_report_data(store)


def _view(views: list[dict], vid: str) -> dict:
    return next(v for v in views if v["id"] == vid)


def test_views_of_the_demo(data: dict) -> None:
    ids = [v["id"] for v in all_views(data)]
    assert ids == ["s0-leaderboard", "s0-forest", "s0-pairs", "s0-cost", "s0-heatmap",
                   "s0-drill", "tiers-pass", "tiers-cost"]
    json.dumps(all_views(data), allow_nan=False)  # strict JSON throughout


def test_forest_sorted_with_intervals_around_points(data: dict) -> None:
    rows = _view(all_views(data), "s0-forest")["rows"]
    assert [r["name"] for r in rows] == ["planner-sonnet", "react-gpt-4o", "tiny-mini"]
    assert [r["success_rate"] for r in rows] == [0.75, 0.65, 0.45]
    for r in rows:
        assert 0 <= r["low"] < r["success_rate"] < r["high"] <= 1


def test_pairs_matrix_is_antisymmetric_and_holm_adjusted(data: dict) -> None:
    view = _view(all_views(data), "s0-pairs")
    rows = view["rows"]
    assert len(rows) == 3  # the table: each of the 3 pairs once, the better side as A
    assert {frozenset((r["a"], r["b"])) for r in rows} == {
        frozenset(p) for p in (("planner-sonnet", "tiny-mini"),
                               ("planner-sonnet", "react-gpt-4o"),
                               ("react-gpt-4o", "tiny-mini"))}
    assert all(r["diff"] >= 0 for r in rows)
    cells = chart_rows(view, data)
    assert len(cells) == 6  # the matrix: both triangles
    by = {(r["a"], r["b"]): r for r in cells}
    ab, ba = by[("planner-sonnet", "tiny-mini")], by[("tiny-mini", "planner-sonnet")]
    assert ab["diff"] == pytest.approx(0.30) and ba["diff"] == pytest.approx(-0.30)
    assert ab["low"] == pytest.approx(-ba["high"])
    assert ab["p_holm"] >= ab["p"]
    assert ab["verdict"] == "row better" and ba["verdict"] == "column better"
    # three attempts per task: per-task means, so Wilcoxon (as `evalatlas compare`)
    assert ab["test"] == "Wilcoxon"


def test_pairs_equal_the_compare_command(demo: Path, data: dict) -> None:
    r = CliRunner().invoke(app, ["--db", str(demo), "compare", "planner-sonnet",
                                 "react-gpt-4o", "tiny-mini", "--format", "json"])
    assert r.exit_code == 0, r.output
    cmp = {(x["a"], x["b"]): x for x in json.loads(r.output)["rows"]}
    for p in data["sections"][0]["pairs"]["rows"]:
        c = cmp.get((p["a"], p["b"]))
        if c is None:
            c = cmp[(p["b"], p["a"])]
            c = {**c, "diff": -c["diff"], "diff_ci_low": -c["diff_ci_high"],
                 "diff_ci_high": -c["diff_ci_low"]}
        assert p["diff"] == pytest.approx(c["diff"], abs=1e-12)
        # the same interval as well (bounded on [-1, 1], issue 10)
        assert (p["diff_ci_low"], p["diff_ci_high"]) == pytest.approx(
            (c["diff_ci_low"], c["diff_ci_high"]), abs=1e-12)
        assert p["p"] == pytest.approx(c["p"], rel=1e-12)
        assert p["p_holm"] == pytest.approx(c["p_holm"], rel=1e-12)


def test_cost_view_marks_the_pareto_frontier(data: dict) -> None:
    v = _view(all_views(data), "s0-cost")
    front = {r["name"]: r["pareto"] for r in v["rows"]}
    # tiny-mini is cheapest, planner-sonnet most accurate; react-gpt-4o costs more than
    # planner-sonnet for less success
    assert front == {"tiny-mini": True, "planner-sonnet": True, "react-gpt-4o": False}
    scales = [layer["encoding"]["x"]["scale"] for layer in v["spec"]["layer"]
              if "scale" in layer["encoding"].get("x", {})]
    assert scales and all(sc["type"] == "log" for sc in scales)
    # the axes fit the data: every point and interval end inside, little room to spare
    lo, hi = scales[0]["domain"]
    costs = [c for r in v["rows"] for c in (r["cost"], r["cost_low"], r["cost_high"]) if c]
    assert lo < min(costs) and max(costs) < hi and hi / lo < 1.5 * max(costs) / min(costs)
    y = next(layer["encoding"]["y"]["scale"] for layer in v["spec"]["layer"]
             if "scale" in layer["encoding"].get("y", {}))
    rates = [x for r in v["rows"] for x in (r["success_rate"], r["low"], r["high"])]
    assert 0 <= y["domain"][0] <= min(rates) and max(rates) <= y["domain"][1] <= 1
    assert y["domain"][1] - y["domain"][0] <= max(rates) - min(rates) + 0.1 + 1e-9


def test_heatmap_cells_and_missing(data: dict) -> None:
    heat = data["sections"][0]["heatmap"]
    rows = heatmap_rows(heat)
    assert len(rows) == 3 * 20
    assert all(r["n"] == 3 and r["rate"] in (0, 1 / 3, 2 / 3, 1) for r in rows)
    assert heat["ordered_by"] == "success rate"
    assert heat["agents"] == ["planner-sonnet", "react-gpt-4o", "tiny-mini"]
    missing = {**heat, "codes": ["--" + heat["codes"][0][2:], *heat["codes"][1:]]}
    assert heatmap_rows(missing)[0]["rate"] is None  # missing, not a failure


def test_heatmap_is_binned_above_the_cell_limit(demo: Path) -> None:
    with StoreConnection(demo, read_only=True) as store:
        data = build_report_data(store, ReportOptions(max_cells=30))
    heat = data["sections"][0]["heatmap"]
    assert heat["binned"] and len(heat["tasks"]) == 10  # 30 cells / 3 agents
    assert any("tasks into 10 bins" in n for n in heat["notes"])
    rows = heatmap_rows(heat)
    assert all(r["rate"] is None or 0 <= r["rate"] <= 1 for r in rows)


def test_drill_down_budget_and_truncation(demo: Path) -> None:
    with StoreConnection(demo, read_only=True) as store:
        data = build_report_data(store, ReportOptions(max_drill_episodes=20, text_limit=5))
    drill = data["sections"][0]["drill"]
    assert len(drill["tasks"]) == 2  # 9 episodes per task
    assert "covers 2 of 20 tasks" in drill["notes"][0]
    assert all(len(t) <= 5 for t in drill["texts"])
    v = next(v for v in all_views(data) if v["id"] == "s0-drill")
    rows = view_rows(v, data)
    assert len(rows) == 9 and {r["outcome"] for r in rows} <= {"success", "failure"}


def test_stored_atlas_fit_orders_the_heatmap(demo: Path, tmp_path: Path) -> None:
    db = tmp_path / "fit.duckdb"
    db.write_bytes(demo.read_bytes())
    r = CliRunner().invoke(app, ["--db", str(db), "atlas", "fit"])
    assert r.exit_code == 0, r.output
    with StoreConnection(db, read_only=True) as store:
        data = build_report_data(store)
    s = data["sections"][0]
    assert s["heatmap"]["ordered_by"] == "ATLAS ability and difficulty"
    ability = s["ability"]
    assert [a["name"] for a in ability] == s["heatmap"]["agents"]
    assert ability[0]["ability"] > ability[-1]["ability"]
    assert all(a["low"] < a["ability"] < a["high"] for a in ability)
    assert any(v["id"] == "s0-ability" for v in all_views(data))


def test_no_pass_hat_k_for_a_group_of_several_agents(demo: Path) -> None:
    """pass^k is defined over one agent's attempts: a benchmark row pooling three agents
    has none in the report, as in ``evalatlas summary --by benchmark`` (the report used
    to compute its own, pooled over the agents)."""
    from evalatlas.report.specs import leaderboard_view

    with StoreConnection(demo, read_only=True) as store:
        data = build_report_data(store, ReportOptions(by="benchmark"))
    rows = leaderboard_view(data["sections"][0], 0.95)["rows"]
    assert rows and not any(k.startswith("pass_hat_") for r in rows for k in r)
    summary = data["sections"][0]["leaderboard"][0]["summary"]
    assert summary["pass_hat_k"] == {}
    assert "3 agents in this group" in summary["pass_at_k_note"]


def test_leaderboard_pass_hat_k(data: dict) -> None:
    """pass^2 with 3 attempts per task: mean over tasks of C(c, 2) / C(3, 2)."""
    from evalatlas.report.specs import leaderboard_view

    v = leaderboard_view(data["sections"][0], 0.95)
    assert any(c["title"] == "pass^2" for c in v["columns"])
    heat = data["sections"][0]["heatmap"]
    b36 = "0123456789abcdefghijklmnopqrstuvwxyz"
    for agent, codes in zip(heat["agents"], heat["codes"], strict=True):
        per_task = [b36.index(codes[j]) for j in range(0, len(codes), 2)]
        expected = sum(c * (c - 1) / 6 for c in per_task) / len(per_task)
        row = next(r for r in v["rows"] if r["name"] == agent)
        assert row["pass_hat_2"] == pytest.approx(expected, abs=1e-12)
        assert row["pass_hat_2"] <= row["success_rate"] <= row["pass_at_2"]
