"""``GET /report`` in a real browser: headless system Chromium (Playwright), every
request other than the page itself blocked, no console or page error, every chart drawn."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from server import EXAMPLES, Server, cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))


def test_report_served_over_http_renders_offline(tmp_path):
    from report_browser import CHARTS_JS, LAUNCH_ARGS, XSS_PROBE, find_chromium, why_no_browser

    reason = why_no_browser()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    db = tmp_path / "r.duckdb"
    cli(db, "ingest", str(EXAMPLES))
    server = Server(db, "--public-read", "--rate-limit", "off")
    url = server.url + "/report"
    blocked, errors = [], []
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=find_chromium(), headless=True,
                args=LAUNCH_ARGS, service_workers="block", accept_downloads=False)
            try:
                page = context.new_page()
                page.set_viewport_size({"width": 1280, "height": 900})
                page.add_init_script(XSS_PROBE)

                def route(r):
                    if r.request.url == url:
                        r.continue_()
                    else:
                        blocked.append(r.request.url)
                        r.abort()

                page.route("**/*", route)
                page.on("console", lambda m: errors.append(m.text) if m.type == "error"
                        else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                response = page.goto(url, wait_until="load")
                assert response.status == 200
                page.evaluate("() => window.evalatlasRenderAll().then(() => true)")
                charts = page.evaluate(CHARTS_JS)
                page.screenshot(path=str(tmp_path / "report.png"))
                text = page.inner_text("body")
                xss = page.evaluate("() => window.__xss")
            finally:
                context.close()
    finally:
        assert server.stop() == 0
    assert errors == [] and blocked == [] and xss == 0
    assert charts and all(c["rendered"] and not c["failed"] for c in charts), charts
    for agent in ("planner-sonnet", "react-gpt-4o", "tiny-mini"):
        assert agent in text
    if os.environ.get("EVALATLAS_KEEP_SCREENSHOT"):
        (Path(os.environ["EVALATLAS_KEEP_SCREENSHOT"])).write_bytes(
            (tmp_path / "report.png").read_bytes())
