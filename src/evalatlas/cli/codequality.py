"""``evalatlas codequality``: static code-quality metrics of a file or a tree (radon + ast)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from evalatlas import CODE_QUALITY_FRAMEWORKS, CODE_QUALITY_MAX_LINE_CHARS, code_quality
from evalatlas.cli.common import FormatOption, OutputOption, emit, err_console, fail
from evalatlas.cli.render import Col, OutputFormat, fmt_value, render_result, safe_text

_UNITS = {"": 1, "b": 1, "kb": 1000, "k": 1000, "mb": 1000**2, "m": 1000**2,
          "gb": 1000**3, "g": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_size(text: str) -> int:
    """``"1MB"`` -> 1000000, ``"512KiB"`` -> 524288, ``"2000"`` -> 2000."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{text!r} is not a size such as 2000, 500kB or 2MB")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _pct(key: str):
    return lambda r: "-" if r.get(key) is None else f"{100 * r[key]:.0f}%"


def codequality_cmd(
    path: Annotated[Path, typer.Argument(help="A Python file or a directory tree.")],
    framework_prefix: Annotated[list[str] | None, typer.Option(
        "--framework-prefix", "-p",
        help="Module prefix counted as a framework import (repeatable).")] = None,
    framework: Annotated[str | None, typer.Option(
        "--framework", help="Use upstream's prefixes for this framework: "
        + ", ".join(sorted(CODE_QUALITY_FRAMEWORKS)) + ".")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", "-e", help="fnmatch pattern of paths to skip (repeatable), "
        "e.g. '*/site-packages/*'.")] = None,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    max_file_size: Annotated[str, typer.Option(
        "--max-file-size", metavar="SIZE",
        help="Skip larger files (bytes, or 500kB, 2MB; 0 = no limit). radon needs ~200x "
        "a file's size in memory.")] = "1MB",
    max_line_length: Annotated[int, typer.Option(
        "--max-line-length", min=0,
        help="Skip files with a longer line (minified or generated; 0 = no limit).")
    ] = CODE_QUALITY_MAX_LINE_CHARS,
    include_generated: Annotated[bool, typer.Option(
        "--include-generated", help="Analyse files marked as generated too.")] = False,
    totals_only: Annotated[bool, typer.Option("--totals-only",
                                              help="Only the totals row.")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """SLOC, comment ratio, cyclomatic complexity, maintainability index, Halstead,
    imports, classes, functions and type-annotation coverage, per file and in total."""
    if framework is not None and framework not in CODE_QUALITY_FRAMEWORKS:
        fail(f"unknown framework {framework!r}; known: "
             f"{', '.join(sorted(CODE_QUALITY_FRAMEWORKS))}")
    if not path.exists() and not path.is_symlink():
        fail(f"{path}: no such file or directory")
    try:
        max_bytes = parse_size(max_file_size)
    except ValueError as exc:
        fail(f"--max-file-size: {exc}")
        return
    result = code_quality(path, framework_prefixes=framework_prefix or (), framework=framework,
                          workers=workers, exclude=exclude or (), max_bytes=max_bytes or None,
                          max_line_chars=max_line_length or None,
                          include_generated=include_generated, totals_only=totals_only)
    for p in result.problems:
        err_console.print(f"[yellow]skipped:[/] {escape(safe_text(p))}", markup=True,
                          highlight=False)
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
    emit(render_result(result, columns, fmt, title="Code quality"), output)
    if not result.meta["files_analysed"] and result.problems:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("codequality")(codequality_cmd)
