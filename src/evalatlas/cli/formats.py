"""``evalatlas formats``: the input formats `ingest` recognises."""

from __future__ import annotations

import typer

from evalatlas import formats
from evalatlas.cli.common import FormatOption, OutputOption, emit
from evalatlas.cli.render import OutputFormat, render_result


def formats_cmd(fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """List the input formats, in the order detection tries them, each with an example."""
    cols = [("name", "format"), ("claims", "claims"), ("description", "description"),
            ("example", "example")]
    emit(render_result(formats(), cols, fmt, title="Input formats"), output)


def register(app: typer.Typer) -> None:
    app.command("formats")(formats_cmd)
