"""``evalatlas atlas ...``: the agent x task matrix, IRT fits and cheap evaluation.

Parse, call :mod:`evalatlas.atlas` (``ea.atlas``), render. JSON output is the result's
``to_dict()``: ``AtlasFit`` (fit), ``AbilitiesResult`` / ``ItemsResult`` (abilities,
items), ``DriftResult``, ``NextTasksResult``, ``AgentEstimate``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from evalatlas import EvalAtlasError
from evalatlas.cli.common import (
    FormatOption,
    OutputOption,
    WrittenFormat,
    WrittenFormatOption,
    console,
    db_path,
    emit,
    emit_written,
    fail,
)
from evalatlas.cli.render import (
    Column,
    OutputFormat,
    fmt_value,
    render,
    render_result,
    with_lake_meta,
)

atlas_app = typer.Typer(
    help="Agent x task matrix: item response theory, drift, cheap evaluation.",
    no_args_is_help=True)

BenchmarkOption = Annotated[list[str] | None, typer.Option(
    "--benchmark", "-b", help="Only this benchmark (repeatable). Default: all.")]
ModelOption = Annotated[str, typer.Option("--model", help="1pl, 2pl or mf:R (rank R).")]
CellOption = Annotated[str, typer.Option(
    "--cell", help="success (k of n attempts) or reward (in [0,1], logit link).")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the held-out split.")]
NewAgentOption = Annotated[bool, typer.Option(
    "--new-agent", help="AGENT is not in the store: a cold start (population prior) "
    "instead of an error for an unknown name.")]

T = TypeVar("T")


def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except (EvalAtlasError, ValueError) as exc:
        # the API names its argument; here the user types the flag
        fail(str(exc).replace("(new_agent=True)", "(--new-agent)"))
        raise  # unreachable


def _ci(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if v is None:
        return "-"
    if row.get(key + "_ci_low") is None and row.get(key + "_ci_high") is None:
        return f"{fmt_value(v)} (no interval)"
    return (f"{fmt_value(v)} [{fmt_value(row.get(key + '_ci_low'))}, "
            f"{fmt_value(row.get(key + '_ci_high'))}]")


AGENT_COLUMNS: list[Column] = [
    ("agent", "agent"), ("ability", "ability [95% CI]", lambda r: _ci(r, "ability")),
    ("ability_se", "se"), ("tasks_observed", "tasks"),
    ("flags", "flags", lambda r: ", ".join(r.get("flags") or []) or "-"),
]
ITEM_COLUMNS: list[Column] = [
    ("benchmark", "benchmark"), ("task_id", "task"),
    ("task_version_hash", "version", lambda r: (r.get("task_version_hash") or "-")[:12]),
    ("difficulty", "difficulty [95% CI]", lambda r: _ci(r, "difficulty")),
    ("discrimination", "discrimination [95% CI]", lambda r: _ci(r, "discrimination")),
    ("agents_observed", "agents"), ("success_rate_observed", "observed success"),
    ("flags", "flags", lambda r: ", ".join(r.get("flags") or []) or "-"),
]


@atlas_app.command("fit")
def fit_cmd(
    ctx: typer.Context,
    benchmark: BenchmarkOption = None,
    model: ModelOption = "2pl",
    cell: CellOption = "success",
    holdout: Annotated[float, typer.Option(
        "--holdout", help="Share of observed cells held out of a second fit that scores "
        "the diagnostics; the stored fit uses every cell.")] = 0.1,
    seed: SeedOption = 0,
    drift: Annotated[str, typer.Option(
        "--drift", help="split: each task version its own item; merge; refuse: fail "
        "when a task has two versions.")] = "split",
    propensity: Annotated[bool, typer.Option(
        "--propensity", help="Inverse-propensity weights (selection on difficulty).")] = False,
    exclude_infeasible: Annotated[bool, typer.Option(
        "--exclude-infeasible", help="Leave out suspect tasks: judged infeasible by the "
        "investigator (see `evalatlas failures`).")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Fit 1PL/2PL/MF by MAP on the observed cells; store the fit and print it."""
    from evalatlas import atlas

    exclude = _suspect_tasks(ctx, benchmark) if exclude_infeasible else None
    result = _call(atlas.fit, db_path(ctx), benchmark=benchmark, model=model,
                   cell=cell, holdout=holdout, seed=seed, drift=drift,
                   propensity=propensity, save=True, exclude_tasks=exclude)
    d = result.to_dict()
    if fmt is OutputFormat.json:
        emit(json.dumps(with_lake_meta(d), indent=2, allow_nan=False, ensure_ascii=False)
             + "\n", output)
        return
    abilities = result.abilities()
    notes = abilities.notes + list(d.get("notes", [])) + _band_notes(d)
    agents = abilities.rows
    if fmt is OutputFormat.csv:
        emit(render(agents, AGENT_COLUMNS, fmt, schema="evalatlas.atlas.abilities/1"), output)
        return
    text = render(agents, AGENT_COLUMNS, fmt, schema="evalatlas.atlas.fit/1",
                  title=f"Abilities ({d['model']}, fit {d['fit_id']})", console=console,
                  notes=notes)
    emit(text, output)


