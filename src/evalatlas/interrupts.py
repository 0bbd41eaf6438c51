"""Ctrl-C and SIGTERM end a command cleanly: remember the signal, raise, let clean-up run.

Why remember it: DuckDB turns an interrupt that arrives while a query runs into a plain
``RuntimeError("Query interrupted")`` (the ``KeyboardInterrupt`` our handler raised is
swallowed inside the query). Code that catches ``Exception`` around DuckDB (a failed
fast-path group goes to the exact path; an adapter failure is quarantined) would then
carry on as if a query had merely failed. :func:`reraise` turns such an error back into
the interrupt, so ingest stops at a batch boundary instead of continuing or writing a
batch twice; the CLI exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from evalatlas.errors import Interrupted

_received: list[int] = []


def received() -> int | None:
    """The signal that interrupted this process's command (SIGINT or SIGTERM), if any."""
    return _received[-1] if _received else None


def exit_code() -> int:
    """128 + the signal number (130 for SIGINT, 143 for SIGTERM), as shells report."""
    return 128 + (received() or signal.SIGINT)


def reraise(exc: BaseException) -> None:
    """Raise the interrupt (from ``exc``) if a signal arrived; otherwise return."""
    sig = received()
    if sig is None or isinstance(exc, KeyboardInterrupt):
        return
    raise (Interrupted() if sig == signal.SIGTERM else KeyboardInterrupt()) from exc


def _handler(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Interrupted() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM raise (and are remembered) inside the block; the previous
    handlers come back after it. Outside the main thread, nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    _received.clear()
    for s in previous:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
