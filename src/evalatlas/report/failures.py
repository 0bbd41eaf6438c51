"""The report's "Why agents fail" view: the investigator's findings per agent.

Data (:func:`failures_data`, from :func:`evalatlas.compose.failures.failures` as
``evalatlas failures``, so the numbers are the command's) and views (:func:`failure_views`): a
stacked bar per agent of the share of its investigated failures in each category, with
the table of shares and intervals; and the tasks judged infeasible (suspect first) with
the evidence quotes. Agent-produced strings (root causes, evidence) reach the page as
data only and are put in with ``textContent`` (:mod:`evalatlas.report.html`); they are cut
to :data:`TEXT_LIMIT` characters here. No findings in the store: no view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalatlas.analysis.failures import CATEGORIES
from evalatlas.compose.failures import failures
from evalatlas.report.theme import CONFIG, SCHEMA_URL
from evalatlas.store.db import StoreConnection

TEXT_LIMIT = 240
MAX_TASKS = 200
PALETTE = ["#1f5fa8", "#7aa6d6", "#e4a11b", "#b42318", "#8c6bb1", "#d96c9f", "#1a7f37",
           "#8c959f"]
"""One colour per category, in :data:`evalatlas.analysis.failures.CATEGORIES` order."""


def _cut(text: str | None, limit: int = TEXT_LIMIT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def failures_data(store: StoreConnection, experiment: Sequence[str] | None, confidence: float
                  ) -> dict[str, Any] | None:
    """The view's data: ``shares`` (rows of ``evalatlas failures --format json`` with an
    episode in their category), ``tasks`` (the tasks judged infeasible, suspect first,
    with the first evidence quote and root cause), ``notes``; None without findings."""
    result = failures(store, experiment=experiment, confidence=confidence)
    if not result.meta["investigated_episodes"]:
        return None
    shares = [r for r in result.rows if r["episodes"]]
    tasks = []
    for t in result.meta["infeasible_tasks"][:MAX_TASKS]:
        first = next((e for e in t["evidence"] if e.get("evidence")), t["evidence"][0])
        tasks.append({"task_id": t["task_id"], "benchmark": t["benchmark"],
                      "infeasible": t["infeasible"], "judged": t["judged"],
                      "agents": ", ".join(t["agents"]), "suspect": t["suspect"],
                      "evidence": _cut(first.get("evidence")),
                      "root_cause": _cut(first.get("root_cause"))})
    notes = list(result.notes)
    if len(result.meta["infeasible_tasks"]) > MAX_TASKS:
        notes.append(f"The first {MAX_TASKS} of {len(result.meta['infeasible_tasks'])} tasks "
                     "judged infeasible are shown (`evalatlas failures --format json` has "
                     "all).")
    return {"shares": shares, "tasks": tasks, "notes": notes,
            "not_investigated": sum(r["not_investigated"] for r in result.rows
                                    if r["category"] == CATEGORIES[0])}


def failure_views(data: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The views of the "Why agents fail" block (none when ``data`` is None)."""
    if not data:
        return []
    spec = {
        "$schema": SCHEMA_URL, "data": {"name": "rows"}, "width": "container",
        "height": {"step": 26}, "config": CONFIG,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "group", "type": "nominal", "title": None},
            "x": {"field": "share", "type": "quantitative", "stack": "zero",
                  "title": "share of investigated failures", "axis": {"format": ".0%"},
                  "scale": {"domain": [0, 1]}},
            "color": {"field": "category", "type": "nominal", "title": "category",
                      "scale": {"domain": list(CATEGORIES), "range": PALETTE}},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": [{"field": "group", "title": "agent"}, {"field": "category"},
                        {"field": "episodes", "type": "quantitative"},
                        {"field": "share", "type": "quantitative", "format": ".1%"},
                        {"field": "ci_low", "type": "quantitative", "format": ".1%",
                         "title": "interval low"},
                        {"field": "ci_high", "type": "quantitative", "format": ".1%",
                         "title": "interval high"}]}}
    rows = [{**r, "order": CATEGORIES.index(r["category"])} for r in data["shares"]]
    views = [{
        "id": "failures-categories", "section": "failures", "kind": "failures",
        "title": "Failure categories per agent",
        "description": "Share of each agent's investigated failed episodes in each category "
                       "of the investigator's taxonomy (docs/investigate.md), with intervals "
                       "clustered by task.",
        "spec": spec, "rows": rows,
        "columns": [{"field": "group", "title": "agent", "fmt": "name"},
                    {"field": "category", "title": "category", "fmt": "text"},
                    {"field": "episodes", "title": "episodes", "fmt": "int"},
                    {"field": "share", "title": "share [CI]", "fmt": "pct", "lo": "ci_low",
                     "hi": "ci_high"},
                    {"field": "investigated", "title": "investigated failures",
                     "fmt": "int"},
                    {"field": "not_investigated", "title": "not investigated", "fmt": "int"}],
        "notes": list(data["notes"])}]
    if data["tasks"]:
        views.append({
            "id": "failures-tasks", "section": "failures", "kind": "failures",
            "title": "Tasks judged infeasible",
            "description": "Suspect tasks (infeasible in a majority of at least 3 "
                           "investigated episodes, by at least 2 agents) first; the "
                           "evidence is a quote the investigator took from an episode.",
            "rows": data["tasks"],
            "columns": [{"field": "task_id", "title": "task", "fmt": "name"},
                        {"field": "benchmark", "title": "benchmark", "fmt": "name"},
                        {"field": "suspect", "title": "suspect", "fmt": "bool"},
                        {"field": "infeasible", "title": "infeasible", "fmt": "int"},
                        {"field": "judged", "title": "judged", "fmt": "int"},
                        {"field": "agents", "title": "agents", "fmt": "text"},
                        {"field": "evidence", "title": "evidence", "fmt": "text"},
                        {"field": "root_cause", "title": "root cause", "fmt": "text"}],
            "notes": []})
    return views
