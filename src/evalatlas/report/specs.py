"""Views of the HTML report: Vega-Lite specs, their data rows and table columns.

Pure functions, report data (:func:`evalatlas.report.build.build_report_data`) in, plain
dicts out, so every chart can be tested as data and rendered without a browser
(``--static``, through vl-convert). A view is::

    {"id", "section", "kind", "title", "description", "spec" (or None: table only),
     "rows" (the numbers, also shown as a table and offered as CSV/JSON),
     "columns" ([{"field", "title", "fmt", ...}] for the table), "notes"}

Specs read their data from the named dataset ``rows`` (``{"data": {"name": "rows"}}``);
the page binds a view's rows to it, and :func:`with_values` inlines them for static
rendering. The heatmap is the exception in size: its rows are expanded in the page from
the compact cell codes of the report data (:func:`heatmap_rows` is the same expansion in
Python).

Agent names, task ids and every other string reach Vega only as data values (never as
field names or expressions), so nothing in them is ever evaluated.
"""

from __future__ import annotations

import copy
from typing import Any

from evalatlas.report.failures import failure_views
from evalatlas.report.theme import (
    ACCENT,
    CONFIG,
    GOOD,
    INK,
    MISSING,
    MUTED,
    NOT_SIG,
    SCHEMA_URL,
)


def _base(height: Any = None, width: Any = "container") -> dict[str, Any]:
    spec: dict[str, Any] = {"$schema": SCHEMA_URL, "data": {"name": "rows"},
                            "width": width, "config": CONFIG,
                            "autosize": {"type": "fit-x", "contains": "padding"}}
    if height is not None:
        spec["height"] = height
    return spec


def _pct(field: str, title: str) -> dict[str, Any]:
    return {"field": field, "type": "quantitative", "title": title, "format": ".1%"}


