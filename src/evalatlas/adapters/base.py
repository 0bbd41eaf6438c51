"""The adapter protocol: one module per foreign format, records out.

An adapter module defines a module-level ``ADAPTER = Adapter(...)`` (or a tuple
``ADAPTERS``) and has a row in :data:`evalatlas.adapters.registry.ADAPTER_TABLE`, which
lets detection import adapter modules one at a time, in priority order (a test checks
the table against the modules).

``detect(path)`` must be cheap (look at names and a few bytes, never parse a whole
file). ``read(path)`` streams items: experiment records first when it can, then episodes
and measurements, and a :class:`~evalatlas.errors.Problem` for every record it rejects,
so one bad record never hides the good ones beside it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement

Item = ExperimentRecord | EpisodeRecord | Measurement | Problem


@dataclass(frozen=True)
class Adapter:
    """A foreign format evalatlas can ingest.

    ``kind`` is ``"dir"`` when the adapter claims whole directories (the walk does not
    descend into a claimed directory) or ``"file"`` when it claims single files.
    Lower ``priority`` is tried first.
    """

    name: str
    kind: str
    detect: Callable[[Path], bool]
    read: Callable[[Path], Iterator[Item]]
    priority: int = 50
    description: str = ""
    rows: bool = False
    """The adapter yields what :func:`~evalatlas.records.validate.parse_record` returns for
    its episodes and uses no more of them than their fields: the ingest then reads it
    inside :func:`~evalatlas.records.strict.handing_over_rows`, where an episode in strict
    form comes as its checked fields (a
    :data:`~evalatlas.records.strict.CheckedEpisode`) that the store flattens into its
    row, not as an EpisodeRecord built only to be read back."""


def head_bytes(path: Path, n: int = 4096) -> bytes:
    """The first ``n`` bytes of a regular file, or b"" when unreadable or not a regular
    file (for cheap sniffing). Opened non-blocking and checked with ``fstat``, so a FIFO
    or device never blocks or streams endlessly."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(n)
    except OSError:
        return b""
    finally:
        os.close(fd)
