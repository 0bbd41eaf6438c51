"""The fast path's state for one input file (or stream): set-up, threads, clean-up.

Two kinds of thread: :meth:`FastJsonl.pipeline` prepares chunk k+1 in preparing
threads (:mod:`.prepare`: msgspec or the shape pass, the typed read on a cursor of the
store's instance into an Arrow table, checks and redaction) while the caller commits
chunk k on the store connection (:mod:`.commit`). DuckDB releases the
GIL, so they overlap on two cores. Commits stay in file order, one transaction per
group of chunks.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import duckdb

import evalatlas.store.fast_jsonl.pipeline as threads
from evalatlas.adapters.jsonl_stream import Chunk
from evalatlas.errors import Problem
from evalatlas.pricing import Pricing
from evalatlas.records.limits import current as current_limits
from evalatlas.store.db import DEFAULT_MEMORY_LIMIT, ENV_MEMORY, StoreConnection
from evalatlas.store.fast_jsonl.commit import Committer
from evalatlas.store.fast_jsonl.prepare import Preparer
from evalatlas.store.fast_jsonl.seen import SeenHashes
from evalatlas.store.fast_jsonl.sql import SET_AT_COMMIT, sql_str
from evalatlas.store.fast_jsonl.staging import chunk_dir, scratch_instance
from evalatlas.store.fast_jsonl.state import Group, Prepared
from evalatlas.store.redaction import column_types

SHORT_MEMORY_LIMIT_MB = 192
"""DuckDB's memory budget while the fast path runs (unless the user set
:data:`evalatlas.store.db.ENV_MEMORY`) for a file whose lines average under
:data:`LONG_LINE_BYTES` (set from its first chunk, :func:`budget_mb`),
:data:`LONG_MEMORY_LIMIT_MB` for longer ones; the scratch instance has 256 MB more.

History: 640 MB until jsonl5 (peak RSS of a 10M-episode file 1,236 MB episodes only,
1,286 mixed, over the 1.2 GB bound, duckdb 1.5.5), 512 MB from jsonl5 (1,119-1,168 MB,
DuckDB spilling at its budget from ~5M episodes on: the staged chunks and the per-key
``_fast_seen`` table, 16 bytes a key). Since arrow7 the staged chunks are Arrow tables
outside DuckDB's budget (~33 MB a chunk, up to ~4 at once, more while a mixed file's
group stays open). Measured by the lead on a quiet machine, one run each, peak RSS MB /
CPU s, with one budget for the whole file:

- 10M episodes of ~900 bytes: 384 MB 1,214 / 98.0; 320 MB 1,177 / 104.6; 256 MB
  1,099 / 101.9; 192 MB 1,064 / 105.6;
- the mixed 10M file: 256 MB 1,223 / 107.3; 192 MB 1,181 / 112.3; 128 MB failed
  (DuckDB could not pin a block while committing an experiment batch); a budget that
  shrank with the keys held, from 224 to 160 MB, peaked at 1,678;
- 600,000 episodes of ~4 KB (2.4 GB, few keys, long texts): 512 MB 1,910 / 55.4;
  256 MB 1,622 / 55.1; 192 MB 1,660 / 70.9; main (512 MB, its staged chunks inside the
  budget) 1,619 / 50.5: with long rows a small budget makes DuckDB spill and re-read the
  rows it writes, a large one adds to the staged chunks' rows, which are the peak.

So short lines (many keys per byte: the per-key state grows to 24 bytes a key, 8 of it
outside DuckDB) get the small budget that keeps a 10M-episode file under the 1.2 GB
bound, long lines one that keeps their peak where it was before arrow7."""

LONG_MEMORY_LIMIT_MB = 256
"""DuckDB's budget for a file of long lines (see :data:`SHORT_MEMORY_LIMIT_MB`)."""

LONG_LINE_BYTES = 2048
"""Average bytes a line from which a file's lines are long (see
:data:`SHORT_MEMORY_LIMIT_MB`: the benchmark's episodes are ~900 bytes, the long-text
file it measured ~4 KB)."""


def budget_mb(chunk_bytes: int, chunk_lines: int) -> int:
    """DuckDB's budget in MB for a file whose first chunk holds ``chunk_lines`` lines in
    ``chunk_bytes`` (see :data:`SHORT_MEMORY_LIMIT_MB`)."""
    if chunk_lines and chunk_bytes / chunk_lines < LONG_LINE_BYTES:
        return SHORT_MEMORY_LIMIT_MB
    return LONG_MEMORY_LIMIT_MB


CHECKPOINT_THRESHOLD = "128MB"
"""DuckDB's WAL size that triggers a checkpoint, while the fast path writes."""


