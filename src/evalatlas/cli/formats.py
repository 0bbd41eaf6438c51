"""``evalatlas formats``: the input formats `ingest` recognises."""

from __future__ import annotations

import typer

from evalatlas.adapters.registry import all_adapters
from evalatlas.cli.common import FormatOption, OutputOption, emit
from evalatlas.cli.render import OutputFormat, render


def formats_cmd(fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """List the input formats, in the order detection tries them."""
    rows = [{"name": a.name, "claims": a.kind, "priority": a.priority,
             "description": a.description} for a in all_adapters()]
    cols = [("name", "format"), ("claims", "claims"), ("description", "description")]
    emit(render(rows, cols, fmt, schema="evalatlas.formats/1", title="Input formats"), output)


def register(app: typer.Typer) -> None:
    app.command("formats")(formats_cmd)
