"""The report's "Why agents fail" view in headless Chromium (network blocked): the
investigator's findings drawn as stacked categories per agent, the numbers of
``evalatlas failures``, suspect tasks with evidence quotes escaped like every
agent-produced string."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from report_browser import open_report
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.report.failures import failure_views

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PAYLOAD = '<img src=x onerror="window.__xss+=1"></script><script>window.__xss+=1</script>'
runner = CliRunner()


def _investigator(request: dict[str, Any]) -> str:
    user = request["messages"][1]["content"]
    body = user.split("\n", 3)[3].rsplit("\n", 1)[0]  # the JSON inside the block
    task = json.loads(body)["task_id"]
    broken = task in ("toy-013", "toy-003")
    category = "task_broken" if broken else ("timeout_or_limit" if task.endswith("7")
                                             else "wrong_answer")
    return json.dumps({"difficulty": "hard", "feasible": not broken,
                       "failure_category": category,
                       "failure_root_cause": f"Root cause for {task}.",
                       "evidence": PAYLOAD if broken else "ok"})


@pytest.fixture(scope="module")
def investigated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("why")
    db = d / "demo.duckdb"
    assert runner.invoke(app, ["--db", str(db), "ingest", str(EXAMPLES)]).exit_code == 0
    with FakeOpenAI(responder=_investigator) as srv:
        r = runner.invoke(app, ["--db", str(db), "investigate", "--model", "m",
                                "--base-url", srv.base_url, "--cache-dir", str(d / "c")])
    assert r.exit_code == 0, r.output
    html = d / "report.html"
    r = runner.invoke(app, ["--db", str(db), "report", "-o", str(html)])
    assert r.exit_code == 0, r.output
    return db, html


def test_why_agents_fail_view_drawn_offline(investigated: tuple[Path, Path],
                                            browser_context: Any, tmp_path: Path) -> None:
    # (``investigated`` first: Playwright's loop would refuse the investigator's asyncio)
    db, html = investigated
    text = html.read_text(encoding="utf-8")
    assert "<img src=x" not in text and "<script>window.__xss" not in text
    opened = open_report(browser_context, html)
    url = html.resolve().as_uri()
    assert opened.blocked == [] and opened.console_errors == [] and opened.page_errors == []
    assert [u for u in opened.requests if not u.startswith(("data:", "blob:"))] == [url]
    chart = next(c for c in opened.charts if c["id"] == "chart-failures-categories")
    assert chart["rendered"] and not chart["failed"] and chart["svg_marks"] > 0
    page = opened.page
    assert "Why agents fail" in page.inner_text("nav")
    # the table shows the numbers of `evalatlas failures`
    cli = json.loads(runner.invoke(app, ["--db", str(db), "failures", "-f", "json"]).stdout)
    want = {(r["group"], r["category"]): r for r in cli["rows"] if r["episodes"]}
    cells = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#table-failures-categories tbody tr')).map(tr => Object.fromEntries(
        Array.from(tr.querySelectorAll('td')).map(td => [td.getAttribute('data-field'),
        td.getAttribute('data-value')])))""")
    assert len(cells) == len(want) == 9  # 3 agents x 3 categories
    for c in cells:
        w = want[(json.loads(c["group"]), json.loads(c["category"]))]
        assert json.loads(c["share"]) == pytest.approx(w["share"], rel=1e-12)
        assert json.loads(c["episodes"]) == w["episodes"]
    # suspect tasks with the evidence quote, shown as text, never run
    tasks = page.inner_text("#table-failures-tasks")
    assert "toy-013" in tasks and "yes" in tasks
    assert PAYLOAD in page.evaluate("() => document.body.innerText")
    page.hover("#chart-failures-categories")
    page.wait_for_timeout(100)
    assert page.evaluate("() => window.__xss") == 0 and opened.dialogs == []
    page.eval_on_selector("#sec-failures", "el => el.scrollIntoView()")
    shot = Path(__import__("os").environ.get("EVALATLAS_SHOT_DIR", tmp_path)) / "why.png"
    page.locator("#sec-failures").screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    page.close()


def test_no_findings_no_view() -> None:
    assert failure_views(None) == []
