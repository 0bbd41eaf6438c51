"""The ``evalatlas`` command. Thin: parse arguments, call the library, render.

Command groups live in sibling modules that define ``register(app)``; they are found by
scanning this package, so a new command never edits this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated

import typer

import evalatlas.cli as _pkg
from evalatlas import __version__

app = typer.Typer(
    name="evalatlas",
    help="Turn AI-agent evaluation runs into trustworthy, comparable numbers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_NOT_COMMANDS = {"main", "render", "common"}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalatlas {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="Store file. Default: $EVALATLAS_DB, else ./evalatlas.duckdb.",
                     envvar="EVALATLAS_DB"),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True,
                           help="Print the version and exit.")
    ] = False,
) -> None:
    ctx.obj = {"db": db}


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _NOT_COMMANDS:
            continue
        module = importlib.import_module(f"{_pkg.__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
