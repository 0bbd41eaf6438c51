"""What the fast path's stages hand each other: a prepared chunk, a group of them being
written, and the two ways a chunk leaves the fast path for the exact one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalatlas.adapters.jsonl_stream import Chunk

if TYPE_CHECKING:
    import pyarrow as pa


class NotClean(Exception):
    """This chunk is not provably clean; use the exact path for it."""


class GroupLost(Exception):
    """Writing a group failed and was rolled back: its ``chunks`` (in file order) need
    the exact path."""

    def __init__(self, reason: str, chunks: list[Chunk]) -> None:
        super().__init__(reason)
        self.chunks = chunks


@dataclass
class Prepared:
    """One chunk after the worker's steps 1 and 2: staged rows, or why it needs the exact
    path. ``other_lines``: experiment records and measurements (1-based within the
    chunk), which the exact path parses."""

    chunk: Chunk
    rows: pa.Table | None = None
    """The staged, checked and redacted episodes rows (without the columns the commit
    sets), with ``_line``, ``_problem`` and ``_h`` (:func:`~.sql.key_hash`), in line
    order; None once written or discarded."""
    reason: str | None = None
    other_lines: list[int] = field(default_factory=list)
    n: int = 0
    unpriced: bool = True
    after: int = 0
    """Rows of lines up to this one are written (a group may end inside a chunk, see
    :meth:`~evalatlas.store.fast_jsonl.commit.Committer.flush`)."""
    left: int = -1
    """Staged rows not written yet (set from ``n`` when the chunk joins a group)."""


@dataclass
class Group:
    """Staged chunks to be written as one batch (see
    :meth:`~evalatlas.store.fast_jsonl.commit.Committer.insert`); ``batch_id`` is set
    when it is written (batches written meanwhile take the ids before it)."""

    batch_id: int = -1
    preps: list[Prepared] = field(default_factory=list)
    n: int = 0
    size: int = 0
    """Bytes of input of its chunks."""
    unpriced: bool = False
