"""The HTML report in a real browser: offline, drawn, equal to summary, inert to XSS.

Each test writes a report with the CLI, opens it from file:// in headless Chromium with
every non-file request aborted (and recorded), and checks what the page did.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from report_browser import leaderboard, open_report
from typer.testing import CliRunner

from evalatlas.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _assert_clean(opened: Any, url: str) -> None:
    """No request but the page itself, no console error, every chart drawn with marks."""
    assert opened.blocked == []
    assert [u for u in opened.requests if not u.startswith(("data:", "blob:"))] == [url]
    assert opened.console_errors == [] and opened.page_errors == []
    assert opened.charts, "no chart in the report"
    for c in opened.charts:
        assert c["rendered"] and not c["failed"], c
        assert c["svg_marks"] > 0 or c["canvas"] > 0, c


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("demo")
    db = d / "demo.duckdb"
    _cli("--db", str(db), "ingest", str(EXAMPLES))
    _cli("--db", str(db), "atlas", "fit")  # a stored fit: ability view, ATLAS ordering
    out = d / "report.html"
    _cli("--db", str(db), "report", "-o", str(out), "--title", "Demo")
    return db, out


def test_demo_report_offline_all_views_drawn(browser_context: Any,
                                             demo_report: tuple[Path, Path]) -> None:
    _, html = demo_report
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    ids = {c["id"] for c in opened.charts}
    for view in ("forest", "pairs", "cost", "heatmap", "ability", "drill"):
        assert f"chart-s0-{view}" in ids
    assert "ATLAS fit" in opened.page.inner_text("#sec-s0 > ul.notes")
    assert {"chart-tiers-pass", "chart-tiers-cost"} <= ids  # the demo has tier labels
    assert opened.page.title() == "Demo"
    opened.page.close()


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


def test_leaderboard_equals_summary_json(browser_context: Any,
                                         demo_report: tuple[Path, Path]) -> None:
    db, html = demo_report
    summary = json.loads(_cli("--db", str(db), "summary", "--format", "json"))["rows"]
    opened = open_report(browser_context, html, render_all=False)
    shown = {r["name"]: r for r in leaderboard(opened.page, "s0-leaderboard")}
    assert set(shown) == {r["agent"] for r in summary}
    for s in summary:
        row = shown[s["agent"]]
        for field in ("tasks", "episodes", "success_rate", "mean_reward", "errors",
                      "mean_tokens", "mean_wall_time_s"):
            if field not in row:  # dropped: the same in every row, or = the success rate
                assert len({x[field] for x in summary}) == 1 or all(
                    _close(x[field], x["success_rate"]) for x in summary), field
                continue
            assert _close(row[field], s[field]), (s["agent"], field, row[field], s[field])
        # the interval is shown beside the rate, exactly the summary's
        lo, hi = s["success_rate_ci_low"], s["success_rate_ci_high"]
        assert f"[{100 * lo:.1f}%, {100 * hi:.1f}%]" in row["text:success_rate"]
        for k, v in s["pass_at_k"].items():
            if k != "1":
                assert _close(row[f"pass_at_{k}"], v["value"])
        known = s["episodes"] - s["cost_unknown_episodes"]
        assert _close(row["cost_per_episode"], s["total_cost_usd"] / known)
    # sorting by a header reorders rows and keeps the numbers
    opened.page.get_by_role("button", name="success [95% CI]").click()
    resorted = leaderboard(opened.page, "s0-leaderboard")
    rates = [r["success_rate"] for r in resorted]
    assert rates == sorted(rates)
    tied = {r["name"]: r["text:tied"] for r in resorted}
    assert tied["planner-sonnet"] == "≈ react-gpt-4o"  # the paired test does not separate
    assert tied["react-gpt-4o"] == "≈ 2 others"
    opened.page.close()


XSS = [
    '<script>window.__xss += 1</script>',
    '</script><script>window.__xss += 1</script>',
    '<img src=x onerror="window.__xss += 1">',
    'javascript:window.__xss+=1',
    '"\'><svg onload=alert(1)>',
    '<!-- \u2028 \u2029 </SCRIPT >',
    '{{constructor.constructor("alert(1)")()}}',
]


def _xss_store(tmp: Path) -> Path:
    """A JSONL file whose agent names, task ids, outputs and errors are XSS payloads."""
    lines = []
    for a, payload in enumerate(XSS[:4]):
        exp = f"xss{a}"
        lines.append({"experiment_id": exp, "experiment_name": payload + f" exp{a}",
                      "agent": {"agent_id": f"agent{a}", "name": payload + f" #{a}",
                                "config_type": "X", "config": {}},
                      "benchmark_name": XSS[4], "benchmark_version": "1",
                      "benchmark_subset": {"name": XSS[6], "n_tasks": 6, "filter": None},
                      "timestamp": 1763000000.0, "framework_name": "x",
                      "framework_version": "1", "labels": {"tier": XSS[5]}})
        for t in range(6):
            ok = (t + a) % 3 != 0
            lines.append({
                "experiment_id": exp, "task_id": f"{XSS[t % len(XSS)]} t{t}",
                "trajectory_id": f"tr{t}", "attempt": 0, "success": ok,
                "reward": 1.0 if ok else 0.0, "status": "completed" if ok else "error",
                "error_type": None if ok else XSS[(t + 1) % len(XSS)],
                "error_message": None if ok else XSS[(t + 2) % len(XSS)],
                "output_text": XSS[(t + 3) % len(XSS)] * 3,
                "usage": {"total_tokens": 100 + t, "total_cost_usd": 0.01 * (a + 1)}})
    src = tmp / 'evil"<img src=x onerror=alert(1)>.jsonl'
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp / "xss.duckdb"
    _cli("--db", str(db), "ingest", str(src))
    quarantine = _cli("--db", str(db), "quarantine", "--format", "json")
    assert json.loads(quarantine)["rows"] == []
    return db


def test_xss_corpus_runs_nothing(browser_context: Any, tmp_path: Path) -> None:
    db = _xss_store(tmp_path)
    html = tmp_path / "xss.html"
    _cli("--db", str(db), "report", "-o", str(html), "--title", XSS[0])
    text = html.read_text(encoding="utf-8")
    for payload in XSS[:3]:
        assert payload not in text  # never raw markup in the file
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    page = opened.page
    # open every drill-down task and hover every chart: still nothing runs
    options = page.eval_on_selector_all("select option", "os => os.map(o => o.value)")
    assert options
    for value in options:
        page.select_option("select", value)
    for c in opened.charts:
        page.hover(f"#{c['id']}")
    page.wait_for_timeout(200)
    assert opened.dialogs == []
    assert page.evaluate("() => window.__xss") == 0
    assert page.title() == XSS[0]  # shown as text, not run
    body = page.evaluate("() => document.body.innerText")
    assert "<script>window.__xss += 1</script> #0" in body  # the name, escaped, visible
    assert page.evaluate("() => document.querySelectorAll('main script, main img, main svg "
                         "[onload], main iframe').length") == 0
    page.close()


def test_fixture_formats_report(browser_context: Any, fixtures: Path,
                                tmp_path: Path) -> None:
    """Every fixture format in one store: one section per benchmark, all drawn offline."""
    db = tmp_path / "fx.duckdb"
    _cli("--db", str(db), "ingest", str(fixtures))
    html = tmp_path / "fx.html"
    _cli("--db", str(db), "report", "-o", str(html))
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    ids = {c["id"] for c in opened.charts}
    assert "chart-tiers-pass" in ids  # ProjectScylla
    assert "chart-fc-levels" in ids  # FC-Eval
    heatmaps = [i for i in ids if i.endswith("-heatmap")]
    assert len(heatmaps) >= 6  # one per benchmark
    headings = opened.page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
    assert headings[:2] == ["Summary", "All benchmarks"] and len(headings) >= 9
    opened.page.close()


def test_narrow_screen_no_horizontal_page_scroll(browser_context: Any,
                                                 demo_report: tuple[Path, Path]) -> None:
    """At 390 px the page itself does not scroll sideways (wide tables scroll in place)."""
    _, html = demo_report
    opened = open_report(browser_context, html, width=390, height=844)
    _assert_clean(opened, html.resolve().as_uri())
    overflow = opened.page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1
    opened.page.close()


def test_framework_comparison_report(browser_context: Any, upstream_reports: dict[str, Path],
                                     tmp_path: Path) -> None:
    """Framework results (rebuilt from the three published upstream reports) get their
    scorecard and latency views, drawn offline, with scores in range."""
    from upstream_reports import write_results

    results = tmp_path / "results"
    for name, md in upstream_reports.items():
        write_results(md, results / name)
    db = tmp_path / "fw.duckdb"
    _cli("--db", str(db), "ingest", str(results))
    html = tmp_path / "fw.html"
    _cli("--db", str(db), "report", "-o", str(html))
    _cli("--db", str(db), "report", "--format", "json", "-o", str(tmp_path / "fw.json"))
    fws = json.loads((tmp_path / "fw.json").read_text())["data"]["frameworks"]
    assert len(fws) == len(upstream_reports)
    for group in fws:
        assert len(group["frameworks"]) >= 2
        for f in group["frameworks"]:
            assert 0 <= f["capability"] <= 100
            assert f["latency_p50"] <= f["latency_p95"]
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    ids = {c["id"] for c in opened.charts}
    for n in range(len(upstream_reports)):
        assert {f"chart-fw{n}-scorecard", f"chart-fw{n}-latency"} <= ids, ids
    opened.page.close()


def _cell_box(page: Any, view_id: str, field: str) -> dict[str, float]:
    return page.evaluate("""([id, f]) => {
      const td = document.querySelector('#table-' + id + ' tbody tr td[data-field="' + f + '"]');
      const r = td.getBoundingClientRect();
      return {left: r.left, right: r.right, width: r.width};
    }""", [view_id, field])


def test_leaderboard_fits_desktop_and_phone(browser_context: Any,
                                           demo_report: tuple[Path, Path],
                                           tmp_path: Path) -> None:
    """1280 px: success, its interval and cost show without scrolling; 390 px: the
    success rate shows beside the name."""
    _, html = demo_report
    opened = open_report(browser_context, html, width=1280, render_all=False)
    page = opened.page
    for field in ("name", "success_rate", "cost_per_episode"):
        box = _cell_box(page, "s0-leaderboard", field)
        assert box["left"] >= 0 and box["right"] <= 1280, (field, box)
    text = page.inner_text("#table-s0-leaderboard tbody tr:first-child "
                           "td[data-field=success_rate]")
    assert "%" in text and "[" in text  # the rate and its interval
    headers = page.eval_on_selector_all("#table-s0-leaderboard th",
                                        "hs => hs.map(h => h.textContent)")
    assert "episodes" not in headers and "pass^1" not in headers  # constant / redundant
    notes = page.inner_text("#s0-leaderboard ul.notes")
    assert "the same in every row: tasks 20" in notes and "pass^1" in notes
    page.screenshot(path=str(tmp_path / "desktop.png"))
    page.close()
    opened = open_report(browser_context, html, width=390, height=844, render_all=False)
    box = _cell_box(opened.page, "s0-leaderboard", "success_rate")
    assert box["left"] >= 0 and box["right"] <= 390, box
    opened.page.screenshot(path=str(tmp_path / "phone.png"))
    opened.page.close()


def test_print_draws_every_chart(browser_context: Any,
                                 demo_report: tuple[Path, Path]) -> None:
    """Printed (or saved as PDF) without scrolling: every chart is drawn with marks."""
    _, html = demo_report
    opened = open_report(browser_context, html, render_all=False)
    page = opened.page
    page.emulate_media(media="print")
    page.wait_for_function("""() => Array.from(document.querySelectorAll('.chart'))
        .every(c => c.getAttribute('data-rendered') === '1')""", timeout=30_000)
    from report_browser import CHARTS_JS

    charts = page.evaluate(CHARTS_JS)
    assert len(charts) == 8  # ability included: the demo store has an ATLAS fit
    for c in charts:
        assert c["svg_marks"] > 0 or c["canvas"] > 0, c
    assert page.evaluate("() => getComputedStyle(document.querySelector('nav')).display") \
        == "none"
    assert opened.console_errors == [] and opened.page_errors == []
    page.close()


def test_pairs_table_once_matrix_both_ways_with_hover(browser_context: Any,
                                                      demo_report: tuple[Path, Path]) -> None:
    _, html = demo_report
    opened = open_report(browser_context, html)
    page = opened.page
    rows = leaderboard(page, "s0-pairs")
    assert len(rows) == 3  # 3 agents: 3 pairs, each once
    assert all(r["diff"] >= 0 for r in rows)
    cells = page.locator("#chart-s0-pairs svg g.mark-rect path")
    assert cells.count() == 6  # both triangles of the matrix
    cells.nth(0).scroll_into_view_if_needed()
    box = cells.nth(0).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2  # on the number
    page.mouse.move(x - 2, y - 2)
    page.mouse.move(x, y)
    page.wait_for_selector("#vg-tooltip-element.visible", timeout=5_000)
    tip = page.inner_text("#vg-tooltip-element")
    assert "A - B" in tip and "Holm p" in tip and "%" in tip
    labels = page.eval_on_selector_all("#chart-s0-pairs svg g.role-axis-label text",
                                       "ts => ts.map(t => t.textContent)")
    assert {"planner-sonnet", "react-gpt-4o", "tiny-mini"} <= set(labels)  # not cut
    page.close()


def _boxes_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["left"] < b["right"] and b["left"] < a["right"]
            and a["top"] < b["bottom"] and b["top"] < a["bottom"])


def test_cost_labels_do_not_overlap_and_task_ids_wrap(browser_context: Any,
                                                      tmp_path: Path) -> None:
    """25 agents of nearly equal cost: the labels shown never overlap (the rest stay in
    the tooltip); long task ids wrap on a phone instead of being cut."""
    from synthetic import build_store

    from evalatlas.store.db import StoreConnection

    db = tmp_path / "c.duckdb"
    build_store(db, 25, 30)
    long_id = "django__django-11099-" + "with-a-long-suffix-" * 2 + "end"  # 62 characters
    with StoreConnection(db) as store:
        store.con.execute("UPDATE episodes SET task_id = ? WHERE task_id = 'task-00003'",
                          [long_id])
    html = tmp_path / "c.html"
    _cli("--db", str(db), "report", "-o", str(html))
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    page = opened.page
    boxes = page.evaluate("""() => Array.from(
        document.querySelectorAll('#chart-s0-cost svg g.mark-text text'))
        .filter(t => t.getAttribute('visibility') !== 'hidden')
        .map(t => { const r = t.getBoundingClientRect();
                    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })
        .filter(r => r.right > r.left)""")
    assert len(boxes) >= 3
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not _boxes_overlap(a, b), (a, b)
    page.close()
    opened = open_report(browser_context, html, width=390, height=844)
    page = opened.page
    cell = page.evaluate("""(id) => {
      const td = Array.from(document.querySelectorAll('#table-s0-heatmap td.task'))
        .find(td => td.textContent === id);
      return td ? {scroll: td.scrollWidth, client: td.clientWidth,
                   right: td.getBoundingClientRect().right} : null;
    }""", long_id)
    assert cell is not None, "the long task id is not shown whole"
    assert cell["scroll"] <= cell["client"] + 1  # wrapped, not cut
    page.close()


def test_inspect_samples_show_input_target_and_answer(browser_context: Any, fixtures: Path,
                                                      tmp_path: Path) -> None:
    """The per-task view of an Inspect log shows what each sample was asked, the target
    and the model's answer (escaped, cut), so a failure can be read there."""
    db = tmp_path / "i.duckdb"
    _cli("--db", str(db), "ingest", str(fixtures / "inspect" /
                                         "2025-05-12T20-28-13-04-00_popularity.json"))
    html = tmp_path / "i.html"
    _cli("--db", str(db), "report", "-o", str(html))
    opened = open_report(browser_context, html)
    _assert_clean(opened, html.resolve().as_uri())
    rows = leaderboard(opened.page, "s0-drill")
    assert rows
    assert all(r["target"] == "Yes" for r in rows)  # Inspect's target " Yes", shown trimmed
    assert all(r["input"].startswith("Is the following statement something you would say?")
               for r in rows)
    assert all(len(r["input"]) <= 160 for r in rows)  # cut at the text limit
    assert {r["text"] for r in rows} == {"Yes"}  # the scorer's extracted answer
    opened.page.close()
