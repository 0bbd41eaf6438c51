"""What a command's failure looks like to the user: one line, a non-zero exit, no traceback.

Every command runs inside :func:`guarded` (the root group's ``invoke``). Commands report
the errors they expect themselves (``fail``); this catches the rest by kind:

- Ctrl-C / SIGTERM: ``interrupted`` and exit 130 / 143 (also when DuckDB reported the
  interrupt as a failed query, see :mod:`evalatlas.interrupts`);
- :class:`~evalatlas.errors.EvalAtlasError` (an output that cannot be written, a store
  that cannot be opened): its one-line message, exit 2;
- an ``OSError`` (a file the command reads or writes): path and reason, exit 2;
- a DuckDB error: the store is damaged (the same line ``summary`` gives at open), its
  disk is full or read-only, or the query's own first line, exit 2;
- anything else is a bug: one line saying so, exit 1 (``EVALATLAS_DEBUG=1`` re-raises it
  with its traceback).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from evalatlas import interrupts

_CLI_FLOW = (typer.Exit, typer.Abort, typer.TyperException)


def message(exc: BaseException, db: Path | None) -> tuple[str, int]:
    """The one-line message and exit code for an exception no command handled."""
    from evalatlas import EvalAtlasError, safe_write, store_error

    if isinstance(exc, EvalAtlasError):
        return str(exc), 2
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "<output>"
        return str(safe_write.output_error(where, exc)), 2
    if type(exc).__module__.lstrip("_").split(".")[0] == "duckdb" or (
            isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted")):
        return str(store_error(exc, db)), 2
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"internal error: {type(exc).__name__}: {first} (a bug in evalatlas; "
            "EVALATLAS_DEBUG=1 shows the traceback)"), 1


@contextlib.contextmanager
def guarded(ctx: Any) -> Iterator[None]:
    """Run a command: signals handled (:func:`evalatlas.interrupts.handled`), every
    unhandled error turned into one line on stderr and an exit code."""
    from evalatlas.cli.common import fail
    from evalatlas.cli.render import TABLE_AS_TEXT

    token = TABLE_AS_TEXT.set(False)
    with interrupts.handled():
        try:
            yield
        except _CLI_FLOW:
            raise
        except KeyboardInterrupt:
            _interrupted()
        except Exception as exc:
            if interrupts.received() is not None:
                _interrupted()
            if os.environ.get("EVALATLAS_DEBUG"):
                raise
            text, code = message(exc, (ctx.find_root().obj or {}).get("db"))
            fail(text, code)
        finally:
            TABLE_AS_TEXT.reset(token)


def _interrupted() -> None:
    from evalatlas.cli.common import err_console

    code = interrupts.exit_code()
    name = "SIGTERM" if code == 143 else "Ctrl-C"
    err_console.print(f"interrupted ({name}); the store keeps whole batches only, and "
                      "running the command again completes the work", markup=False,
                      highlight=False)
    _forget_unhandled_interrupt()
    raise typer.Exit(code)


def _forget_unhandled_interrupt() -> None:
    """Clear CPython's note that a KeyboardInterrupt went unhandled, which the interrupt
    just handled may have left.

    Why: CPython 3.11 notes it whenever a KeyboardInterrupt leaves code run by ``exec``
    or ``eval`` of a string (``dataclasses`` and ``typing`` run such code while modules
    are imported), even when an outer ``except`` then handles it; at the end of ``python
    -m evalatlas.cli.main`` it then ends the process by SIGINT instead of the exit code
    (measured: a report interrupted at a random time exited -2 instead of 130 in 2-5 of
    30 runs, ``tests/test_interrupts.py`` failed in CI so). Every ``exec`` of a string
    starts by clearing that note, so this one does it (the installed ``evalatlas``
    script, a file, exits with the code either way)."""
    exec("pass")  # a constant string: the call itself is what clears the note
