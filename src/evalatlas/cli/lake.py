"""``evalatlas lake info|compact``: what a lake holds, and its maintenance (issue 23;
docs/scale-out.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from evalatlas.cli.common import FormatOption, OutputFormat, emit, fail, open_store
from evalatlas.cli.render import render_result

lake_app = typer.Typer(help="A DuckLake store: what it holds, and compaction.",
                       no_args_is_help=True)


@lake_app.command("info")
def info_cmd(ctx: typer.Context, fmt: FormatOption = OutputFormat.table) -> None:
    """Snapshots, data files, bytes and rows per table of the lake named by --db."""
    from evalatlas import EvalAtlasError

    with open_store(ctx, read_only=True) as store:
        try:
            result = store.lake_info()
        except EvalAtlasError as exc:
            fail(str(exc))
    m = result.meta
    notes = [f"{m['location']}: snapshot {m['snapshot']} read ({m['snapshots']} kept, "
             f"{m['oldest_snapshot']}..{m['newest_snapshot']}, newest at "
             f"{m['newest_snapshot_time']}); data files in {m['data_path']}"]
    emit(render_result(result, [("table", "table"), ("rows", "rows"), ("data_files", "data files"),
                                ("bytes", "bytes"), ("delete_files", "delete files")], fmt,
                       title="lake", notes=notes))


@lake_app.command("compact")
def compact_cmd(
    ctx: typer.Context,
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Expire snapshots, and delete unneeded and orphaned data files "
        "(a killed writer's), older than this: 30m, 12h, 7d, 2w or seconds.")] = "7d",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Merge small data files, expire old snapshots, delete files no kept snapshot needs.
    Safe beside running writers (it takes the commit lock; a file younger than
    --older-than is kept)."""
    from evalatlas import EvalAtlasError

    with open_store(ctx) as store:
        try:
            result = store.compact_lake(older_than=older_than)
        except EvalAtlasError as exc:
            fail(str(exc))
    emit(render_result(result, [("data_files_before", "files before"),
                                ("data_files_after", "files after"),
                                ("expired_snapshots", "expired snapshots"),
                                ("deleted_files", "deleted files"),
                                ("deleted_orphans", "deleted orphans"),
                                ("snapshot", "snapshot")], fmt,
                       title="lake compact"))


def register(app: typer.Typer) -> None:
    app.add_typer(lake_app, name="lake")