class FastJsonl(Preparer, Committer):
    """The fast path for one input: :meth:`pipeline` prepares its chunks, the caller
    :meth:`insert`-s and :meth:`flush`-es them, or sends a declined one to the exact path
    (:meth:`earlier_lines` and :meth:`remember` keep keys unique across both);
    :meth:`close` restores the store."""

    def __init__(self, store: StoreConnection, source: str, max_depth: int = 100,
                 pricing: Pricing | None = None) -> None:
        self.store = store
        self.pricing = pricing or Pricing()  # how a group's missing costs are completed
        self.con = store.con
        self.source = source
        self.max_depth = max_depth
        # Lines over the line limit never reach DuckDB (the chunker blanks them).
        self.max_object = max(1 << 20, current_limits().max_line_bytes + 2)
        self.tmpdir = chunk_dir()  # first: an OSError here leaves nothing to undo
        try:
            self._setup()
        except BaseException:  # an interrupt while setting up: no chunk folder left
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise

    def _setup(self) -> None:
        self.scratch = scratch_instance()
        self.group: Group | None = None
        # Checkpoint every few chunks, not after each: each checkpoint recompresses the
        # last, partly filled row group (measured: ~10% less CPU, lower peak RSS). The
        # WAL still makes every committed chunk durable.
        self._threshold = self.con.execute(
            "SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
        self.con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
        # The store's DuckDB budget shrinks while chunks are staged (in Arrow, outside
        # it) and the scratch instance runs beside it (DuckDB evicts cached blocks or
        # spills beyond it): peak RSS measured 1.21 GB at 10M episodes with the store's
        # 1 GB (see SHORT_MEMORY_LIMIT_MB).
        self._own_memory_limit = os.environ.get(ENV_MEMORY) is None
        if self._own_memory_limit:
            self.con.execute(f"SET memory_limit = '{SHORT_MEMORY_LIMIT_MB}MB'")
        self._budget: int | None = None  # set by the first chunk (see insert)
        self.con.execute("CREATE OR REPLACE TEMP TABLE _fast_seen (h UBIGINT, line BIGINT)")
        self.seen = SeenHashes()  # the same keys' hashes, for the fast duplicate check
        # Chunks of one file never share a key (see commit), so only episodes stored
        # before this file can be replaced: with none, no chunk scans the table for them.
        # On a lake that other processes write, they may store episodes meanwhile.
        self._replaces = self.store.many_writers or bool(self.con.execute(
            "SELECT EXISTS (SELECT 1 FROM episodes)").fetchall()[0][0])
        # One cursor per preparing thread (a DuckDB connection serves one thread at a
        # time); closed in close().
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._cursor_lock = threading.Lock()
        # Each query runs in the thread that issues it: the preparers and the committer
        # already keep both cores busy, and DuckDB's own threads only add scheduling
        # (measured: ~10% more CPU for the same chunks with threads=2).
        self._threads = self.con.execute(
            "SELECT current_setting('threads')").fetchall()[0][0]
        self.con.execute("SET threads = 1")
        types = column_types(self.con, "episodes")
        self._row_types = {c: t for c, t in types.items() if c not in SET_AT_COMMIT}
        self._seq = itertools.count()
        self._shape_thread = ThreadPoolExecutor(1, thread_name_prefix="evalatlas-shapes")

    def close(self) -> None:
        """Restore the store's settings and free the scratch space; an open group
        (only after an error) is dropped unwritten, as a killed ingest's would be. The
        chunk folder goes whatever fails here (after an interrupt, say)."""
        try:
            if self.group is not None:
                for prep in self.group.preps:
                    self.discard(prep)
                self.group = None
            self.con.execute(f"SET checkpoint_threshold = {sql_str(self._threshold)}")
            if self._own_memory_limit:  # the store's default (see StoreConnection._open)
                self.con.execute(f"SET memory_limit = '{DEFAULT_MEMORY_LIMIT}'")
            self.con.execute(f"SET threads = {int(self._threads)}")
            self._shape_thread.shutdown()
            for cur in self._cursors:
                cur.close()
            self.con.execute("DROP TABLE IF EXISTS _fast_seen")
            self.scratch.close()
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def insert(self, prep: Prepared) -> None:
        """:meth:`Committer.insert`; the first chunk's lines set DuckDB's budget
        (:func:`budget_mb`)."""
        super().insert(prep)
        if self._own_memory_limit and self._budget is None:
            self._budget = budget_mb(prep.chunk.size, prep.chunk.n_lines)
            if self._budget != SHORT_MEMORY_LIMIT_MB:  # set so from the start
                self.con.execute(f"SET memory_limit = '{self._budget}MB'")

    def pipeline(self, items: Iterator[Chunk | Problem]
                 ) -> Iterator[tuple[Chunk | Problem, Prepared | None]]:
        """``items`` (chunks of one input, or problems), each chunk with its
        :class:`~.state.Prepared` (None for a problem), in input order, prepared in
        :data:`~.pipeline.PREPARERS` threads (see :func:`.pipeline.pipeline`)."""
        return threads.pipeline(items, self.prepare, self.discard)
