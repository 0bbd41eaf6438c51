"""``evalatlas codequality``: static code-quality metrics of a file or a tree (radon + ast)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalatlas.cli.common import FormatOption, OutputOption, emit, err_console, fail
from evalatlas.cli.render import Col, OutputFormat, fmt_value, render, safe_text
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
        err_console.print(f"[yellow]skipped:[/] {escape(safe_text(p))}", markup=True,
                          highlight=False)
    rows: list[dict[str, Any]] = [] if totals_only else [dict(r) for r in result.files]
    rows.append({"path": "(total)",
                 **result.totals})
    columns = [
        Col("path", "file", None, 0, "path"), Col("sloc", "SLOC", None, 1),
        Col("comment_ratio", "comments", _pct("comment_ratio"), 10),
        Col("avg_cyclomatic_complexity", "avg CC",
            lambda r: fmt_value(r["avg_cyclomatic_complexity"], 2), 2),
        Col("max_cyclomatic_complexity", "max CC", None, 4),
        Col("complexity_grade", "CC grade", None, 5),
        Col("maintainability_index", "MI",
            lambda r: fmt_value(r["maintainability_index"], 1), 3),
        Col("maintainability_grade", "MI grade", None, 6),
        Col("halstead_volume", "H volume", lambda r: fmt_value(r["halstead_volume"], 0), 13),
        Col("halstead_difficulty", "H difficulty",
            lambda r: fmt_value(r["halstead_difficulty"], 1), 14),
        Col("halstead_bugs", "H bugs", lambda r: fmt_value(r["halstead_bugs"], 2), 15),
        Col("num_imports", "imports", None, 11),
        Col("num_framework_imports", "fw imports", None, 12),
        Col("num_classes", "classes", None, 9), Col("num_functions", "functions", None, 8),
        Col("type_annotation_ratio", "annotated", _pct("type_annotation_ratio"), 7),
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