def _failures(ctx: typer.Context, benchmark: list[str] | None) -> Any:
    """The investigator's findings summary (``ea.failures``) for these benchmarks."""
    from evalatlas import failures
    from evalatlas import open as open_store

    def go() -> Any:
        with open_store(db_path(ctx), read_only=True) as store:
            return failures(store, benchmark=benchmark)
    return _call(go)


def _suspect_tasks(ctx: typer.Context, benchmark: list[str] | None) -> list[tuple[str, str]]:
    return _failures(ctx, benchmark).suspect


def _band_notes(d: dict[str, Any], limit: int = 10) -> list[str]:
    """One line per (agent, benchmark) that ran fewer tasks than n_tasks: the band."""
    partial = [r for r in d.get("coverage", [])
               if r.get("n_tasks") and r["tasks_run"] < r["n_tasks"]]
    out = [f"{r['agent']} on {r['benchmark']}: ran {r['tasks_run']} of {r['n_tasks']} tasks; "
           f"success rate {fmt_value(r.get('success_rate_observed'))} on those, "
           f"{fmt_value(r.get('success_rate_unreported_as_failures'))} (unreported = failures)"
           f" to {fmt_value(r.get('success_rate_unreported_as_predicted'))} (= predicted)"
           for r in partial[:limit]]
    if len(partial) > limit:
        out.append(f"... {len(partial) - limit} more partial runs (see --format json, "
                   "coverage)")
    return out


def _stored(ctx: typer.Context, benchmark: list[str] | None) -> Any:
    from evalatlas import atlas

    fitted = _call(atlas.stored_fit, db_path(ctx), benchmark=benchmark)
    if fitted is None:
        fitted = _call(atlas.fit, db_path(ctx), benchmark=benchmark, save=True)
    return fitted


