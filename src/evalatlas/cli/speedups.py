"""``evalatlas speedups``: FC-Eval speedups and advantages per agent, task or benchmark."""

from __future__ import annotations

import math
from typing import Annotated, Any, cast

import typer

from evalatlas import SpeedupResult, speedup_detail, speedups
from evalatlas.cli.common import FormatOption, OutputOption, emit, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, fmt_value, render_result


def _adv(row: dict[str, Any]) -> str:
    text = fmt_value(row["advantage"], 4)
    lo, hi = row.get("advantage_ci_low"), row.get("advantage_ci_high")
    if lo is not None and hi is not None:
        text += f" [{fmt_value(lo, 4)}, {fmt_value(hi, 4)}]"
    return text


def _pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}%"


def _passk(row: dict[str, Any]) -> str:
    return ", ".join(f"@{k}: {_pct(v)}" for k, v in row["pass_at_k"].items()) or "-"


def speedups_cmd(
    ctx: typer.Context,
    level: Annotated[int, typer.Option("--level", "-l", min=1, max=4, help=(
        "Advantage level for the headline column and its interval: 1 module, 2 class, "
        "3 function, 4 overall."))] = 4,
    by: Annotated[str, typer.Option("--by", help="agent (agent:model) or task.")] = "agent",
    detail: Annotated[bool, typer.Option("--detail", help=(
        "Per-benchmark rows instead of the summary."))] = False,
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", "-a", help="Only these agent:model keys.")] = None,
    task: Annotated[list[str] | None, typer.Option("--task", "-t", help="Only these tasks.")
                    ] = None,
    confidence: Annotated[float, typer.Option(help="Bootstrap interval level.")] = 0.95,
    limit: Annotated[int | None, typer.Option(help="At most this many --detail rows.")
                     ] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Speedup, advantage (levels 1-4, bootstrap interval over tasks), beat-oracle share,
    success, pass@k, cost and trajectory length per agent:model (FC-Eval seed)."""
    if by not in ("agent", "task"):
        fail(f"--by must be agent or task, got {by!r}")
    with open_store(ctx, read_only=True, require_data=True) as store:
        if detail:
            try:
                found = speedup_detail(store, experiment=experiment, agent=agent, task=task,
                                       limit=limit)
            except ValueError as exc:
                fail(str(exc))
            detail_columns = [Col("agent", "agent", None, 0, "name"),
                       Col("task_id", "task", None, 0.1, "name"),
                       Col("benchmark", "benchmark", None, 0.2, "name"),
                       Col("speedup_agent", "agent/nop", None, 2),
                       Col("speedup_oracle", "oracle/nop", None, 3),
                       Col("advantage", "advantage", None, 1), Col("valid", "valid", None, 4),
                       Col("fallback_to_baseline", "fallback", None, 5),
                       Col("invalid_reason", "why invalid", None, 6)]
            emit(render_result(found, detail_columns, fmt,
                               title="FC-Eval per-benchmark speedups"),
                 output)
            return
        try:
            # --by was checked above; the API checks it too (a Literal)
            result = speedups(store, by=cast(Any, by), level=level, experiment=experiment,
                              agent=agent, task=task, confidence=confidence)
        except ValueError as exc:
            fail(str(exc))
    pct = f"{round(100 * confidence)}%"
    columns: list[Any] = [Col("task_id", "task", None, 0, "name")] if by == "task" else []
    columns += [
        Col("agent", "agent:model", None, 0.1, "name"), Col("n_tasks", "episodes", None, 3),
        Col("mean_speedup", "mean speedup", None, 4),
        Col("advantage", f"adv L{level} ({SpeedupResult.LEVEL_NAMES[level]}) [{pct} CI]", _adv, 1),
        *[Col(f"agent_advantage_level{i}", f"L{i}", None, 9 + i / 10)
          for i in (1, 2, 3, 4) if i != level],
        Col("beat_oracle_share", "beat oracle", lambda r: _pct(r["beat_oracle_share"]), 5),
        Col("success_rate", "success", lambda r: _pct(r["success_rate"]), 2),
        Col("pass_at_k", "pass@k", _passk, 7),
        Col("num_valid_benchmarks", "valid/all benchmarks",
            lambda r: f"{r['num_valid_benchmarks']:,}/{r['num_benchmarks']:,}", 8),
        Col("fallbacks", "fallbacks", None, 10),
        Col("mean_cost_per_task", "cost/task", None, 6),
        Col("cost_weighted_advantage", "adv/$", None, 11),
        Col("mean_trajectory_length", "traj len", lambda r: fmt_value(
            r["mean_trajectory_length"], 1), 12),
    ]
    emit(render_result(result, columns, fmt, title=f"FC-Eval speedups by {by}"), output)


def register(app: typer.Typer) -> None:
    app.command("speedups")(speedups_cmd)
