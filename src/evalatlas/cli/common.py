"""Shared CLI plumbing: the store from ``--db``, the ``--format`` option, output, errors."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from evalatlas import EvalAtlasError
from evalatlas.cli.render import TABLE_AS_TEXT, OutputFormat, render, safe_text

if TYPE_CHECKING:
    from rich.progress import Progress

    from evalatlas import Store

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", case_sensitive=False,
                 help="Output format: table, json, csv or markdown (any case)."),
]


class WrittenFormat(StrEnum):
    """``--format`` of commands that write files (``export``, ``atlas matrix``,
    ``schema --write``): a one-line ``table`` summary, or ``json``, an envelope of what
    was written."""

    table = "table"
    json = "json"


WrittenFormatOption = Annotated[
    WrittenFormat,
    typer.Option("--format", "-f", case_sensitive=False,
                 help="table (one line per file written) or json (an envelope of what was "
                 "written: paths and counts); any case."),
]


def emit_written(schema: str, rows: list[dict[str, Any]], *, to_stderr: bool = False,
                 **meta: Any) -> None:
    """Print the ``--format json`` envelope ``{"schema": ..., **meta, "rows": rows}`` of
    a command that wrote files; ``to_stderr`` when stdout carries the data itself
    (``export jsonl -``)."""
    text = render(rows, [], OutputFormat.json, schema=schema, meta=meta)
    typer.echo(text, nl=False, err=to_stderr)


def _output_given(value: Path | None) -> Path | None:
    """``-o FILE``: checked before the work (:func:`check_output`), and a table is then
    rendered as text into the file (:data:`evalatlas.cli.render.TABLE_AS_TEXT`) instead of
    being printed and the option ignored."""
    if value is not None and str(value) != "-":
        check_output(value)
        TABLE_AS_TEXT.set(True)
    return value


OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", callback=_output_given,
                              help="Write to this file instead of stdout (a table as plain "
                              "text).")
]


def db_path(ctx: typer.Context) -> str | Path:
    """The store named by ``--db`` (or ``$EVALATLAS_DB``, which typer reads for it), else
    ``./evalatlas.duckdb``: the default the ``--db`` help names. The CLI chooses it; the
    Python API opens no store it was not given. A ``ducklake:`` location stays text (a
    libpq string is not a path)."""
    obj = ctx.obj or {}
    db = obj.get("db")
    if db and str(db).startswith("ducklake:"):
        return str(db)
    return Path(db or "evalatlas.duckdb")


def open_store(ctx: typer.Context, *, read_only: bool = False,
               require_data: bool = False, create: bool = False) -> Store:
    """Open the store named by ``--db``; a clear one-line error instead of a traceback.

    ``require_data``: a store that exists but holds no episodes or measurements is an
    error saying so and how to ingest, instead of an empty table. ``create``: only the
    commands that add data (ingest, run) create a missing store; for any other it is an
    error and no file is made. Readers and writers alike wait up to the global ``--wait
    SECONDS`` for another process's lock (they retry; no copy is read)."""
    from evalatlas import open as open_db  # loaded by commands that open a store only

    obj = ctx.find_root().obj or ctx.obj or {}
    wait = float(obj.get("wait") or 0.0)
    try:
        store = open_db(db_path(ctx), read_only=read_only, wait=wait, create=create)
    except EvalAtlasError as exc:
        fail(str(exc))
        raise  # unreachable, for type checkers
    if require_data and store.is_empty():
        path = store.path
        store.close()
        fail(f"the store {path} is empty (no episodes or measurements); add results "
             "with `evalatlas ingest PATH` (files or folders of results; see "
             "`evalatlas ingest --help`)")
    return store


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` to stderr (message escaped: it may quote input) and exit."""
    err_console.print(f"[bold red]error:[/] {escape(safe_text(message))}", markup=True,
                      highlight=False)
    raise typer.Exit(code)


def check_output(output: Path | None) -> None:
    """Fail before the work when ``output`` cannot be written (a folder, a missing or
    read-only parent folder): :func:`evalatlas.safe_write.check_file`."""
    if output is None:
        return
    from evalatlas import OutputError, safe_write

    try:
        safe_write.check_file(output)
    except OutputError as exc:
        fail(str(exc))


def check_folder(folder: Path) -> None:
    """Fail before the work when ``folder`` cannot be an output folder (a file, or its
    parent folder missing or read-only): :func:`evalatlas.safe_write.check_folder`."""
    from evalatlas import OutputError, safe_write

    try:
        safe_write.check_folder(folder)
    except OutputError as exc:
        fail(str(exc))


def write_output(output: Path, text: str) -> None:
    """Write ``text`` to ``output`` whole (:mod:`evalatlas.safe_write`: temporary file and
    rename, devices and ``-`` streamed), or fail with one line."""
    from evalatlas import OutputError, safe_write

    try:
        safe_write.write_text(output, text)
    except OutputError as exc:
        fail(str(exc))


def emit(text: str | None, output: Path | None = None) -> None:
    """Write rendered text to ``output`` or stdout (tables are already printed)."""
    if text is None:
        return
    if output is not None and str(output) != "-":
        write_output(output, text)
        err_console.print(f"wrote {output}", markup=False, highlight=False)
    else:
        typer.echo(text, nl=False)


def call_progress(label: str) -> Progress:
    """The progress bar of the commands that call an LLM per episode (``judge``,
    ``investigate``): spinner, bar, done/total and elapsed time on stderr, drawn only on a
    terminal and gone when done. One definition so the two look and behave alike."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as _Progress

    return _Progress(SpinnerColumn(), TextColumn(label), BarColumn(), MofNCompleteColumn(),
                     TimeElapsedColumn(), console=err_console, transient=True,
                     disable=not err_console.is_terminal)
