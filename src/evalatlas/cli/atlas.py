"""``evalatlas atlas ...``: the agent x task matrix, IRT fits and cheap evaluation.

Parse, call :mod:`evalatlas.atlas`, render. JSON output is the result's ``to_dict()``
(``atlas fit``) or a ``{"schema", ..., "rows"}`` envelope (the other commands).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from evalatlas.cli.common import FormatOption, OutputOption, console, db_path, emit, fail
from evalatlas.cli.render import OutputFormat, fmt_value, render
from evalatlas.errors import EvalAtlasError
from evalatlas.records.redact import redact_text
from evalatlas.text import csv_line, json_safe

atlas_app = typer.Typer(
    help="Agent x task matrix: item response theory, drift, cheap evaluation.",
    no_args_is_help=True)

BenchmarkOption = Annotated[list[str] | None, typer.Option(
    "--benchmark", "-b", help="Only this benchmark (repeatable). Default: all.")]
ModelOption = Annotated[str, typer.Option("--model", help="1pl, 2pl or mf:R (rank R).")]
CellOption = Annotated[str, typer.Option(
    "--cell", help="success (k of n attempts) or reward (in [0,1], logit link).")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the held-out split.")]

T = TypeVar("T")


def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except (EvalAtlasError, ValueError) as exc:
        fail(str(exc))
        raise  # unreachable


def _ci(row: dict[str, Any], key: str) -> str:
    v = row.get(key)
    if v is None:
        return "-"
    return (f"{fmt_value(v)} [{fmt_value(row.get(key + '_ci_low'))}, "
            f"{fmt_value(row.get(key + '_ci_high'))}]")


AGENT_COLUMNS = [
    ("agent", "agent"), ("ability", "ability [95% CI]", lambda r: _ci(r, "ability")),
    ("ability_se", "se"), ("tasks_observed", "tasks"),
    ("flags", "flags", lambda r: ", ".join(r.get("flags") or []) or "-"),
]
ITEM_COLUMNS = [
    ("benchmark", "benchmark"), ("task_id", "task"),
    ("task_version_hash", "version", lambda r: (r.get("task_version_hash") or "-")[:12]),
    ("difficulty", "difficulty [95% CI]", lambda r: _ci(r, "difficulty")),
    ("discrimination", "discrimination [95% CI]", lambda r: _ci(r, "discrimination")),
    ("agents_observed", "agents"),
    ("flags", "flags", lambda r: ", ".join(r.get("flags") or []) or "-"),
]


def _diag_notes(d: dict[str, Any]) -> list[str]:
    return [
        f"model {d.get('model')}: {d.get('cells_observed')} cells fitted, "
        f"{d.get('cells_heldout')} held out; held-out AUC {fmt_value(d.get('heldout_auc'))}, "
        f"log loss {fmt_value(d.get('heldout_log_loss'))}, ECE {fmt_value(d.get('ece'))}; "
        f"{fmt_value(d.get('seconds'))} s",
        f"tasks solved by all: {d.get('tasks_all_solved')}, by none: "
        f"{d.get('tasks_none_solved')}, suspect broken: {d.get('tasks_suspect_broken')}",
    ]


@atlas_app.command("fit")
def fit_cmd(
    ctx: typer.Context,
    benchmark: BenchmarkOption = None,
    model: ModelOption = "2pl",
    cell: CellOption = "success",
    holdout: Annotated[float, typer.Option(
        "--holdout", help="Share of observed cells held out for diagnostics.")] = 0.1,
    seed: SeedOption = 0,
    drift: Annotated[str, typer.Option(
        "--drift", help="split: each task version its own item; merge; refuse: fail "
        "when a task has two versions.")] = "split",
    propensity: Annotated[bool, typer.Option(
        "--propensity", help="Inverse-propensity weights (selection on difficulty).")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Fit 1PL/2PL/MF by MAP on the observed cells; store the fit and print it."""
    from evalatlas import atlas

    result = _call(atlas.fit, db_path(ctx), benchmark=benchmark, model=model,
                   cell=cell, holdout=holdout, seed=seed, drift=drift,  # type: ignore[arg-type]
                   propensity=propensity, save=True)
    _print_fit(result.to_dict(), fmt, output)


def _print_fit(d: dict[str, Any], fmt: OutputFormat, output: Path | None) -> None:
    if fmt is OutputFormat.json:
        emit(json.dumps(json_safe(d), indent=2, allow_nan=False, ensure_ascii=False) + "\n",
             output)
        return
    notes = _diag_notes(d["diagnostics"]) + list(d.get("notes", [])) + _band_notes(d)
    agents = sorted(d["agents"], key=lambda r: -r["ability"])
    if fmt is OutputFormat.csv:
        emit(render(agents, AGENT_COLUMNS, fmt, schema="evalatlas.atlas.abilities/1"), output)
        return
    text = render(agents, AGENT_COLUMNS, fmt, schema="evalatlas.atlas.fit/1",
                  title=f"Abilities ({d['model']}, fit {d['fit_id']})", console=console,
                  notes=notes)
    emit(text, output)


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


