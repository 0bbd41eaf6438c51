"""``evalatlas report``: one self-contained, offline HTML file with interactive charts."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from evalatlas.cli.common import (
    check_folder,
    check_output,
    err_console,
    fail,
    open_store,
    write_output,
)


class ReportFormat(StrEnum):
    html = "html"
    json = "json"


def report_cmd(
    ctx: typer.Context,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="File to write (default report.html, or report.json with "
        "--format json; '-' for stdout).")] = None,
    title: Annotated[str, typer.Option("--title", help="Page title.")] = "evalatlas report",
    by: Annotated[str, typer.Option("--by", help="Group rows by agent, experiment, "
                                    "benchmark, model or label:<name> (as summary).")
                  ] = "agent",
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    confidence: Annotated[float, typer.Option(help="Interval confidence level.")] = 0.95,
    alpha: Annotated[float, typer.Option(help="Significance level of paired tests.")] = 0.05,
    static: Annotated[Path | None, typer.Option(
        "--static", help="Also write each chart as SVG and PNG into this folder (without "
        "-o, only the images are written).")] = None,
    fmt: Annotated[ReportFormat, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="html (the report) or json (its specs and data).")
    ] = ReportFormat.html,
) -> None:
    """Leaderboard, intervals, paired comparisons, cost vs accuracy, agent x task heatmap,
    per-task drill-down (and tiers, speedups, framework scorecards where the data has
    them) in one HTML file that opens offline."""
    from evalatlas import EvalAtlasError, build_report

    if "," in by:
        fail("--by takes one grouping key for the report")
    if not 0 < confidence < 1:
        fail("--confidence must be in (0, 1)")
    check_output(output)  # before the work: a bad path fails at once, nothing written
    if static is not None:
        check_folder(static)
    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            report = build_report(store, title=title, by=by, experiment=experiment,
                                  confidence=confidence, alpha=alpha)
        except ValueError as exc:
            fail(str(exc))
            raise  # unreachable
    try:
        if static is not None:
            files = report.write_static(static)
            err_console.print(f"wrote {len(files)} images to {static}", markup=False,
                              highlight=False)
            if output is None:
                return
        if fmt is ReportFormat.json:
            text = json.dumps(report.to_dict(), indent=1, allow_nan=False) + "\n"
            target = output or Path("report.json")
        else:
            text = report.to_html()
            target = output or Path("report.html")
    except EvalAtlasError as exc:  # the chart runtime or vl-convert is missing
        fail(str(exc))
        raise  # unreachable
    if str(target) == "-":
        typer.echo(text, nl=False)
        return
    write_output(target, text)  # whole or not at all (evalatlas.safe_write)
    size = len(text.encode("utf-8"))
    err_console.print(f"wrote {target} ({size / 1024:,.0f} KiB, {len(report.views)} views)",
                      markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
