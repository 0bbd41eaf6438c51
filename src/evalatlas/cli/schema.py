"""``evalatlas schema``: the JSON Schema of each record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from evalatlas import OutputError, record_schemas, safe_write
from evalatlas.cli.common import WrittenFormat, WrittenFormatOption, emit_written, fail


def schema_cmd(
    name: Annotated[str | None, typer.Argument(help="One record name; default: all.")] = None,
    write: Annotated[Path | None, typer.Option(
        "--write", help="Write one <Record>.schema.json per record into this directory.")] = None,
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Print (or write) the JSON Schema of the records.

    Printed, the output is the JSON Schema itself whatever ``--format``; with ``--write``,
    ``--format json`` prints an envelope of the files written."""
    schemas = record_schemas()
    if name is not None:
        if name not in schemas:
            typer.echo(f"unknown record {name!r}; known: {', '.join(schemas)}", err=True)
            raise typer.Exit(2)
        schemas = {name: schemas[name]}
    if write is not None:  # the folder is made if its parent exists; files whole
        try:
            safe_write.make_folder(write)
            for n, s in schemas.items():
                safe_write.write_text(write / f"{n}.schema.json", json.dumps(s, indent=2) + "\n")
        except OutputError as exc:
            fail(str(exc))
        if fmt is WrittenFormat.json:
            emit_written("evalatlas.schema/1",
                         [{"record": n, "path": str(write / f"{n}.schema.json")}
                          for n in schemas], directory=str(write))
            return
        typer.echo(f"wrote {len(schemas)} schemas to {write}")
        return
    typer.echo(json.dumps(schemas if name is None else schemas[name], indent=2))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema_cmd)