def _stored(ctx: typer.Context, benchmark: list[str] | None) -> dict[str, Any]:
    from evalatlas import atlas

    fitted = _call(atlas.stored_fit, db_path(ctx), benchmark=benchmark)
    if fitted is None:
        fitted = _call(atlas.fit, db_path(ctx), benchmark=benchmark, save=True)
    return fitted.to_dict()


@atlas_app.command("abilities")
def abilities_cmd(ctx: typer.Context, benchmark: BenchmarkOption = None,
                  fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """Agent abilities of the latest stored fit (fits and stores one if there is none)."""
    d = _stored(ctx, benchmark)
    rows = sorted(d["agents"], key=lambda r: -r["ability"])
    emit(render(rows, AGENT_COLUMNS, fmt, schema="evalatlas.atlas.abilities/1",
                title=f"Abilities ({d['model']}, fit {d['fit_id']})",
                meta={"fit_id": d["fit_id"], "model": d["model"]},
                notes=_diag_notes(d["diagnostics"])), output)


@atlas_app.command("items")
def items_cmd(ctx: typer.Context, benchmark: BenchmarkOption = None,
              fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """Item (task) difficulties and discriminations of the latest stored fit."""
    d = _stored(ctx, benchmark)
    rows = sorted(d["items"], key=lambda r: (r["benchmark"], r["difficulty"], r["task_id"]))
    emit(render(rows, ITEM_COLUMNS, fmt, schema="evalatlas.atlas.items/1",
                title=f"Items ({d['model']}, fit {d['fit_id']})",
                meta={"fit_id": d["fit_id"], "model": d["model"]},
                notes=_diag_notes(d["diagnostics"])), output)


@atlas_app.command("drift")
def drift_cmd(ctx: typer.Context, benchmark: BenchmarkOption = None,
              fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """Tasks seen with more than one task_version_hash, with the agents on each side."""
    from evalatlas import atlas

    rows = _call(atlas.drift, db_path(ctx), benchmark=benchmark)

    def versions(r: dict[str, Any]) -> str:
        return "; ".join(f"{(h['task_version_hash'] or 'null')[:12]}: {', '.join(h['agents'])}"
                         for h in r["hashes"])

    cols = [("benchmark", "benchmark"), ("task_id", "task"),
            ("hashes", "versions: agents", versions)]
    notes = [] if rows else ["no task ran under more than one task_version_hash"]
    emit(render(rows, cols, fmt, schema="evalatlas.atlas.drift/1", title="Task drift",
                notes=notes), output)


@atlas_app.command("next-tasks")
def next_tasks_cmd(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="Agent name or id (prefix).")],
    k: Annotated[int, typer.Option("--k", min=1, help="How many tasks.")] = 10,
    benchmark: BenchmarkOption = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """The K tasks AGENT has not run that tell most about its ability (Fisher information)."""
    from evalatlas import atlas

    rows = _call(atlas.suggest_tasks, agent, db_path(ctx), count=k, benchmark=benchmark)
    cols = [("benchmark", "benchmark"), ("task_id", "task"),
            ("task_version_hash", "version", lambda r: (r["task_version_hash"] or "-")[:12]),
            ("information", "information"), ("difficulty", "difficulty"),
            ("predicted_success", "P(success)")]
    emit(render(rows, cols, fmt, schema="evalatlas.atlas.next_tasks/1",
                title=f"Next tasks for {agent}", meta={"agent": agent}), output)


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
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """AGENT's ability and predicted full-benchmark success rate, with 95% intervals."""
    from evalatlas import atlas

    est = _call(atlas.estimate, agent, db_path(ctx), benchmark=benchmark,
                from_description=from_description, description=description)
    d = est.to_dict()
    if fmt is OutputFormat.json:
        emit(json.dumps({"schema": "evalatlas.atlas.estimate/1", **d}, indent=2,
                        allow_nan=False, ensure_ascii=False) + "\n", output)
        return
    cols = [("agent", "agent"), ("ability", "ability [95% CI]", lambda r: _ci(r, "ability")),
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
) -> None:
    """Write the agent x task matrix in long format: one row per observed cell."""
    from evalatlas import atlas

    m = _call(atlas.matrix, db_path(ctx), benchmark=benchmark, cell=cell,  # type: ignore[arg-type]
              drift_mode=drift)  # type: ignore[arg-type]
    rows = list(m.long_rows())
    cols = ["agent", "agent_id", "benchmark", "task_id", "task_version_hash", "cell", "k",
            "n", "value"]
    if output.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table(
            {c: pa.array([], pa.string()) for c in cols}), output)
    else:
        with output.open("w", newline="", encoding="utf-8") as fh:
            fh.write(csv_line(cols))  # formulas neutralised, CR/LF quoted (evalatlas.text)
            for r in rows:
                fh.write(csv_line(redact_text(r[k]) if isinstance(r[k], str) else r[k]
                                  for k in cols))
    console.print(f"wrote {len(rows):,} cells ({m.n_agents} agents x {m.n_items} items) "
                  f"to {output}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(atlas_app, name="atlas")
