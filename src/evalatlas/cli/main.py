"""The ``evalatlas`` command. Thin: parse arguments, call the library, render.

Command groups live in sibling modules that define ``register(app)``; a new command never
edits this file. Start-up stays fast because those modules are not imported until their
command runs: :mod:`evalatlas.cli.lazy` holds a table of the command names, their
modules and their one-line help (a test keeps it equal to what the modules register), and
shows lightweight stubs in ``--help``.

Global options (``--db`` and any other option of the root callback) may be given before
or after the subcommand: ``evalatlas summary --db runs.duckdb`` works like
``evalatlas --db runs.duckdb summary``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from evalatlas import __version__
from evalatlas.cli.lazy import LazyGroup

app = typer.Typer(
    name="evalatlas",
    help="Turn AI-agent evaluation runs into trustworthy, comparable numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalatlas {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store: a DuckDB file, or a DuckLake "
                     "(ducklake:postgres:<libpq string>, or ducklake:PATH.ducklake; see "
                     "docs/scale-out.md). Default: $EVALATLAS_DB, else ./evalatlas.duckdb.",
                     envvar="EVALATLAS_DB"),
    ] = None,
    data_path: Annotated[
        str | None,
        typer.Option("--data-path", envvar="EVALATLAS_DATA_PATH",
                     help="A new lake's folder for its Parquet data files (needed only when "
                     "a PostgreSQL-catalog lake is created; the catalog remembers it)."),
    ] = None,
    snapshot: Annotated[
        int | None,
        typer.Option("--snapshot", min=0,
                     help="Read this earlier snapshot of a lake (time travel; `evalatlas "
                     "lake info` lists them). Reading commands only."),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True,
                           help="Print the version and exit.")
    ] = False,
    wait: Annotated[
        float, typer.Option("--wait", min=0, envvar="EVALATLAS_WAIT",
                            help="Seconds to keep retrying while another process holds "
                            "the store's lock (every command that opens the store, "
                            "reading or writing).")
    ] = 0.0,
) -> None:
    import sys

    db_module = sys.modules.get("evalatlas.store.db")  # a fresh record per command
    if db_module is not None:  # (not loaded: nothing to reset, and no import cost)
        db_module.forget_lake_reads()
        db_module.set_default_lake()
    ctx.obj = {"db": db, "wait": wait, "data_path": data_path, "snapshot": snapshot}
    if data_path or snapshot is not None:  # every lake this process opens, as --wait
        from evalatlas import set_default_lake

        set_default_lake(data_path=data_path, snapshot=snapshot)
    if wait:  # every store this process opens, also through the API (atlas ...)
        from evalatlas import set_default_wait

        set_default_wait(wait)


def _freeze_at_exit() -> None:
    """Collect what is garbage now, then exempt every object left from the cyclic
    collections of the interpreter's shutdown.

    Why: those collections walk every object of pandas, pyarrow, numpy, pydantic and
    DuckDB that a command imported, which cost a small ``evalatlas ingest`` 0.035-0.060
    s of its ~0.75 s (session 21, medians of 15). Garbage is still collected (here), and
    objects freed by reference counting at shutdown still are; only cycles formed by the
    shutdown itself are left to the operating system, whose ``__del__`` Python does not
    promise to run at exit anyway. Registered with :mod:`atexit`, so it runs only when
    the interpreter exits, never inside a process that calls :func:`main` and goes on."""
    import gc

    gc.collect()
    gc.freeze()


def main() -> None:
    from atexit import register as at_exit  # by name: `.register(` reads as DuckDB's

    at_exit(_freeze_at_exit)
    app()


if __name__ == "__main__":
    main()
