"""Size limits for reading input, with defaults the user can raise.

Why: a record is a few kilobytes; a 1 GB "line" or a 50 GB decompressed stream is an
accident or an attack, and reading it whole would exhaust memory before any check ran.
Limits are measured while streaming (a long line is counted, never held), and each has
an ``ingest`` option to raise it (``--max-line-bytes``, ``--max-file-bytes``,
``--max-record-bytes``).

The active limits live in a context variable so adapters deep in the call chain see the
values the command was given without every ``read(path)`` signature growing arguments.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class ReadLimits:
    """``max_line_bytes``: one JSONL line (one record), measured while streaming.
    ``max_file_bytes``: one input file, after decompression (a file over it is not read;
    a stream over it stops there, keeping what came before). ``max_record_bytes``: one
    JSON document that must be read whole (a ``.json`` file). ``max_json_depth``: nesting
    of objects and arrays in one record (deeper records are quarantined: readers recurse,
    and exports of such a record would crash)."""

    max_line_bytes: int = 16 * MiB
    max_file_bytes: int = 64 * GiB
    max_record_bytes: int = 256 * MiB
    max_json_depth: int = 100
    set_by: Literal["ingest", "serve"] = "ingest"
    """Whose options these limits came from, so that a refusal names an option the user
    has (:meth:`raise_hint`): ``evalatlas ingest``'s, or ``evalatlas serve``'s (which
    sets only ``max_file_bytes``; a submission's record limit is the smaller of it and
    ingest's default)."""

    def raise_hint(self, limit: str) -> str:
        """How to raise ``limit`` (a field name, e.g. ``"max_record_bytes"``), in the
        words of the command that set it: ``"raise it with --max-record-bytes"`` for
        ingest; for the server, its ``--max-file-bytes`` where that is the bound, else
        that the limit is fixed there."""
        option = "--" + limit.replace("_", "-")
        if self.set_by == "ingest":
            return f"raise it with {option}"
        by_file = limit == "max_file_bytes" or (
            limit == "max_record_bytes" and self.max_record_bytes == self.max_file_bytes
            and self.max_file_bytes < ReadLimits.max_record_bytes)
        if by_file:
            return "raise it with the server's --max-file-bytes"
        return "a fixed limit of evalatlas serve"


_DEFAULT = ReadLimits()
_LIMITS: ContextVar[ReadLimits | None] = ContextVar("evalatlas_read_limits", default=None)


def current() -> ReadLimits:
    """The limits in force for this ingest."""
    return _LIMITS.get() or _DEFAULT


@contextlib.contextmanager
def using(limits: ReadLimits) -> Iterator[ReadLimits]:
    """Make ``limits`` the ones in force inside the ``with`` block."""
    token = _LIMITS.set(limits)
    try:
        yield limits
    finally:
        _LIMITS.reset(token)
