"""``evalatlas codequality``: static code-quality metrics of a file or a tree (radon + ast)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalatlas.cli.common import FormatOption, OutputOption, emit, err_console, fail
from evalatlas.cli.render import OutputFormat, fmt_value, render
from evalatlas.codequality import FRAMEWORK_PREFIXES, analyse_path


def _pct(key: str):
    return lambda r: "-" if r.get(key) is None else f"{100 * r[key]:.0f}%"


def codequality_cmd(
    path: Annotated[Path, typer.Argument(help="A Python file or a directory tree.")],
    framework_prefix: Annotated[list[str] | None, typer.Option(
        "--framework-prefix", "-p",
        help="Module prefix counted as a framework import (repeatable).")] = None,
    framework: Annotated[str | None, typer.Option(
        "--framework", help="Use upstream's prefixes for this framework: "
        + ", ".join(sorted(FRAMEWORK_PREFIXES)) + ".")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", "-e", help="fnmatch pattern of paths to skip (repeatable), "
        "e.g. '*/site-packages/*'.")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    totals_only: Annotated[bool, typer.Option("--totals-only",
                                              help="Only the totals row.")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """SLOC, comment ratio, cyclomatic complexity, maintainability index, Halstead,
    imports, classes, functions and type-annotation coverage, per file and in total."""
    prefixes = list(framework_prefix or [])
    if framework is not None:
        if framework not in FRAMEWORK_PREFIXES:
            fail(f"unknown framework {framework!r}; known: {', '.join(sorted(FRAMEWORK_PREFIXES))}")
        prefixes += [p for p in FRAMEWORK_PREFIXES[framework] if p not in prefixes]
    if not path.exists():
        fail(f"{path}: no such file or directory")
    result = analyse_path(path, framework_prefixes=prefixes, workers=workers,
                          exclude=exclude or ())
    for p in result.problems:
        err_console.print(f"[yellow]skipped:[/] {escape(str(p))}", markup=True, highlight=False)
    rows: list[dict[str, Any]] = [] if totals_only else [dict(r) for r in result.files]
    rows.append({"path": "(total)",
                 **result.totals})
    columns = [
        ("path", "file"), ("sloc", "SLOC"), ("comment_ratio", "comments", _pct("comment_ratio")),
        ("avg_cyclomatic_complexity", "avg CC",
         lambda r: fmt_value(r["avg_cyclomatic_complexity"], 2)),
        ("max_cyclomatic_complexity", "max CC"), ("complexity_grade", "CC grade"),
        ("maintainability_index", "MI", lambda r: fmt_value(r["maintainability_index"], 1)),
        ("maintainability_grade", "MI grade"),
        ("halstead_volume", "H volume", lambda r: fmt_value(r["halstead_volume"], 0)),
        ("halstead_difficulty", "H difficulty", lambda r: fmt_value(r["halstead_difficulty"], 1)),
        ("halstead_bugs", "H bugs", lambda r: fmt_value(r["halstead_bugs"], 2)),
        ("num_imports", "imports"), ("num_framework_imports", "fw imports"),
        ("num_classes", "classes"), ("num_functions", "functions"),
        ("type_annotation_ratio", "annotated", _pct("type_annotation_ratio")),
    ]
    notes = [f"{len(result.problems)} file(s) skipped (see stderr)"] if result.problems else []
    emit(render(rows, columns, fmt, schema="evalatlas.codequality/1", title="Code quality",
                meta={"root": result.root, "framework_prefixes": prefixes,
                      "files_analysed": len(result.files),
                      "problems": [str(p) for p in result.problems]}, notes=notes), output)
    if not result.files and result.problems:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("codequality")(codequality_cmd)
