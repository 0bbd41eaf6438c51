"""Assemble the report as one self-contained HTML file.

Everything is inline: the Vega runtime (:mod:`evalatlas.report.runtime`), the page's own
script and style, and the data, once. Opening the file makes no network request.

Safety: the data go into ``<script type="application/octet-stream">`` elements as
gzip-compressed JSON in base64 (:func:`packed`), text in which nothing can end the
element or read as markup; the page script inflates them and puts every string into the
page with ``textContent`` (never ``innerHTML``), and into charts only as data values.
Text written by Python into the HTML (titles, descriptions, notes, the summary) goes
through :func:`html.escape`. Names were made visible and short, and agent output cut, by
:mod:`evalatlas.report.build` (:mod:`evalatlas.report.names`). :func:`script_json` is the
escaping for JSON that must stay readable inside a ``<script>`` element.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
from importlib import resources
from typing import Any

from evalatlas.report.runtime import wrapped_runtime
from evalatlas.report.specs import all_views


def _lake_line(data: dict[str, Any]) -> str:
    """' Read from lake L at snapshot N.' for a report of a lake (issue 23), else ''."""
    lake = data.get("lake")
    if not lake:
        return ""
    return (f" Read from the lake {_e(lake['location'])} at snapshot "
            f"{_e(lake['snapshot'])} (<code>--snapshot {_e(lake['snapshot'])}</code> "
            "reproduces it).")


def _asset(name: str) -> str:
    return (resources.files("evalatlas.report") / "assets" / name).read_text(encoding="utf-8")


_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                 0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(value: Any) -> str:
    """JSON safe to put inside a ``<script>`` element (see the module docstring)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_JSON_ESCAPES)


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def page_data(data: dict[str, Any], views: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page script needs: views, and per section the compact heatmap/drill data."""
    slim_views = []
    for v in views:
        slim_views.append({k: v[k] for k in ("id", "section", "kind", "title", "spec",
                                             "rows", "columns") if k in v}
                          | {"heatmap": bool(v.get("heatmap")), "drill": bool(v.get("drill")),
                             "mirror": bool(v.get("mirror")),
                             "deoverlap": v.get("labels") == "deoverlap"})
    return {
        "title": data["title"], "group_by": data["group_by"], "views": slim_views,
        "heatmaps": {s["id"]: s["heatmap"] for s in data["sections"]},
    }


def packed(value: Any) -> str:
    """``value`` as gzip-compressed JSON in base64.

    JSON of rows compresses 5-8x; the page inflates it with the browser's own
    ``DecompressionStream``. Base64 text cannot contain anything HTML would read as
    markup, so no string in the data can end its ``<script>`` element. Data only: no
    script is ever packed.
    """
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                     allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def packed_drills(data: dict[str, Any]) -> str:
    """The drill-down episodes (most of the data: one entry per episode), packed."""
    return packed({s["id"]: s["drill"] for s in data["sections"]})


def _view_html(v: dict[str, Any]) -> str:
    notes = "".join(f"<li>{_e(n)}</li>" for n in v.get("notes") or [])
    chart = (f'<div class="chart" id="chart-{_e(v["id"])}" data-view="{_e(v["id"])}" '
             f'role="img" aria-label="{_e(v["title"])}"></div>') if v.get("spec") else ""
    picker = ""
    if v.get("drill"):
        picker = (f'<label class="picker">task <select id="pick-{_e(v["section"])}" '
                  f'data-section="{_e(v["section"])}"></select></label>'
                  f'<p class="taskname" id="task-{_e(v["section"])}"></p>')
    return (f'<section class="view view-{_e(v["kind"])}" id="{_e(v["id"])}">'
            f'<h3>{_e(v["title"])}</h3>'
            f'<p class="desc">{_e(v.get("description") or "")}</p>{picker}{chart}'
            f'<div class="table" id="table-{_e(v["id"])}" data-view="{_e(v["id"])}"></div>'
            f'<div class="downloads"><button type="button" data-download="csv" '
            f'data-view="{_e(v["id"])}">CSV</button><button type="button" '
            f'data-download="json" data-view="{_e(v["id"])}">JSON</button></div>'
            + (f'<ul class="notes">{notes}</ul>' if notes else "") + "</section>")


def _groups(data: dict[str, Any], views: list[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(anchor, heading, notes) per block of the page, in order."""
    out = []
    for s in data["sections"]:
        out.append((s["id"], s["title"], s["notes"]))
    for sid, title in (("published", "Published vs recomputed"), ("tiers", "Scylla tiers"),
                       ("speedups", "FC-Eval speedups"),
                       ("frameworks", "Framework comparison"),
                       ("failures", "Why agents fail")):
        if any(v["section"] == sid for v in views):
            out.append((sid, title, []))
    return out


def render_html(data: dict[str, Any], views: list[dict[str, Any]] | None = None) -> str:
    """The whole page as one string."""
    views = views if views is not None else all_views(data)
    blocks = []
    nav = []
    for anchor, heading, notes in _groups(data, views):
        nav.append(f'<a href="#sec-{_e(anchor)}">{_e(heading)}</a>')
        body = "".join(_view_html(v) for v in views if v["section"] == anchor)
        note_html = "".join(f"<li>{_e(n)}</li>" for n in notes)
        blocks.append(f'<section class="block" id="sec-{_e(anchor)}"><h2>{_e(heading)}</h2>'
                      + (f'<ul class="notes">{note_html}</ul>' if note_html else "")
                      + body + "</section>")
    top_notes = "".join(f"<li>{_e(n)}</li>" for n in data.get("notes") or [])
    decision = "".join(f'<li class="{_e(d["kind"])}">{_e(d["text"])}</li>'
                       for d in data.get("decision") or [])
    summary = (f'<section class="summary" id="summary"><h2>Summary</h2><ul>{decision}</ul>'
               "</section>") if decision else ""
    pct = f"{round(100 * data['confidence'])}%"
    runtime = wrapped_runtime()
    js = _asset("report.js")
    # Only the page's own two scripts may run (by hash): an injected inline script or
    # event handler would be refused even if escaping ever failed. Vega compiles its
    # expressions with Function(), hence 'unsafe-eval'; no source may be fetched.
    csp = ("default-src 'none'; script-src " + _csp_hash(runtime) + " " + _csp_hash(js)
           + " 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; "
           "connect-src 'none'; font-src 'none'; object-src 'none'; base-uri 'none'; "
           "form-action 'none'")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<title>{_e(data["title"])}</title>
<style>{_asset("report.css")}</style></head>
<body><header><h1>{_e(data["title"])}</h1>
<p class="meta">Generated {_e(data["generated"])} by evalatlas {_e(data["evalatlas_version"])};
grouped by {_e(data["group_by"])}; intervals are {_e(pct)}.{_lake_line(data)} Works offline:
everything is in this file.</p>
{f'<ul class="notes">{top_notes}</ul>' if top_notes else ""}
<nav>{"".join(nav)}</nav></header>
<main>{summary}{"".join(blocks)}</main>
<script type="application/octet-stream" id="report-data">{packed(page_data(data, views))}</script>
<script type="application/octet-stream" id="report-packed">{packed_drills(data)}</script>
<script>{runtime}</script>
<script>{js}</script>
</body></html>
"""
