"""The report shows what ``summary`` shows (issue 21): the same leaderboard rows, runs
that did not finish, the source's headline beside ours, and the published-vs-recomputed
check, in headless Chromium with the network blocked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_logs import derived_log, write_json
from report_browser import leaderboard, open_report
from typer.testing import CliRunner

from evalatlas.cli.main import app

runner = CliRunner()


def _cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, fixtures: Path) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("sumrep")
    outcomes = [["C", "I"] if i % 2 else ["I", "I"] for i in range(40)]
    crash = write_json(derived_log(fixtures, samples=40, epochs=2, outcomes=outcomes,
                                   status="started", done=56, run="crash"),
                       d / "crash.json")
    arith = write_json(derived_log(fixtures, samples=5, epochs=2, reducer="max",
                                   outcomes=[["C", "I"], ["I", "C"], ["C", "C"], ["I", "I"],
                                             ["I", "C"]], task="arith-hidden-b", run="ar"),
                       d / "arith.json")
    swe = fixtures / "swebench-verified" / "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219"
    db = d / "s.duckdb"
    _cli("--db", str(db), "ingest", str(crash), str(arith), str(swe))
    out = d / "report.html"
    _cli("--db", str(db), "report", "-o", str(out))
    return db, out


def test_report_shows_the_published_check_and_unfinished_runs(browser_context: Any,
                                                              report: tuple[Path, Path]
                                                              ) -> None:
    db, html = report
    opened = open_report(browser_context, html)
    assert opened.blocked == [] and opened.console_errors == [] and opened.page_errors == []
    page = opened.page
    # published vs recomputed: SWE-bench Claude 3.7, 52.8% published, 10.2% recomputed
    table = page.locator("#table-published-check")
    table.scroll_into_view_if_needed()
    rows = leaderboard(page, "published-check")
    claude = [r for r in rows if "claude-3-7" in r["experiment"]]
    assert [(r["board"], r["published"], r["evalatlas"], r["agrees"]) for r in claude] == [
        ("Verified", 0.528, 0.102, "NO"), ("bash-only", 0.528, 0.102, "NO")]
    cell = table.locator("td[data-field='evalatlas']").first
    assert cell.is_visible() and cell.inner_text() == "0.102"
    # two SWE-bench boards and Inspect's accuracy of the arith run
    assert page.locator("#published-check h3").inner_text().endswith("(3 numbers)")
    # the leaderboard of each section is summary's, with run status and headline
    summary = json.loads(_cli("--db", str(db), "summary", "--format", "json"))["rows"]
    by_bench = {r.get("benchmark"): r for r in summary}
    sections = {page.locator(f"#sec-s{i} h2").first.inner_text(): f"s{i}"
                for i in range(1, 4)}
    pop = leaderboard(page, f"{sections['popularity']}-leaderboard")
    (crashed,) = pop
    assert crashed["run"] == "incomplete: 56 of 80 planned samples (Inspect status started)"
    assert crashed["coverage"] == pytest.approx(56 / 80)
    assert crashed["success_rate"] == pytest.approx(by_bench.get("popularity",
                                                                 summary[0])["success_rate"])
    page.locator(f"#table-{sections['popularity']}-leaderboard td[data-field='run']").first \
        .scroll_into_view_if_needed()
    assert page.locator(f"#table-{sections['popularity']}-leaderboard "
                        "td[data-field='run']").first.is_visible()
    (ar,) = leaderboard(page, f"{sections['arith-hidden-b']}-leaderboard")
    assert ar["success_rate"] == 0.5
    assert ar["published"] == ("80.0% (Inspect: max over 2 epochs, i.e. any success; "
                               "evalatlas: per attempt)")
    (sw,) = leaderboard(page, f"{sections['swe-bench-verified']}-leaderboard")
    assert sw["published"] == "52.8% (the source's own per-sample data give 10.2%)"
    # the page says which run did not finish
    assert "did not finish" in page.inner_text("header ul.notes")
    page.close()


def test_summary_at_the_top_lists_the_trust_warnings(browser_context: Any,
                                                     report: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    """Issue 21 point 8: the plain-language summary, first thing on the page, warns about
    the run that did not finish and the published headline that evalatlas does not
    reproduce (SWE-bench Claude 3.7: 52.8% published, 10.2% recomputed)."""
    _, html = report
    opened = open_report(browser_context, html, render_all=False)
    assert opened.blocked == [] and opened.console_errors == [] and opened.page_errors == []
    page = opened.page
    summary = page.locator("main > section.summary#summary")
    assert summary.count() == 1
    # it comes before every other section of the page, inside the first viewport
    assert page.evaluate("() => document.querySelector('main').firstElementChild.id") == \
        "summary"
    box = summary.bounding_box()
    assert box is not None and box["y"] < 900 and box["y"] + box["height"] <= 900
    warnings = [w.inner_text() for w in summary.locator("li.warning").all()]
    for w in summary.locator("li.warning").all():
        assert w.is_visible()
        assert w.evaluate("e => getComputedStyle(e).color") == "rgb(154, 52, 18)"
    assert any("did not finish" in w and "incomplete: 56 of 80 planned samples" in w
               and "popularity" in w for w in warnings), warnings
    claude = [w for w in warnings if "claude-3-7" in w.lower() or "claude 3.7" in w.lower()]
    assert claude and all("0.528" in w or "52.8%" in w for w in claude), warnings
    assert all("0.102" in w or "10.2%" in w for w in claude), warnings
    # one line per SWE-bench board, each naming its board
    assert sorted(w.split(": the source")[0].split("(")[-1] for w in claude) == [
        "Verified board)", "bash-only board)"], claude
    # the run whose headline agrees (Inspect's max-reducer accuracy) is not a warning
    assert not any("arith-hidden-b" in w for w in warnings), warnings
    page.screenshot(path=str(tmp_path / "summary.png"))
    page.close()
