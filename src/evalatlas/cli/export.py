"""``evalatlas export jsonl|parquet``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalatlas.cli.common import console, open_store
from evalatlas.store.export import export_jsonl, export_parquet

export_app = typer.Typer(help="Export the store (seed JSONL, Parquet).", no_args_is_help=True)


@export_app.command("jsonl")
def jsonl_cmd(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Output JSONL file.")],
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
) -> None:
    """One self-contained EpisodeRecord per line (the seed's ATLAS submission file)."""
    with open_store(ctx.parent, read_only=True) as store:
        n = export_jsonl(store, path, experiment)
    console.print(f"wrote {n:,} episode records to {path}", highlight=False, markup=False)


@export_app.command("parquet")
def parquet_cmd(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Output directory.")],
) -> None:
    """Every store table as <table>.parquet, readable by pandas, Spark, Trino, DuckDB."""
    with open_store(ctx.parent, read_only=True) as store:
        counts = export_parquet(store, directory)
    for table, n in counts.items():
        console.print(f"{table}: {n:,} rows -> {directory / (table + '.parquet')}",
                      highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(export_app, name="export")
