"""``evalatlas failures``: why agents fail, from the investigator's findings.

Parse, call :func:`evalatlas.failures`, render. ``--format json`` is the result's
``to_dict()`` (``evalatlas.failures/1``: category-share rows, ``root_causes``,
``suspect_tasks``, ``infeasible_tasks``); CSV is the share rows; a table or Markdown
shows the non-zero shares, then the top root causes and the tasks judged infeasible.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from evalatlas import EvalAtlasError
from evalatlas.cli.common import FormatOption, OutputOption, console, emit, fail, open_store
from evalatlas.cli.render import Column, OutputFormat, fmt_value, render, render_result


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _share(r: dict[str, Any]) -> str:
    if r.get("share") is None:
        return "-"
    if r.get("ci_low") is None:
        return f"{_pct(r['share'])} (no interval)"
    return f"{_pct(r['share'])} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]"


SHARE_COLUMNS: list[Column] = [("group", "group"), ("category", "category"),
                 ("episodes", "episodes"), ("share", "share [95% CI]", _share),
                 ("investigated", "investigated failures"),
                 ("not_investigated", "not investigated")]
CAUSE_COLUMNS: list[Column] = [("group", "group"), ("count", "episodes"), ("cause", "root cause"),
                 ("category", "category"), ("variants", "variants")]
TASK_COLUMNS: list[Column] = [("task_id", "task"), ("benchmark", "benchmark"),
                ("infeasible", "infeasible / judged",
                 lambda r: f"{r['infeasible']} / {r['judged']}"),
                ("agents", "agents", lambda r: ", ".join(r["agents"])),
                ("suspect", "suspect", lambda r: "yes" if r["suspect"] else "no"),
                ("evidence", "evidence", lambda r: " | ".join(
                    fmt_value(e.get("evidence")) for e in r["evidence"] if e.get("evidence"))
                 or "-")]


def failures_cmd(
    ctx: typer.Context,
    by: Annotated[str, typer.Option(
        "--by", help="Group by agent (default), experiment, benchmark, model or "
        "label:<name>.")] = "agent",
    benchmark: Annotated[list[str] | None, typer.Option(
        "--benchmark", "-b", help="Only this benchmark (repeatable).")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help="Only this agent (name or id; repeatable).")] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Why agents fail: per agent, the share of investigated failures in each category
    (with intervals), the top root causes, and the tasks judged infeasible (suspect when
    most of >= 3 episodes by >= 2 agents say so). Fill findings with `investigate`."""
    from evalatlas import failures

    try:
        with open_store(ctx, read_only=True, require_data=True) as store:
            result = failures(store, by=by, benchmark=benchmark, agent=agent)
    except (EvalAtlasError, ValueError) as exc:
        fail(str(exc))
        return
    fmt = OutputFormat(fmt)
    if fmt in (OutputFormat.json, OutputFormat.csv):
        emit(render_result(result, SHARE_COLUMNS, fmt), output)
        return
    shown = []
    seen: set[str] = set()
    for r in result.rows:
        if r["episodes"]:
            shown.append(r)
        elif r["investigated"] == 0 and r["group"] not in seen:
            seen.add(r["group"])  # a group with no investigated failure: one row saying so
            shown.append(r)
    causes = [{"group": g["group"], **c} for g in result.meta["root_causes"]
              for c in g["causes"]]
    tasks = result.meta["infeasible_tasks"]
    target = console
    parts = [render(shown, SHARE_COLUMNS, fmt, schema=result.schema,
                    title=f"Failure categories by {by}", console=target)]
    if causes:
        parts.append(render(causes, CAUSE_COLUMNS, fmt, schema=result.schema,
                            title="Top root causes (near-duplicates grouped)",
                            console=target))
    parts.append(render(tasks, TASK_COLUMNS, fmt, schema=result.schema,
                        title="Tasks judged infeasible", console=target,
                        notes=result.notes if tasks else [
                            *result.notes, "No task was judged infeasible."]))
    text = "\n".join(p for p in parts if p)
    emit(text or None, output)


def register(app: typer.Typer) -> None:
    app.command("failures")(failures_cmd)
