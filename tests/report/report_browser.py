"""Open a report in headless Chromium with the network blocked and say what happened.

Chromium comes from the system (Debian's ``chromium`` package; ``.ci/run`` installs it);
Playwright only drives it (``executable_path``), its own browser download is never used.
``EVALATLAS_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-default-apps", "--disable-extensions"]

XSS_PROBE = """
window.__xss = 0;
window.alert = window.confirm = window.prompt = function () { window.__xss += 1; };
"""
"""Installed before the page's scripts: any payload in the corpus bumps ``__xss``."""


def find_chromium() -> str | None:
    env = os.environ.get("EVALATLAS_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def why_no_browser() -> str | None:
    """None when the browser tests can run, else the reason they are skipped."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("browser tests skipped: Python playwright is not installed "
                "(pip install -e '.[dev]')")
    if find_chromium() is None:
        return ("browser tests skipped: no Chromium found (apt-get install chromium, or set "
                "EVALATLAS_CHROMIUM); .ci/run installs it so CI always runs them")
    return None


@dataclass
class Opened:
    """What one page load did."""

    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)
    first_render_s: float = 0.0
    all_render_s: float = 0.0
    xss: int = 0
    page: Any = None


CHARTS_JS = """
() => Array.from(document.querySelectorAll('.chart')).map(el => ({
  id: el.id,
  rendered: el.getAttribute('data-rendered') === '1',
  failed: el.classList.contains('failed'),
  svg_marks: el.querySelectorAll('svg g.mark-rect path, svg g.mark-symbol path, '
    + 'svg g.mark-rule line, svg g.mark-line path, svg g.mark-text text').length,
  canvas: (() => { const c = el.querySelector('canvas'); return c ? c.width * c.height : 0; })(),
}))
"""


def open_report(context: Any, path: Path, *, width: int = 1280, height: int = 900,
                render_all: bool = True) -> Opened:
    """Load ``path`` from file://, block and record every other request, draw every chart."""
    out = Opened()
    url = path.resolve().as_uri()
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(XSS_PROBE)

    def route(r: Any) -> None:
        if r.request.url == url:
            r.continue_()
        else:
            out.blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("request", lambda req: out.requests.append(req.url))
    page.on("console", lambda m: out.console_errors.append(m.text) if m.type == "error"
            else None)
    page.on("pageerror", lambda e: out.page_errors.append(str(e)))

    def dialog(d: Any) -> None:
        out.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    t0 = time.perf_counter()
    page.goto(url, wait_until="load")
    # what is on screen first: every table and chart of the views in the first viewport
    page.wait_for_function("""() => Array.from(document.querySelectorAll('section.view'))
        .filter(v => v.getBoundingClientRect().top < window.innerHeight)
        .every(v => {
          const c = v.querySelector('.chart'), t = v.querySelector('.table');
          return (!c || c.getAttribute('data-rendered') || c.classList.contains('failed'))
            && (!t || t.querySelector('table'));
        })""", timeout=30_000)
    out.first_render_s = time.perf_counter() - t0
    if render_all:
        page.evaluate("() => window.evalatlasRenderAll().then(() => true)")
        out.all_render_s = time.perf_counter() - t0
    out.charts = page.evaluate(CHARTS_JS)
    out.xss = int(page.evaluate("() => window.__xss"))
    out.page = page
    return out


def leaderboard(page: Any, view_id: str) -> list[dict[str, Any]]:
    """The rendered leaderboard table: per row, field -> raw value (``data-value``)."""
    return page.evaluate("""(id) => {
      const box = document.getElementById('table-' + id);
      return Array.from(box.querySelectorAll('tbody tr')).map(tr => {
        const row = {};
        tr.querySelectorAll('td').forEach(td => {
          const v = td.getAttribute('data-value');
          row[td.getAttribute('data-field')] = v === '' ? null : JSON.parse(v);
          row['text:' + td.getAttribute('data-field')] = td.textContent;
        });
        return row;
      });
    }""", view_id)
