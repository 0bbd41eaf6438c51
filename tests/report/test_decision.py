"""The report's plain-language summary (report/decision.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.report.build import build_report_data
from evalatlas.report.decision import decision_summary
from evalatlas.report.specs import all_views
from evalatlas.store.db import StoreConnection

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> dict:
    db = tmp_path_factory.mktemp("decision") / "demo.duckdb"
    r = CliRunner().invoke(app, ["--db", str(db), "ingest", str(EXAMPLES)])
    assert r.exit_code == 0, r.output
    with StoreConnection(db, read_only=True) as store:
        return build_report_data(store)


def test_demo_summary_names_the_decision(demo_data: dict) -> None:
    """planner-sonnet leads (75.0%); the paired tests separate it from tiny-mini only
    (Holm p 0.011) and not from react-gpt-4o (0.243); tiny-mini is cheapest ($0.00445)
    and on the frontier."""
    texts = {d["kind"]: d["text"] for d in demo_data["decision"]}
    assert texts["best"] == (
        "toybench: best is planner-sonnet at 75.0% success (95% interval 62.8% to 84.2%); "
        "significantly better than 1 of 2 others (tiny-mini), not separated from "
        "react-gpt-4o.")
    assert texts["cost"].startswith("toybench: cheapest on the cost-accuracy frontier is "
                                    "tiny-mini at $0.00445 per episode (45.0% success).")
    assert "The frontier, cheapest first: tiny-mini, planner-sonnet." in texts["cost"]
    assert "warning" not in texts


def _row(name: str, rate: float, lo: float, hi: float, **extra: object) -> dict:
    return {"name": name, "key": name, "rank": extra.pop("rank", 1),
            "summary": {"success_rate": rate, "success_rate_ci_low": lo,
                        "success_rate_ci_high": hi, **extra.pop("summary", {})},
            "pareto": extra.pop("pareto", False),
            "cost_per_episode": extra.pop("cost", None), "tied_with": [], "tied_count": 0,
            "better_than": extra.pop("better_than", []),
            "better_than_count": extra.pop("better_than_count", 0)}


def test_trust_warnings_and_per_benchmark_lines() -> None:
    data = {"confidence": 0.95, "published": [
        {"experiment": "swe-claude-3.7", "metric": "resolved rate", "published": 0.528,
         "evalatlas": 0.102, "agrees": False, "note": "the source counts another board"},
        {"experiment": "ok-run", "metric": "accuracy", "published": 0.5, "evalatlas": 0.5,
         "agrees": True}],
        "sections": [
            {"title": "All benchmarks", "benchmark": None, "leaderboard": []},
            {"title": "inspect-a", "benchmark": "inspect-a", "leaderboard": [
                _row("m1", 0.9, 0.8, 0.95, better_than=["m2"], better_than_count=1,
                     pareto=True, cost=0.5),
                _row("m2", 0.536, 0.4, 0.65, rank=2, pareto=True, cost=0.1, summary={
                    "run_status": "incomplete",
                    "run_status_note": "incomplete: 56 of 80 planned samples"})]}]}
    out = decision_summary(data)
    kinds = [d["kind"] for d in out]
    assert kinds == ["best", "cost", "warning", "warning"]
    assert out[0]["text"].startswith("inspect-a: best is m1 at 90.0% success")
    assert "significantly better than every other (1: m2)" in out[0]["text"]
    assert out[1]["text"].startswith("inspect-a: cheapest on the cost-accuracy frontier "
                                     "is m2 at $0.1000 per episode (53.6% success).")
    assert out[2]["text"] == ("inspect-a: m2 did not finish (incomplete: 56 of 80 planned "
                              "samples); its numbers cover only what ran.")
    assert out[3]["text"] == ("swe-claude-3.7: the source published resolved rate 52.8%, "
                              "evalatlas recomputes 10.2% (the source counts another "
                              "board).")


def test_summary_is_on_top_of_the_page(demo_data: dict) -> None:
    from evalatlas.report.html import render_html

    html = render_html(demo_data, all_views(demo_data))
    top = html.index('<section class="summary"')
    assert top < html.index('id="sec-s0"')
    assert "best is planner-sonnet" in html[top:]


def test_no_rates_says_so() -> None:
    assert decision_summary({"sections": []}) == [
        {"kind": "info", "benchmark": "", "text": "No agent has a success rate to compare "
                                                   "yet."}]
