"""Benchmark: the HTML report's size, generation time and first render.

Stores are written straight into DuckDB (ingest has its own benchmark); P(success) =
sigmoid(ability - difficulty) from deterministic hashes; ~3% errors; every episode has
tokens, a cost and a short output text.

- small: 50 agents x 500 tasks x 1 attempt (targets: file <= 1.5 MiB, first render
  <= 2 s in headless Chromium);
- large: 200 agents x 5,000 tasks x 1 attempt = 1,000,000 episodes (targets: file
  <= 10 MB, generation <= 10 s).

Baselines timed in the same run: ``evalatlas.summary`` on the same store (the least any
report must compute), and for rendering, a page holding only the Vega runtime and one
trivial chart (what loading the runtime costs). The runtime bundle cache is warm (built
once before timing; a cold build adds 3-12 s once per vl-convert version).

Run: ``.venv/bin/python benchmarks/bench_report.py [--repeats 3] [--skip-large]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from evalatlas import api
from evalatlas.report.build import ReportOptions, build_report_data
from evalatlas.report.html import render_html, script_json
from evalatlas.report.runtime import wrapped_runtime
from evalatlas.report.specs import all_views
from evalatlas.store.db import StoreConnection

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "report"))
from synthetic import build_store  # noqa: E402  (the stores the report's scale tests use)


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def time_generation(db: Path, out: Path, repeats: int) -> tuple[list[float], list[float]]:
    """(report seconds, summary-baseline seconds) per repeat."""
    rep, base = [], []
    for _ in range(repeats):
        with StoreConnection(db, read_only=True) as store:
            t0 = time.perf_counter()
            api.summary(store, "agent")
            base.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            data = build_report_data(store, ReportOptions())
            out.write_text(render_html(data, all_views(data)), encoding="utf-8")
            rep.append(time.perf_counter() - t0)
    return rep, base


def runtime_only_page(path: Path) -> None:
    """Baseline page: the runtime and one three-point chart, drawn on load."""
    spec = {"data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 3}, {"x": 3, "y": 1}]},
            "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"},
                                          "y": {"field": "y", "type": "quantitative"}}}
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        "<div class='chart' id='c'></div><script>window.evalatlasRenderAll = "
        "function () { return Promise.resolve(); };</script>"
        f"<script>{wrapped_runtime()}</script><script>vegaEmbed('#c', {script_json(spec)},"
        "{actions:false}).then(function(){document.getElementById('c')"
        ".setAttribute('data-rendered','1')});</script></body></html>", encoding="utf-8")


def time_render(html: Path, repeats: int) -> tuple[list[float], list[float], int]:
    from playwright.sync_api import sync_playwright
    from report_browser import LAUNCH_ARGS, find_chromium, open_report

    chromium = find_chromium()
    if chromium is None:
        raise SystemExit("no Chromium found (apt-get install chromium)")
    first, full = [], []
    errors = 0
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=chromium,
                                                   headless=True, args=LAUNCH_ARGS)
        open_report(ctx, html).page.close()  # warm-up: disk cache, fonts
        for _ in range(repeats):
            o = open_report(ctx, html)
            first.append(o.first_render_s)
            full.append(o.all_render_s)
            errors += len(o.console_errors) + len(o.page_errors) + len(o.blocked)
            o.page.close()
        ctx.close()
    return first, full, errors


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-large", action="store_true")
    args = ap.parse_args()
    wrapped_runtime()  # warm the bundle cache
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        base_page = d / "runtime-only.html"
        runtime_only_page(base_page)
        cases = [("small", 50, 500)] + ([] if args.skip_large else [("large", 200, 5000)])
        for name, n_a, n_t in cases:
            db = d / f"{name}.duckdb"
            t0 = time.perf_counter()
            build_store(db, n_a, n_t)
            print(f"{name}: {n_a} agents x {n_t} tasks x 1 = {n_a * n_t:,} episodes "
                  f"(store built in {time.perf_counter() - t0:.1f} s)")
            html = d / f"{name}.html"
            rep, base = time_generation(db, html, args.repeats)
            size = html.stat().st_size
            print(f"  report generation: median {_median(rep):.2f} s "
                  f"(runs {', '.join(f'{x:.2f}' for x in rep)}); baseline api.summary "
                  f"{_median(base):.2f} s; ratio {_median(rep) / _median(base):.1f}x")
            print(f"  file: {size:,} bytes = {size / 2**20:.2f} MiB ({size / 1e6:.2f} MB)")
            first, full, errors = time_render(html, args.repeats)
            bf, _, _ = time_render(base_page, args.repeats)
            print(f"  first render (charts in the first viewport drawn): median "
                  f"{_median(first):.2f} s; every chart drawn: median {_median(full):.2f} s; "
                  f"baseline runtime-only page {_median(bf):.2f} s "
                  f"(ratio {_median(first) / _median(bf):.1f}x); console errors {errors}")


if __name__ == "__main__":
    main()
