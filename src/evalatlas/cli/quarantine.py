"""``evalatlas quarantine``: list rejected input with file, line, record, field, reason."""

from __future__ import annotations

from typing import Annotated

import typer

from evalatlas.cli.common import FormatOption, OutputOption, emit, err_console, open_store
from evalatlas.cli.render import Col, OutputFormat, render_result


def quarantine_cmd(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="Show at most this many (0 = all).")] = 100,
    source: Annotated[str | None, typer.Option(help="Only files whose path contains this.")] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Delete the quarantine rows (of --source only, if given) instead "
        "of listing them.")] = False,
) -> None:
    """List input that was rejected during ingest, newest batch first."""
    if clear:
        with open_store(ctx) as store:
            n = store.clear_quarantined(source=source)
        where = f" of files matching {source!r}" if source else ""
        err_console.print(f"removed {n:,} quarantine rows{where}", markup=False,
                          highlight=False)
        return
    with open_store(ctx, read_only=True) as store:
        result = store.quarantine(source=source, limit=limit or None)
    cols = [Col("file", "file", None, 0, "path"), Col("line", "line", None, 1),
            Col("record", "record", None, 4, "name"), Col("field", "field", None, 3),
            Col("reason", "reason", None, 2)]
    emit(render_result(result, cols, fmt, title="Quarantine",
                       notes=[f"{result.total:,} rejected records in the store"]), output)


def register(app: typer.Typer) -> None:
    app.command("quarantine")(quarantine_cmd)
