"""``evalatlas agents``: the agents (``--experiments``, ``--benchmarks``) a store holds.

Parse, call :func:`evalatlas.agents`, render; ``--format json`` is the result's
``to_dict()`` (schema ``evalatlas.agents/1``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from evalatlas.cli.common import FormatOption, OutputOption, emit, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, render_result

_TITLES = {"agents": "Agents", "experiments": "Experiments", "benchmarks": "Benchmarks"}


def agents_cmd(
    ctx: typer.Context,
    experiments: Annotated[bool, typer.Option(
        "--experiments", help="One row per experiment (a run of an agent) instead.")] = False,
    benchmarks: Annotated[bool, typer.Option(
        "--benchmarks", help="One row per benchmark instead.")] = False,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help="Only these agents (name or id; repeatable).")] = None,
    benchmark: Annotated[list[str] | None, typer.Option(
        "--benchmark", "-b", help="Only these benchmarks (repeatable).")] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """List agents with ids, episodes, tasks and benchmarks: the names other commands take."""
    from evalatlas import agents

    if experiments and benchmarks:
        fail("choose one of --experiments and --benchmarks")
    what = "experiments" if experiments else "benchmarks" if benchmarks else "agents"
    with open_store(ctx, read_only=True) as store:
        try:
            result = agents(store, what, agent=agent, benchmark=benchmark)
        except ValueError as exc:
            fail(str(exc))
    id_col = {"agents": "agent id", "experiments": "experiment id", "benchmarks": "benchmark"}
    cols = [Col("name", what[:-1], None, 0, "name")]
    if what != "benchmarks":  # a short id tells apart agents of one name (json: full id)
        cols.append(Col("id", id_col[what], lambda r: str(r["id"])[:12], 0.5, "name"))
    if what == "experiments":
        cols.append(Col("agent_names", "agent", lambda r: ", ".join(
            n for n in r.get("agent_names") or [] if n) or "-", 1, "name"))
    cols += [Col("episodes", "episodes", None, 2), Col("tasks", "tasks", None, 3)]
    if what != "experiments":
        cols.append(Col("experiments", "experiments", None, 4))
    if what == "benchmarks":
        cols.append(Col("agents", "agents", None, 4))
    else:
        cols.append(Col("benchmarks", "benchmarks",
                        lambda r: ", ".join(r.get("benchmarks") or []), 1, "name"))
    emit(render_result(result, cols, fmt, title=_TITLES[what]), output)


def register(app: typer.Typer) -> None:
    app.command("agents")(agents_cmd)
