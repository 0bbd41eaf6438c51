"""Shared CLI plumbing: the store from ``--db``, the ``--format`` option, output, errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from evalatlas import EvalAtlasError
from evalatlas.cli.render import OutputFormat, safe_text

if TYPE_CHECKING:
    from evalatlas import Store

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="Output format: table, json, csv or markdown."),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")
]


def db_path(ctx: typer.Context) -> Path | None:
    """The store named by ``--db`` (or ``$EVALATLAS_DB``); None lets the API choose its
    default (``ea.open()``: ``$EVALATLAS_DB``, else ``./evalatlas.duckdb``)."""
    obj = ctx.obj or {}
    return obj.get("db")


def open_store(ctx: typer.Context, *, read_only: bool = False,
               require_data: bool = False) -> Store:
    """Open the store named by ``--db``; a clear one-line error instead of a traceback.

    ``require_data``: a store that exists but holds no episodes or measurements is an
    error saying so and how to ingest, instead of an empty table. Writers wait up to the
    global ``--wait SECONDS`` for another process's lock: the one place every writing
    command (ingest, judge, run ...) gets that option from."""
    from evalatlas import open as open_db  # loaded by commands that open a store only

    obj = ctx.find_root().obj or ctx.obj or {}
    wait = 0.0 if read_only else float(obj.get("wait") or 0.0)
    try:
        store = open_db(db_path(ctx), read_only=read_only, wait=wait)
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


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` to stderr (message escaped: it may quote input) and exit."""
    err_console.print(f"[bold red]error:[/] {escape(safe_text(message))}", markup=True,
                      highlight=False)
    raise typer.Exit(code)


def emit(text: str | None, output: Path | None = None) -> None:
    """Write rendered text to ``output`` or stdout (tables are already printed)."""
    if text is None:
        return
    if output is not None:
        output.write_text(text, encoding="utf-8")
        err_console.print(f"wrote {output}", markup=False, highlight=False)
    else:
        typer.echo(text, nl=False)