def _interval_chart(y: str, x: str, lo: str, hi: str, *, x_title: str,
                    domain: list[float] | None, fmt: str | None,
                    color: dict[str, Any] | None = None,
                    tooltip: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Point + interval rule per row, rows sorted by the point (a forest plot)."""
    axis: dict[str, Any] = {"title": x_title}
    if fmt:
        axis["format"] = fmt
    scale: dict[str, Any] = {"zero": False}
    if domain:
        scale = {"domain": domain, "clamp": True}
    spec = _base(height={"step": 24})
    spec["encoding"] = {"y": {"field": y, "type": "nominal", "sort": None,
                              "axis": {"title": None}}}
    point: dict[str, Any] = {"x": {"field": x, "type": "quantitative", "scale": scale,
                                   "axis": axis}}
    if color:
        point["color"] = color
    if tooltip:
        point["tooltip"] = tooltip
    spec["layer"] = [
        {"mark": {"type": "rule", "color": MUTED, "strokeWidth": 2, "clip": True},
         "encoding": {"x": {"field": lo, "type": "quantitative"}, "x2": {"field": hi}}},
        {"mark": {"type": "point", "filled": True, "size": 70, "color": ACCENT,
                  "opacity": 1, "clip": True},
         "encoding": point},
    ]
    return spec


# --- section views -------------------------------------------------------------------


def _fmt_k(k: str) -> str:
    return f"pass@{k}"


def leaderboard_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows: the summary's numbers under their summary names, plus the derived ones."""
    rows = []
    for b in section["leaderboard"]:
        s = b["summary"]
        tied = b["tied_with"]
        count = b.get("tied_count", len(tied))
        row = {"name": b["name"], "rank": b["rank"],
               "tied": ("" if not count else f"≈ {tied[0]}" if count == 1
                        else f"≈ {count:,} others"),
               "tied_list": ", ".join(tied) + (f" and {count - len(tied):,} more"
                                               if count > len(tied) else "")}
        if b.get("full_name"):
            row["full_name"] = b["full_name"]
        for k in ("experiments", "episodes", "tasks", "successes", "outcome_unknown_episodes",
                  "success_rate", "success_rate_ci_low", "success_rate_ci_high",
                  "success_rate_clustered_ci_low", "success_rate_clustered_ci_high",
                  "mean_reward", "mean_reward_ci_low", "mean_reward_ci_high", "errors",
                  "total_tokens", "mean_tokens", "total_cost_usd", "cost_unknown_episodes",
                  "mean_wall_time_s"):
            row[k] = s.get(k)
        row["coverage"] = b["coverage"]
        for k, v in (s.get("pass_at_k") or {}).items():
            row[f"pass_at_{k}"] = v.get("value")
            row[f"pass_at_{k}_ci_low"] = v.get("ci_low")
            row[f"pass_at_{k}_ci_high"] = v.get("ci_high")
        # the summary's pass^k (none for a group of several agents: it is defined over
        # one agent's attempts)
        for k, v in (s.get("pass_hat_k") or {}).items():
            row[f"pass_hat_{k}"] = v.get("value")
        row["cost_per_episode"] = b["cost_per_episode"]
        row["cost_ci_low"] = b["cost_ci_low"]
        row["cost_ci_high"] = b["cost_ci_high"]
        row["cost_per_success"] = ("inf" if b["cost_per_success_inf"]
                                   else b["cost_per_success"])
        row["cost_per_success_ci_low"] = b.get("cost_per_success_ci_low")
        row["cost_per_success_ci_high"] = b.get("cost_per_success_ci_high")
        row["run"] = s.get("run_status_note") or s.get("run_status") or ""
        row["published"] = _published_text(s.get("published") or [])
        row["pareto"] = b["pareto"]
        rows.append(row)
    if any(r["rank"] is not None for r in rows):
        rows.sort(key=lambda r: (r["rank"] if r["rank"] is not None else 0,
                                 -(r["success_rate"] if isinstance(r["success_rate"],
                                                                   float | int)
                                   else -1), r["name"]))
    # else (no ranks: rows of several benchmarks) summary's order: by benchmark, then rate
    return rows


def _published_text(heads: list[dict[str, Any]]) -> str:
    """The source's headline beside the success rate: ``52.8% (reason)``."""
    if not heads:
        return ""
    h = heads[0]
    text = f"{100 * h['value']:.1f}%" if isinstance(h.get("value"), float | int) else "-"
    if h.get("differs_because"):
        text += f" ({h['differs_because']})"
    return text + (f" (+{len(heads) - 1} more)" if len(heads) > 1 else "")


BOARD_ROWS = 500
"""Leaderboard rows a page holds (the best by rank); ``evalatlas summary`` has them all."""
FOREST_ROWS = 60
"""Rows of the success-interval chart (the best by success rate)."""
COST_POINTS = 200
"""Points of the cost-vs-success chart: the frontier first, then by success rate."""

_ALWAYS = ("rank", "name", "success_rate")
"""Leaderboard columns never dropped, whatever their values."""


def _same(values: list[Any]) -> bool:
    """Every value equal (numbers to 1e-12); an all-missing column counts as constant."""
    first = values[0]
    for v in values[1:]:
        if isinstance(first, float | int) and isinstance(v, float | int) \
                and not isinstance(first, bool):
            if abs(first - v) > 1e-12:
                return False
        elif v != first:
            return False
    return True


def _redundant(rows: list[dict[str, Any]], field: str, other: str) -> bool:
    """``field`` equals ``other`` in every row (pass^1 and success, mean reward of 0/1
    rewards and success): showing both says nothing twice."""
    for r in rows:
        a, b = r.get(field), r.get(other)
        if a is None and b is None:
            continue
        if not isinstance(a, float | int) or not isinstance(b, float | int) \
                or abs(a - b) > 1e-12:
            return False
    return True


def _pruned(cols: list[dict[str, Any]], rows: list[dict[str, Any]]
            ) -> tuple[list[dict[str, Any]], list[str]]:
    """Columns worth a place: a column whose every row holds the same value (or none),
    or that repeats the success rate, is dropped and named in a note (its values stay in
    the rows, the CSV and the JSON). A single row keeps every column that has a value."""
    keep, constant, repeated = [], [], []
    for c in cols:
        f = c["field"]
        values = [r.get(f) for r in rows]
        if f in _ALWAYS:
            keep.append(c)
        elif all(v is None or v == "" for v in values):
            continue  # nothing to show: no note needed
        elif f in ("pass_hat_1", "mean_reward", "pass_at_1") and \
                _redundant(rows, f, "success_rate"):
            repeated.append(c["title"])
        elif len(rows) > 1 and _same(values):
            fake = {"fmt": c["fmt"]}
            constant.append((c["title"], values[0], fake))
        else:
            keep.append(c)
    notes = []
    if constant:
        notes.append("not shown, the same in every row: " + "; ".join(
            f"{t} {_fmt_plain(v, c['fmt'])}" for t, v, c in constant))
    if repeated:
        notes.append("not shown, equal to the success rate in every row: "
                     + ", ".join(repeated))
    return keep, notes


def _fmt_plain(v: Any, fmt: str) -> str:
    """A value as the table would show it (for the note on dropped columns)."""
    if v is None or v == "":
        return "-"
    if fmt == "pct" and isinstance(v, float | int):
        return f"{100 * v:.1f}%"
    if fmt == "usd" and isinstance(v, float | int):
        return f"${v:.4g}"
    if fmt == "int" and isinstance(v, float | int):
        return f"{round(v):,}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def leaderboard_view(section: dict[str, Any], confidence: float) -> dict[str, Any]:
    rows = leaderboard_rows(section)
    pct = f"{round(100 * confidence)}%"
    # what a reader decides with first (success, its interval, cost), so that it fits
    # 1280 px without scrolling and a phone shows the success next to the name
    cols: list[dict[str, Any]] = [
        {"field": "rank", "title": "rank", "fmt": "int"},
        {"field": "name", "title": section["group_by"], "fmt": "name", "tip": "full_name"},
        {"field": "success_rate", "title": f"success [{pct} CI]", "fmt": "pct",
         "lo": "success_rate_ci_low", "hi": "success_rate_ci_high"},
        {"field": "cost_per_episode", "title": "cost / episode", "fmt": "usd",
         "lo": "cost_ci_low", "hi": "cost_ci_high"},
        {"field": "tied", "title": "tied with", "fmt": "text", "tip": "tied_list"},
    ]
    # run status and the source's headline right after the decision columns (a phone
    # still shows the success beside the name)
    if any(r["run"].startswith("incomplete") for r in rows):
        cols.insert(4, {"field": "run", "title": "run", "fmt": "text"})
    if any(r["published"] for r in rows):
        cols.insert(5 if cols[4]["field"] == "run" else 4,
                    {"field": "published", "title": "published by the source",
                     "fmt": "text"})
    ks = sorted({k[len("pass_at_"):] for r in rows for k in r
                 if k.startswith("pass_at_") and not k.endswith(("_low", "_high"))}, key=int)
    for k in ks:
        if k != "1":
            cols.append({"field": f"pass_at_{k}", "title": _fmt_k(k), "fmt": "pct",
                         "lo": f"pass_at_{k}_ci_low", "hi": f"pass_at_{k}_ci_high"})
    hats = sorted({k for r in rows for k in r if k.startswith("pass_hat_")})
    for k in hats:
        cols.append({"field": k, "title": f"pass^{k[len('pass_hat_'):]}", "fmt": "pct"})
    cols += [
        {"field": "mean_reward", "title": "mean reward [CI]", "fmt": "num3",
         "lo": "mean_reward_ci_low", "hi": "mean_reward_ci_high"},
        {"field": "cost_per_success", "title": "cost / success", "fmt": "usd",
         "lo": "cost_per_success_ci_low", "hi": "cost_per_success_ci_high"},
        {"field": "tasks", "title": "tasks", "fmt": "int"},
    ]
    if section.get("benchmark_size"):
        cols.append({"field": "coverage", "title": f"coverage of {section['benchmark_size']}",
                     "fmt": "pct"})
    cols += [
        {"field": "episodes", "title": "episodes", "fmt": "int"},
        {"field": "mean_tokens", "title": "tokens / episode", "fmt": "int"},
        {"field": "mean_wall_time_s", "title": "time / episode (s)", "fmt": "num1"},
        {"field": "errors", "title": "errors", "fmt": "int"},
    ]
    cols, dropped = _pruned(cols, rows)
    notes = ["rank = 1 + the number of rows shown to be better (Holm-adjusted paired test "
             "where compared, else non-overlapping intervals); 'tied with' counts the rows "
             "it cannot be told apart from (hover for their names)"]
    notes += dropped
    if any(r["outcome_unknown_episodes"] for r in rows):
        notes.append("episodes with an unknown outcome are left out of success rates")
    if any(r["cost_unknown_episodes"] for r in rows):
        notes.append("cost per episode is over episodes with a known cost")
    if len(rows) > BOARD_ROWS:
        notes.append(f"the {BOARD_ROWS:,} best-ranked of {len(rows):,} rows are shown; "
                     "`evalatlas summary` lists them all")
        rows = rows[:BOARD_ROWS]
    return {"id": f"{section['id']}-leaderboard", "section": section["id"],
            "kind": "leaderboard", "title": "Leaderboard",
            "description": "Sortable: click a column header.", "spec": None,
            "rows": rows, "columns": cols, "notes": notes}


def forest_view(section: dict[str, Any], confidence: float) -> dict[str, Any]:
    pct = f"{round(100 * confidence)}%"
    rows = [{"name": r["name"], "success_rate": r["success_rate"],
             "low": r["success_rate_ci_low"], "high": r["success_rate_ci_high"],
             "episodes": r["episodes"], "tied": bool(r["tied"])}
            for r in leaderboard_rows(section) if r["success_rate"] is not None]
    rows.sort(key=lambda r: (-r["success_rate"], r["name"]))
    notes = []
    if len(rows) > FOREST_ROWS:
        notes.append(f"the {FOREST_ROWS} highest success rates of {len(rows):,} are drawn")
        rows = rows[:FOREST_ROWS]
    tooltip = [{"field": "name", "type": "nominal", "title": section["group_by"]},
               _pct("success_rate", "success"), _pct("low", f"{pct} low"),
               _pct("high", f"{pct} high"),
               {"field": "episodes", "type": "quantitative", "title": "episodes"}]
    spec = _interval_chart("name", "success_rate", "low", "high",
                           x_title=f"success rate, {pct} interval", domain=[0, 1],
                           fmt="%", tooltip=tooltip)
    return {"id": f"{section['id']}-forest", "section": section["id"], "kind": "forest",
            "title": "Success rate with intervals",
            "description": f"Point: success rate; line: {pct} Wilson interval. Sorted.",
            "spec": spec, "rows": rows,
            "columns": [{"field": "name", "title": section["group_by"], "fmt": "name"},
                        {"field": "success_rate", "title": "success", "fmt": "pct"},
                        {"field": "low", "title": f"{pct} low", "fmt": "pct"},
                        {"field": "high", "title": f"{pct} high", "fmt": "pct"},
                        {"field": "episodes", "title": "episodes", "fmt": "int"}],
            "notes": notes}


def pairs_view(section: dict[str, Any], alpha: float) -> dict[str, Any] | None:
    pairs = section["pairs"]
    if len(pairs["agents"]) < 2:
        return None
    # one row per pair (the table, CSV and JSON), written with the better side as A;
    # the matrix draws both triangles from them (pair_cells, and the page's own copy)
    rows = []
    for p in pairs["rows"]:
        d = p["diff"]
        flip = d is not None and d < 0
        a, b = (p["b"], p["a"]) if flip else (p["a"], p["b"])
        lo, hi = p["diff_ci_low"], p["diff_ci_high"]
        if flip:
            d = -d
            lo, hi = (-hi if hi is not None else None), (-lo if lo is not None else None)
        verdict = ("not significant" if not p["significant"] or d is None
                   else ("row better" if d > 0 else "column better"))
        rows.append({"a": a, "b": b, "diff": d, "low": lo, "high": hi,
                     "test": p["test"], "p": p["p"], "p_holm": p["p_holm"],
                     "shared_tasks": p["shared_tasks"], "verdict": verdict,
                     "label": "" if d is None else f"{100 * d:+.0f}"})
    order = pairs["agents"]
    index = {name: i for i, name in enumerate(order)}
    for r in rows:
        r["ai"], r["bi"] = index[r["a"]], index[r["b"]]
    n = len(order)
    spec = _base(height={"step": 30 if n <= 12 else 18})
    spec["width"] = {"step": 30 if n <= 12 else 18}
    spec["autosize"] = {"type": "pad"}
    # sorted by an index field: an explicit list of names would be compiled by Vega-Lite
    # into an expression with the names in it, and data never becomes an expression
    enc_x = {"field": "b", "type": "nominal", "sort": {"field": "bi", "op": "min"},
             "axis": {"title": "column (B)", "labelAngle": -40, "labelLimit": 160,
                      "labelFontSize": 11}}
    enc_y = {"field": "a", "type": "nominal", "sort": {"field": "ai", "op": "min"},
             "axis": {"title": "row (A)", "labelLimit": 170, "labelFontSize": 11}}
    tooltip = [{"field": "a", "title": "A"}, {"field": "b", "title": "B"},
               {"field": "diff", "type": "quantitative", "title": "A - B", "format": "+.1%"},
               {"field": "low", "type": "quantitative", "title": "low", "format": "+.1%"},
               {"field": "high", "type": "quantitative", "title": "high", "format": "+.1%"},
               {"field": "test", "title": "test"},
               {"field": "p_holm", "type": "quantitative", "title": "Holm p",
                "format": ".3g"},
               {"field": "shared_tasks", "type": "quantitative", "title": "shared tasks"}]
    spec["encoding"] = {"x": enc_x, "y": enc_y}
    spec["layer"] = [
        {"mark": {"type": "rect", "stroke": "#ffffff", "strokeWidth": 1},
         "encoding": {"color": {"field": "verdict", "type": "nominal", "title": None,
                                "scale": {"domain": ["row better", "column better",
                                                     "not significant"],
                                          "range": ["#4d9a5b", "#d4765f", NOT_SIG]},
                                "legend": {"orient": "bottom", "direction": "vertical"}},
                      "tooltip": tooltip}},
    ]
    if n <= 12:
        # the number carries the same tooltip: hovering it must show the cell's numbers
        spec["layer"].append({"mark": {"type": "text", "fontSize": 10, "color": INK},
                              "encoding": {"text": {"field": "label"},
                                           "tooltip": tooltip}})
    return {"id": f"{section['id']}-pairs", "section": section["id"], "kind": "pairs",
            "title": "Paired comparisons",
            "description": ("Cell: success of the row minus the column on their shared "
                            f"tasks, in points; coloured when the Holm-adjusted p < {alpha}"
                            " (McNemar with one attempt per task, else Wilcoxon)."),
            "spec": spec, "rows": rows, "mirror": True,
            "columns": [{"field": "a", "title": "A (better or equal)", "fmt": "name"},
                        {"field": "b", "title": "B", "fmt": "name"},
                        {"field": "diff", "title": "A - B [CI]", "fmt": "pts",
                         "lo": "low", "hi": "high"},
                        {"field": "test", "title": "test", "fmt": "text"},
                        {"field": "p", "title": "p", "fmt": "p"},
                        {"field": "p_holm", "title": "Holm p", "fmt": "p"},
                        {"field": "shared_tasks", "title": "shared tasks", "fmt": "int"},
                        {"field": "verdict", "title": "verdict", "fmt": "text"}],
            "notes": list(pairs["notes"])}


def cost_view(section: dict[str, Any], confidence: float) -> dict[str, Any] | None:
    pct = f"{round(100 * confidence)}%"
    rows = []
    for r in leaderboard_rows(section):
        c = r["cost_per_episode"]
        if c is None or c <= 0 or r["success_rate"] is None:
            continue
        lo = r["cost_ci_low"]
        rows.append({"name": r["name"], "cost": c,
                     "cost_low": lo if lo is not None and lo > 0 else None,
                     "cost_high": r["cost_ci_high"], "success_rate": r["success_rate"],
                     "low": r["success_rate_ci_low"], "high": r["success_rate_ci_high"],
                     "pareto": bool(r["pareto"]),
                     "frontier": "on the frontier" if r["pareto"] else "dominated"})
    if not rows:
        return None
    notes = []
    n_all = len(rows)
    if n_all > COST_POINTS:
        rows.sort(key=lambda r: (not r["pareto"], -r["success_rate"], r["name"]))
        rows = rows[:COST_POINTS]
        notes.append(f"{COST_POINTS} of {n_all:,} agents are drawn: the frontier, then the "
                     "highest success rates")
    rows.sort(key=lambda r: r["cost"])
    # label priority: the frontier first, then by success; the page hides a label that
    # would overlap one placed before it (the point and its tooltip stay)
    for i, r in enumerate(sorted(rows, key=lambda r: (not r["pareto"], -r["success_rate"],
                                                       r["name"]))):
        r["label_order"] = i
    x = {"field": "cost", "type": "quantitative",
         "scale": {"type": "log", "domain": _log_domain(rows), "nice": False},
         "axis": {"title": "cost per episode (USD, log scale)", "format": "$.3~g"}}
    y = {"field": "success_rate", "type": "quantitative",
         "scale": {"domain": _rate_domain(rows), "nice": False},
         "axis": {"title": f"success rate ({pct} interval)", "format": "%"}}
    tooltip = [{"field": "name", "title": section["group_by"]},
               {"field": "cost", "type": "quantitative", "title": "cost / episode",
                "format": "$.4~g"},
               _pct("success_rate", "success"),
               {"field": "frontier", "title": "Pareto"}]
    spec = _base(height=320)
    has_cost_ci = any(r["cost_low"] is not None and r["cost_high"] is not None for r in rows)
    spec["layer"] = [
        {"transform": [{"filter": "datum.pareto"}],
         "mark": {"type": "line", "color": GOOD, "strokeDash": [4, 3], "interpolate":
                  "step-after", "clip": True},
         "encoding": {"x": x, "y": y, "order": {"field": "cost", "type": "quantitative"}}},
        *([{"mark": {"type": "rule", "color": MUTED, "clip": True},
            "encoding": {"x": {**x, "field": "cost_low"}, "x2": {"field": "cost_high"},
                         "y": y}}] if has_cost_ci else []),
        {"mark": {"type": "rule", "color": MUTED, "clip": True},
         "encoding": {"x": x, "y": {**y, "field": "low"}, "y2": {"field": "high"}}},
        {"mark": {"type": "point", "filled": True, "size": 80, "opacity": 1, "clip": True},
         "encoding": {"x": x, "y": y, "tooltip": tooltip,
                      "color": {"field": "frontier", "type": "nominal", "title": None,
                                "scale": {"domain": ["on the frontier", "dominated"],
                                          "range": [GOOD, ACCENT]}}}},
    ]
    # names beside the points: all of them when few, else the frontier's only; drawn in
    # label_order so that the page's de-overlap keeps the important ones
    spec["layer"].append(
        {**({} if len(rows) <= 30 else {"transform": [{"filter": "datum.pareto"}]}),
         "mark": {"type": "text", "align": "left", "dx": 7, "dy": -7, "fontSize": 10,
                  "color": INK, "limit": 130, "clip": True},
         "encoding": {"x": x, "y": y, "text": {"field": "name"},
                      "order": {"field": "label_order", "type": "quantitative"}}})
    return {"id": f"{section['id']}-cost", "section": section["id"], "kind": "cost",
            "title": "Cost vs success rate",
            "description": ("Each point an agent; lines are intervals both ways; the dashed "
                            "line joins the Pareto frontier (no other agent is cheaper and "
                            "at least as successful)."),
            "spec": spec, "rows": rows,
            "columns": [{"field": "name", "title": section["group_by"], "fmt": "name"},
                        {"field": "cost", "title": "cost / episode [CI]", "fmt": "usd",
                         "lo": "cost_low", "hi": "cost_high"},
                        {"field": "success_rate", "title": "success [CI]", "fmt": "pct",
                         "lo": "low", "hi": "high"},
                        {"field": "pareto", "title": "Pareto", "fmt": "bool"}],
            "labels": "deoverlap",
            "notes": notes + (["agents with an unknown or zero cost are not drawn (log axis)"]
                              if n_all < len(section["leaderboard"]) else [])}


def _log_domain(rows: list[dict[str, Any]]) -> list[float]:
    """The cost axis: from the smallest to the largest cost or interval end drawn, a
    little wider on each side (a log axis from 0 is impossible, a fixed one wastes room)."""
    vals = [v for r in rows for v in (r["cost"], r["cost_low"], r["cost_high"])
            if isinstance(v, float | int) and v > 0]
    lo, hi = min(vals), max(vals)
    if hi <= lo:
        return [lo / 2, hi * 2]
    pad = (hi / lo) ** 0.05
    return [lo / pad, hi * pad]


def _rate_domain(rows: list[dict[str, Any]]) -> list[float]:
    """The success axis: the data's range (rates and interval ends) padded by 5 points,
    within [0, 1]."""
    vals = [v for r in rows for v in (r["success_rate"], r["low"], r["high"])
            if isinstance(v, float | int)]
    lo, hi = min(vals), max(vals)
    return [max(0.0, lo - 0.05), min(1.0, hi + 0.05)]


def heatmap_rows(heat: dict[str, Any]) -> list[dict[str, Any]]:
    """The heatmap's cells as rows (the page does the same expansion in JavaScript).

    ``rate`` is None for a missing cell; ``n`` the attempts with a known outcome.
    """
    rows: list[dict[str, Any]] = []
    b36 = "0123456789abcdefghijklmnopqrstuvwxyz"
    for i, agent in enumerate(heat["agents"]):
        for j, task in enumerate(heat["tasks"]):
            if heat["binned"]:
                v = heat["percent"][i][j]
                rows.append({"agent": agent, "task": task, "rate": None if v < 0 else v / 100,
                             "n": None})
            else:
                code = heat["codes"][i][2 * j: 2 * j + 2]
                if code == "--":
                    rows.append({"agent": agent, "task": task, "rate": None, "n": 0})
                else:
                    c, n = b36.index(code[0]), b36.index(code[1])
                    rows.append({"agent": agent, "task": task, "rate": c / n, "n": n})
    return rows


def heatmap_view(section: dict[str, Any]) -> dict[str, Any] | None:
    heat = section["heatmap"]
    if not heat["agents"] or not heat["tasks"]:
        return None
    n_t, n_a = len(heat["tasks"]), len(heat["agents"])
    x_axis: dict[str, Any] = {"title": f"task ({heat['n_tasks']:,}, by {heat['ordered_by']}"
                              + (", binned" if heat["binned"] else "") + ")"}
    if n_t > 40:
        x_axis.update({"labels": False, "ticks": False})
    else:
        x_axis.update({"labelAngle": -90, "labelLimit": 90, "labelOverlap": "greedy"})
    spec = _base(height={"step": 16 if n_a <= 50 else max(2, 800 // n_a)})
    enc = {"x": {"field": "task", "type": "nominal", "sort": None, "axis": x_axis},
           "y": {"field": "agent", "type": "nominal", "sort": None,
                 "axis": {"title": None, "labels": n_a <= 120}}}
    tooltip = [{"field": "agent", "title": section["group_by"]},
               {"field": "task", "title": "task"},
               {"field": "rate", "type": "quantitative", "title": "success", "format": ".0%"},
               {"field": "n", "type": "quantitative", "title": "attempts (known)"}]
    spec["encoding"] = enc
    spec["layer"] = [
        {"transform": [{"filter": "datum.rate == null"}],
         "mark": {"type": "rect", "color": MISSING},
         "encoding": {"tooltip": tooltip[:2]}},
        {"transform": [{"filter": "datum.rate != null"}],
         "mark": {"type": "rect"},
         "encoding": {"color": {"field": "rate", "type": "quantitative", "title": "success",
                                "scale": {"domain": [0, 1], "range": ["#c94a3a", "#f4e9c8",
                                                                     "#1f6f43"]},
                                "legend": {"format": "%", "gradientLength": 160}},
                      "tooltip": tooltip}},
    ]
    if any(heat.get("drift") or []):
        spec["layer"].append({
            "transform": [{"filter": "datum.drift"}],
            "mark": {"type": "rect", "fill": None, "stroke": "#6f42c1", "strokeWidth": 2},
            "encoding": {}})
    notes = list(heat["notes"])
    notes.append("grey cells are missing (never run, or every outcome unknown), not failures")
    if any(heat.get("drift") or []):
        notes.append("purple outlines mark tasks flagged as drifted by the ATLAS fit")
    return {"id": f"{section['id']}-heatmap", "section": section["id"], "kind": "heatmap",
            "title": "Agent x task", "spec": spec, "rows": None, "heatmap": True,
            "description": "Success per agent and task (share of attempts); click a cell "
                           "to open the task below. The table has one row per task; the "
                           "downloads have every cell.",
            "columns": [{"field": "task", "title": "task", "fmt": "task"},
                        {"field": "rate", "title": "mean success over agents", "fmt": "pct"},
                        {"field": "known", "title": "agents with an outcome", "fmt": "int"},
                        {"field": "missing", "title": "missing cells", "fmt": "int"},
                        {"field": "drift", "title": "drift", "fmt": "bool"}],
            "notes": notes}


def ability_view(section: dict[str, Any]) -> dict[str, Any] | None:
    rows = section.get("ability")
    if not rows:
        return None
    spec = _interval_chart("name", "ability", "low", "high", x_title="ATLAS ability (logit)",
                           domain=None, fmt=None)
    return {"id": f"{section['id']}-ability", "section": section["id"], "kind": "ability",
            "title": "ATLAS ability", "description": "Ability estimate with its interval.",
            "spec": spec, "rows": rows,
            "columns": [{"field": "name", "title": section["group_by"], "fmt": "name"},
                        {"field": "ability", "title": "ability [CI]", "fmt": "num3",
                         "lo": "low", "hi": "high"}], "notes": []}


def drill_view(section: dict[str, Any]) -> dict[str, Any] | None:
    drill = section["drill"]
    if not drill["tasks"]:
        return None
    spec = _base(height={"step": 18})
    spec["width"] = {"step": 26}
    spec["autosize"] = {"type": "pad"}
    spec["encoding"] = {
        "x": {"field": "attempt", "type": "ordinal", "title": "attempt"},
        "y": {"field": "agent", "type": "nominal", "sort": None, "title": None},
    }
    spec["mark"] = {"type": "rect", "stroke": "#ffffff"}
    spec["encoding"]["color"] = {
        "field": "outcome", "type": "nominal", "title": None,
        "scale": {"domain": ["success", "failure", "unknown"],
                  "range": ["#1f6f43", "#c94a3a", MISSING]}}
    spec["encoding"]["tooltip"] = [{"field": "agent", "title": section["group_by"]},
                                   {"field": "attempt"}, {"field": "outcome"},
                                   {"field": "error"}]
    return {"id": f"{section['id']}-drill", "section": section["id"], "kind": "drill",
            "title": "Per task", "spec": spec, "rows": None, "drill": True,
            "description": "Outcome per agent and attempt of one task, with what the "
                           "sample was asked, expected and answered where the source kept "
                           "it (text shown escaped and cut at "
                           f"{drill['text_limit']} characters).",
            "columns": [{"field": "agent", "title": section["group_by"], "fmt": "name"},
                        {"field": "attempt", "title": "attempt", "fmt": "int"},
                        {"field": "outcome", "title": "outcome", "fmt": "text"},
                        {"field": "reward", "title": "reward", "fmt": "num3"},
                        {"field": "error", "title": "error", "fmt": "text"},
                        {"field": "tokens", "title": "tokens", "fmt": "int"},
                        {"field": "cost", "title": "cost", "fmt": "usd"},
                        {"field": "time", "title": "time (s)", "fmt": "num1"},
                        {"field": "source", "title": "source", "fmt": "path"},
                        {"field": "text", "title": "output / error (cut)", "fmt": "mono"},
                        {"field": "target", "title": "target (cut)", "fmt": "mono"},
                        {"field": "input", "title": "input (cut)", "fmt": "mono"}],
            "notes": list(drill["notes"])}


# --- benchmark-specific views --------------------------------------------------------


def tier_views(tiers: dict[str, Any] | None, confidence: float) -> list[dict[str, Any]]:
    if not tiers:
        return []
    pct = f"{round(100 * confidence)}%"
    rows = [{"tier": r["tier"], "runs": r["runs"], "pass_rate": r["pass_rate"],
             "low": r["pass_rate_ci_low"], "high": r["pass_rate_ci_high"],
             "cost_of_pass": r["cost_of_pass_usd"] if isinstance(
                 r["cost_of_pass_usd"], float | int) else None,
             "mean_cost": r["mean_cost_usd"], "grade": r["grade"],
             "uplift": r["uplift"], "uplift_low": r["uplift_ci_low"],
             "uplift_high": r["uplift_ci_high"], "order": i}
            for i, r in enumerate(tiers["rows"])]
    order = {"field": "order", "op": "min"}
    spec = _base(height={"step": 24})
    y = {"field": "tier", "type": "nominal", "sort": order, "axis": {"title": None}}
    x = {"field": "pass_rate", "type": "quantitative", "scale": {"domain": [0, 1]},
         "axis": {"title": f"pass rate, {pct} interval", "format": "%"}}
    spec["layer"] = [
        {"mark": {"type": "rule", "color": MUTED, "strokeWidth": 2},
         "encoding": {"y": y, "x": {**x, "field": "low"}, "x2": {"field": "high"}}},
        {"mark": {"type": "point", "filled": True, "size": 70, "color": ACCENT, "opacity": 1},
         "encoding": {"y": y, "x": x,
                      "tooltip": [{"field": "tier"}, _pct("pass_rate", "pass rate"),
                                  {"field": "runs", "type": "quantitative"}]}},
    ]
    views = [{"id": "tiers-pass", "section": "tiers", "kind": "tiers", "title":
              "Tiers: pass rate", "description": "ProjectScylla tiers: pass rate over runs "
              f"with a {pct} Wilson interval; cost of pass; uplift against the baseline.",
              "spec": spec, "rows": rows,
              "columns": [{"field": "tier", "title": "tier", "fmt": "name"},
                          {"field": "runs", "title": "runs", "fmt": "int"},
                          {"field": "pass_rate", "title": "pass rate [CI]", "fmt": "pct",
                           "lo": "low", "hi": "high"},
                          {"field": "mean_cost", "title": "mean cost", "fmt": "usd"},
                          {"field": "cost_of_pass", "title": "cost of pass", "fmt": "usd"},
                          {"field": "grade", "title": "grade", "fmt": "text"},
                          {"field": "uplift", "title": "uplift [CI]", "fmt": "pct",
                           "lo": "uplift_low", "hi": "uplift_high"}],
              "notes": list(tiers.get("notes") or [])}]
    cop = [r for r in rows if r["cost_of_pass"] is not None]
    if cop:
        spec2 = _base(height={"step": 24})
        spec2["mark"] = {"type": "bar", "color": ACCENT}
        spec2["encoding"] = {"y": y, "x": {"field": "cost_of_pass", "type": "quantitative",
                                           "axis": {"title": "cost of pass (USD)",
                                                    "format": "$.3~g"}},
                             "tooltip": [{"field": "tier"},
                                         {"field": "cost_of_pass", "type": "quantitative",
                                          "format": "$.4~g", "title": "cost of pass"}]}
        views.append({"id": "tiers-cost", "section": "tiers", "kind": "tiers",
                      "title": "Tiers: cost of pass", "description":
                      "Mean cost per run divided by the pass rate.", "spec": spec2,
                      "rows": cop, "columns": views[0]["columns"], "notes": []})
    up = [r for r in rows if r["uplift"] is not None]
    if up and any(r["uplift_low"] is not None for r in up):
        spec3 = _interval_chart("tier", "uplift", "uplift_low", "uplift_high",
                                x_title="uplift of the median composite vs baseline",
                                domain=None, fmt="%")
        spec3["encoding"]["y"]["sort"] = order
        views.append({"id": "tiers-uplift", "section": "tiers", "kind": "tiers",
                      "title": "Tiers: uplift", "description": "With a bootstrap interval.",
                      "spec": spec3, "rows": up, "columns": views[0]["columns"],
                      "notes": []})
    return views


def speedup_views(speedups: dict[str, Any] | None, confidence: float
                  ) -> list[dict[str, Any]]:
    if not speedups:
        return []
    pct = f"{round(100 * confidence)}%"
    rows = [{"agent": r["agent"], "advantage": r.get("advantage"),
             "low": r.get("advantage_ci_low"), "high": r.get("advantage_ci_high"),
             "success_rate": r.get("success_rate"), "tasks": r.get("tasks"),
             "beat_oracle_share": r.get("beat_oracle_share")} for r in speedups["rows"]]
    rows = [r for r in rows if isinstance(r["advantage"], float | int)]
    views = []
    if rows:
        rows.sort(key=lambda r: -r["advantage"])
        spec = _interval_chart("agent", "advantage", "low", "high",
                               x_title=f"mean advantage, {pct} interval", domain=None,
                               fmt=None)
        views.append({"id": "fc-advantage", "section": "speedups", "kind": "speedups",
                      "title": "FC-Eval: advantage", "description":
                      "Mean agent advantage over the oracle per task, with a bootstrap "
                      "interval over tasks.", "spec": spec, "rows": rows,
                      "columns": [{"field": "agent", "title": "agent", "fmt": "name"},
                                  {"field": "advantage", "title": "advantage [CI]",
                                   "fmt": "num3", "lo": "low", "hi": "high"},
                                  {"field": "success_rate", "title": "success rate",
                                   "fmt": "pct"},
                                  {"field": "beat_oracle_share", "title": "beat oracle",
                                   "fmt": "pct"},
                                  {"field": "tasks", "title": "tasks", "fmt": "int"}],
                      "notes": []})
    levels = [r for r in speedups["levels"] if r["advantage"] is not None]
    if levels:
        spec2 = _base(height={"step": 14})
        spec2["mark"] = {"type": "bar"}
        spec2["encoding"] = {
            "y": {"field": "agent", "type": "nominal", "title": None},
            "yOffset": {"field": "level", "type": "ordinal"},
            "x": {"field": "advantage", "type": "quantitative", "title": "mean advantage"},
            "color": {"field": "level", "type": "ordinal", "title": "level",
                      "scale": {"scheme": "blues"}},
            "tooltip": [{"field": "agent"}, {"field": "level"},
                        {"field": "advantage", "type": "quantitative", "format": ".4g"}]}
        views.append({"id": "fc-levels", "section": "speedups", "kind": "speedups",
                      "title": "FC-Eval: advantage by level", "description":
                      "Level 1 (module) to 4 (function + parameters).", "spec": spec2,
                      "rows": levels,
                      "columns": [{"field": "agent", "title": "agent", "fmt": "name"},
                                  {"field": "level", "title": "level", "fmt": "int"},
                                  {"field": "advantage", "title": "advantage",
                                   "fmt": "num3"}], "notes": []})
    return views


def framework_views(frameworks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    views: list[dict[str, Any]] = []
    for n, fw in enumerate(frameworks or []):
        rows = []
        for f in fw["frameworks"]:
            for k in ("capability", "efficiency", "developer_experience"):
                if isinstance(f.get(k), float | int):
                    rows.append({"framework": f["name"], "dimension": k.replace("_", " "),
                                 "score": f[k]})
        title = f"{fw['scenario']} ({fw['mode']})"
        if rows:
            spec = _base(height={"step": 14})
            spec["mark"] = {"type": "bar"}
            spec["encoding"] = {
                "y": {"field": "framework", "type": "nominal", "title": None},
                "yOffset": {"field": "dimension", "type": "nominal"},
                "x": {"field": "score", "type": "quantitative", "title": "score"},
                "color": {"field": "dimension", "type": "nominal", "title": None},
                "tooltip": [{"field": "framework"}, {"field": "dimension"},
                            {"field": "score", "type": "quantitative", "format": ".3g"}]}
            views.append({"id": f"fw{n}-scorecard", "section": "frameworks",
                          "kind": "frameworks", "title": f"Scorecard: {title}",
                          "description": "Derived scores, decision aids rather than one "
                          "winner metric.", "spec": spec, "rows": rows,
                          "columns": [{"field": "framework", "title": "framework",
                                       "fmt": "name"},
                                      {"field": "dimension", "title": "dimension",
                                       "fmt": "text"},
                                      {"field": "score", "title": "score", "fmt": "num3"}],
                          "notes": list(fw.get("notes") or [])})
        lat = []
        for f in fw["frameworks"]:
            for q in ("p50", "p95"):
                v = f.get(f"latency_{q}")
                if isinstance(v, float | int):
                    lat.append({"framework": f["name"], "percentile": q, "latency_s": v})
        if lat:
            spec2 = _base(height={"step": 14})
            spec2["mark"] = {"type": "bar"}
            spec2["encoding"] = {
                "y": {"field": "framework", "type": "nominal", "title": None},
                "yOffset": {"field": "percentile", "type": "nominal"},
                "x": {"field": "latency_s", "type": "quantitative", "title": "latency (s)"},
                "color": {"field": "percentile", "type": "nominal", "title": None,
                          "scale": {"range": ["#7aa6d6", ACCENT]}},
                "tooltip": [{"field": "framework"}, {"field": "percentile"},
                            {"field": "latency_s", "type": "quantitative", "format": ".3g"}]}
            views.append({"id": f"fw{n}-latency", "section": "frameworks",
                          "kind": "frameworks", "title": f"Latency: {title}",
                          "description": "p50 and p95 per question.", "spec": spec2,
                          "rows": lat,
                          "columns": [{"field": "framework", "title": "framework",
                                       "fmt": "name"},
                                      {"field": "percentile", "title": "percentile",
                                       "fmt": "text"},
                                      {"field": "latency_s", "title": "latency (s)",
                                       "fmt": "num3"}], "notes": []})
    return views


# --- all views -----------------------------------------------------------------------


def section_views(section: dict[str, Any], confidence: float, alpha: float
                  ) -> list[dict[str, Any]]:
    views = [leaderboard_view(section, confidence), forest_view(section, confidence),
             pairs_view(section, alpha), cost_view(section, confidence),
             heatmap_view(section), ability_view(section), drill_view(section)]
    return [v for v in views if v is not None]


def published_views(published: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The numbers the sources published next to evalatlas's recomputation of them from
    the same source's per-sample data (``evalatlas summary``'s second table)."""
    if not published:
        return []
    rows = []
    for r in published:
        ok = r.get("agrees")
        rows.append({
            "experiment": r.get("experiment"), "source": r.get("source"),
            "board": r.get("board") if "leaderboard" in str(r.get("source") or "") else None,
            "metric": f"{r.get('score') or ''} {r.get('metric') or ''}".strip(),
            "published": r.get("published"), "evalatlas": r.get("evalatlas"),
            "n": f"{r.get('n_published') if r.get('n_published') is not None else '-'} / "
                 f"{r.get('n_evalatlas') if r.get('n_evalatlas') is not None else '-'}",
            "agrees": "yes" if ok else "NO" if ok is False else "-",
            "note": r.get("note") or ""})
    rows.sort(key=lambda r: (r["agrees"] != "NO", str(r["experiment"])))
    bad = sum(1 for r in rows if r["agrees"] == "NO")
    return [{"id": "published-check", "section": "published", "kind": "published",
             "title": f"Published by the source vs recomputed ({len(rows)} numbers)",
             "description": "Each number a source published about its own run, recomputed "
             "by evalatlas from that source's per-sample results; disagreements first.",
             "spec": None, "rows": rows,
             "columns": [{"field": "experiment", "title": "experiment", "fmt": "name"},
                         {"field": "board", "title": "board", "fmt": "name"},
                         {"field": "metric", "title": "metric", "fmt": "text"},
                         {"field": "published", "title": "published", "fmt": "num3"},
                         {"field": "evalatlas", "title": "recomputed", "fmt": "num3"},
                         {"field": "n", "title": "n (source / here)", "fmt": "text"},
                         {"field": "agrees", "title": "agrees", "fmt": "text"},
                         {"field": "note", "title": "note", "fmt": "text"}],
             "notes": [f"{bad} of {len(rows)} published numbers differ from the "
                       "recomputation"] if bad else []}]


def all_views(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every view of the report, in page order."""
    conf, alpha = data["confidence"], data["alpha"]
    views: list[dict[str, Any]] = []
    for s in data["sections"]:
        views += section_views(s, conf, alpha)
    views += published_views(data.get("published"))
    views += tier_views(data.get("tiers"), conf)
    views += speedup_views(data.get("speedups"), conf)
    views += framework_views(data.get("frameworks"))

    views += failure_views(data.get("failures"))
    return views


def pair_cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The matrix cells of the paired view: each pair's row, and its mirror (B - A, the
    interval negated, the verdict seen from the other side). The page does the same."""
    out = []
    other = {"row better": "column better", "column better": "row better"}
    for r in rows:
        out.append(r)
        d, lo, hi = r["diff"], r["low"], r["high"]
        out.append(r | {
            "a": r["b"], "b": r["a"], "ai": r["bi"], "bi": r["ai"],
            "diff": None if d is None else -d, "low": None if hi is None else -hi,
            "high": None if lo is None else -lo,
            "verdict": other.get(r["verdict"], r["verdict"]),
            "label": "" if d is None else f"{-100 * d:+.0f}"})
    return out


def chart_rows(view: dict[str, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows a view's chart draws (its table rows, but both triangles of a matrix)."""
    rows = view_rows(view, data)
    return pair_cells(rows) if view.get("mirror") else rows


def view_rows(view: dict[str, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    """A view's rows, expanding the heatmap (and the first drill-down task) in Python."""
    if view.get("heatmap"):
        section = next(s for s in data["sections"] if s["id"] == view["section"])
        return heatmap_rows(section["heatmap"])
    if view.get("drill"):
        section = next(s for s in data["sections"] if s["id"] == view["section"])
        return drill_rows(section["drill"], 0)
    return view["rows"] or []


def drill_rows(drill: dict[str, Any], task: int) -> list[dict[str, Any]]:
    """Episode rows of one drill-down task (same expansion as the page's).

    Episodes are stored sorted by task (``offsets``); outcome 0/1/2 is
    failure/success/unknown; error, source and text are 0 (none) or 1 + an index into
    their dictionaries.
    """
    ep = drill["episodes"]

    def lookup(kind: str, code: int) -> str | None:
        return drill.get(kind, [])[code - 1] if code else None

    out = []
    for i in range(drill["offsets"][task], drill["offsets"][task + 1]):
        out.append({
            "agent": drill["groups"][ep["a"][i]], "attempt": ep["n"][i],
            "outcome": ("failure", "success", "unknown")[ep["o"][i]],
            "reward": ep["r"][i], "error": lookup("errors", ep["e"][i]),
            "tokens": ep["k"][i], "cost": ep["c"][i], "time": ep["w"][i],
            "source": lookup("sources", ep["s"][i]), "text": lookup("texts", ep["x"][i]),
            "input": lookup("inputs", ep["p"][i]) if "p" in ep else None,
            "target": lookup("targets", ep["g"][i]) if "g" in ep else None})
    return out


def with_values(spec: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``spec`` with its rows inlined (for vl-convert and the JSON output)."""
    out = copy.deepcopy(spec)
    out["data"] = {"values": rows}
    return out