@atlas_app.command("abilities")
def abilities_cmd(ctx: typer.Context, benchmark: BenchmarkOption = None,
                  fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """Agent abilities of the latest stored fit (fits and stores one if there is none)."""
    result = _stored(ctx, benchmark).abilities()
    m = result.meta
    emit(render_result(result, AGENT_COLUMNS, fmt,
                       title=f"Abilities ({m['model']}, fit {m['fit_id']})"), output)


class ItemSort(StrEnum):
    difficulty = "difficulty"
    discrimination = "discrimination"


@atlas_app.command("items")
def items_cmd(
    ctx: typer.Context, benchmark: BenchmarkOption = None,
    sort: Annotated[ItemSort | None, typer.Option(
        "--sort", case_sensitive=False, help="Order every item by difficulty (easiest "
        "first) or discrimination (highest first). Default: by benchmark, then "
        "difficulty.")] = None,
    top: Annotated[int | None, typer.Option("--top", min=1, help="Only the first N.")
                   ] = None,
    hardest: Annotated[bool, typer.Option(
        "--hardest", help="Hardest first (implies --sort difficulty).")] = False,
    fmt: FormatOption = OutputFormat.table, output: OutputOption = None,
) -> None:
    """Item (task) difficulties, discriminations and observed success rates of the
    latest stored fit, with the investigator's verdict (infeasible / investigated
    episodes, suspect)."""
    from evalatlas import atlas

    fitted = _stored(ctx, benchmark)
    result = atlas.with_verdicts(
        _call(fitted.item_table, sort=sort.value if sort else None, top=top,
              hardest=hardest), _failures(ctx, benchmark))
    m = result.meta
    cols: list[Column] = [*ITEM_COLUMNS[:-1], ("infeasible", "infeasible / investigated", _verdict),
            ITEM_COLUMNS[-1]]
    emit(render_result(result, cols, fmt,
                       title=f"Items ({m['model']}, fit {m['fit_id']})"), output)


def _verdict(r: dict[str, Any]) -> str:
    if not r.get("investigated"):
        return "-"
    return f"{r['infeasible']} / {r['investigated']}" + (" suspect" if r.get("suspect") else "")


@atlas_app.command("drift")
def drift_cmd(ctx: typer.Context, benchmark: BenchmarkOption = None,
              fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """Tasks seen with more than one task_version_hash, with the agents on each side."""
    from evalatlas import atlas

    result = _call(atlas.drift, db_path(ctx), benchmark=benchmark)

    def versions(r: dict[str, Any]) -> str:
        return "; ".join(f"{(h['task_version_hash'] or 'null')[:12]}: {', '.join(h['agents'])}"
                         for h in r["hashes"])

    cols: list[Column] = [("benchmark", "benchmark"), ("task_id", "task"),
            ("hashes", "versions: agents", versions)]
    emit(render_result(result, cols, fmt, title="Task drift"), output)


@atlas_app.command("next-tasks")
def next_tasks_cmd(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name or id (prefix).")],
    k: Annotated[int, typer.Option("--k", min=1, help="How many tasks.")] = 10,
    benchmark: BenchmarkOption = None,
    new_agent: NewAgentOption = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """The K tasks AGENT has not run that tell most about its ability (Fisher information)."""
    from evalatlas import atlas

    result = _call(atlas.suggest_tasks, agent, db_path(ctx), count=k, benchmark=benchmark,
                   new_agent=new_agent)
    cols: list[Column] = [("benchmark", "benchmark"), ("task_id", "task"),
            ("task_version_hash", "version", lambda r: (r["task_version_hash"] or "-")[:12]),
            ("information", "information"), ("difficulty", "difficulty"),
            ("predicted_success", "P(success)")]
    emit(render_result(result, cols, fmt, title=f"Next tasks for {agent}"), output)


@atlas_app.command("estimate")
def estimate_cmd(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name or id (prefix).")],
    benchmark: BenchmarkOption = None,
    from_description: Annotated[bool, typer.Option(
        "--from-description", help="No scores yet: lexical nearest neighbours of the "
        "agent's description (weak evidence).")] = False,
    description: Annotated[str | None, typer.Option(
        "--description", help="Description text for an agent not in the store.")] = None,
    new_agent: NewAgentOption = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """AGENT's ability and predicted full-benchmark success rate, with 95% intervals."""
    from evalatlas import atlas

    est = _call(atlas.estimate, agent, db_path(ctx), benchmark=benchmark,
                from_description=from_description, description=description,
                new_agent=new_agent)
    d = est.to_dict()
    if fmt is OutputFormat.json:
        emit(json.dumps(with_lake_meta(d), indent=2, allow_nan=False, ensure_ascii=False)
             + "\n", output)
        return
    del d["schema"]  # a table/CSV row of the estimate's fields
    cols: list[Column] = [
        ("agent", "agent"), ("ability", "ability [95% CI]", lambda r: _ci(r, "ability")),
        ("predicted_success_rate", "predicted success rate [95% CI]",
         lambda r: _ci(r, "predicted_success_rate")),
        ("tasks_observed", "tasks observed"), ("n_tasks", "tasks"), ("method", "method")]
    emit(render([d], cols, fmt, schema="evalatlas.atlas.estimate/1", title="Estimate",
                notes=d["notes"]), output)


@atlas_app.command("matrix")
def matrix_cmd(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option("--output", "-o", help="Parquet (.parquet) or "
                                         "CSV file, long format.")],
    benchmark: BenchmarkOption = None,
    cell: CellOption = "success",
    drift: Annotated[str, typer.Option("--drift", help="split or merge task versions.")
                     ] = "split",
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Write the agent x task matrix in long format: one row per observed cell."""
    from evalatlas import atlas

    m = _call(atlas.matrix, db_path(ctx), benchmark=benchmark, cell=cell,
              drift_mode=drift)
    n_cells = m.write(output)  # Parquet or CSV (formulas neutralised, names redacted)
    if fmt is WrittenFormat.json:
        emit_written("evalatlas.atlas-matrix/1",
                     [{"path": str(output), "cells": n_cells, "agents": m.n_agents,
                       "items": m.n_items}], cell=cell, drift=drift)
        return
    console.print(f"wrote {n_cells:,} cells ({m.n_agents} agents x {m.n_items} items) "
                  f"to {output}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(atlas_app, name="atlas")
