"""DuckDB's worker threads around a store's writes: one thread while it writes, its
earlier number again when something else next uses the connection.

Why: a write's statements each touch a batch of at most tens of thousands of rows, and
DuckDB's worker threads cost more CPU than the work they would share
(:meth:`~evalatlas.store.db.StoreConnection.one_thread`). Setting ``threads`` is not
free either: DuckDB stops or starts its workers at once (duckdb 1.5.5: 0.3-2 ms each
time), and a new store used to pay four such switches before its first row (the
connection's start, the schema's statements, the ingest, its end). So a writable file
store connects with one thread, the number DuckDB would pick (``RESET threads``) is
*owed*, and the restore after a write is owed too: it is paid by the first use of the
connection outside a write (:attr:`~evalatlas.store.db.StoreConnection.con`). A process
that ingests and closes (``evalatlas ingest``) never starts a worker; one that goes on
to read (the Python API, the service's readers on cursor views, which share this state)
gets its threads back before its first read. Measured: an Inspect log's ingest
(``benchmarks/bench_adapters.py``) ~5 ms less wall time of ~150.

DuckDB's setting is the instance's, shared by every cursor of it: readers running while
a write is under way run on one thread meanwhile, as before."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import duckdb

RESTORE_DEFAULT = "RESET threads"
"""What a store connected with one thread owes: DuckDB's own default (a thread a core)."""


class WorkerThreads:
    """The thread setting a store (and its cursor views) owes, and how many write
    blocks (:meth:`single`) are running; safe to share between threads."""

    def __init__(self, owed: str | None = None) -> None:
        self.owed = owed
        self.depth = 0
        self._lock = threading.Lock()

    def pay(self, con: duckdb.DuckDBPyConnection) -> None:
        """Run the owed setting on ``con``, unless a write block is running (then it
        stays owed, for the first use after the last block ends)."""
        with self._lock:
            sql, self.owed = (None, self.owed) if self.depth else (self.owed, None)
        if sql is not None:
            with contextlib.suppress(duckdb.Error, RuntimeError):
                con.execute(sql)

    @contextlib.contextmanager
    def single(self, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
        """The block's queries run on one thread; the number before it is owed after it
        (nothing changes when it was one already, as a user may have set)."""
        with self._lock:
            self.depth += 1
            owed = self.owed
        try:
            if owed is not None:  # at one thread already, the restore still owed
                yield
                return
            before = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
            if before == 1:
                yield
                return
            con.execute("SET threads = 1")
            try:
                yield
            finally:
                with self._lock:
                    self.owed = f"SET threads = {before}"
        finally:
            with self._lock:
                self.depth -= 1
