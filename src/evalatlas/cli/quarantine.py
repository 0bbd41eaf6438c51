"""``evalatlas quarantine``: list rejected input with file, line, record, field, reason."""

from __future__ import annotations

from typing import Annotated

import typer

from evalatlas.cli.common import FormatOption, OutputOption, emit, open_store
from evalatlas.cli.render import Col, OutputFormat, render


def quarantine_cmd(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="Show at most this many (0 = all).")] = 100,
    source: Annotated[str | None, typer.Option(help="Only files whose path contains this.")] = None,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """List input that was rejected during ingest, newest batch first."""
    sql = ("SELECT source_file AS file, line, record, field, reason, ingest_batch AS batch "
           "FROM quarantine")
    params: list[object] = []
    if source:
        sql += " WHERE source_file LIKE ?"
        params.append(f"%{source}%")
    sql += " ORDER BY ingest_batch DESC, source_file, line NULLS LAST, record"
    if limit:
        sql += f" LIMIT {int(limit)}"
    with open_store(ctx, read_only=True) as store:
        rows = store.query(sql, params)
        total = store.count("quarantine")
    cols = [Col("file", "file", None, 0, "path"), Col("line", "line", None, 1),
            Col("record", "record", None, 4, "name"), Col("field", "field", None, 3),
            Col("reason", "reason", None, 2)]
    notes = [f"{total:,} rejected records in the store"] if fmt != OutputFormat.json else []
    emit(render(rows, cols, fmt, schema="evalatlas.quarantine/1", title="Quarantine",
                meta={"total": total}, notes=notes), output)


def register(app: typer.Typer) -> None:
    app.command("quarantine")(quarantine_cmd)
