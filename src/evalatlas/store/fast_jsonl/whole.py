"""The fast path's first try for a large plain JSONL file of episodes: the whole file in
one statement and one transaction, or nothing.

DuckDB reads the file itself, on all its threads (``read_json`` with the typed columns
of :data:`~.sql.PLAIN_COLUMNS`), and inserts its rows into ``episodes`` as they come,
writing whole row groups straight into the database file, while msgspec checks every
line's keys and JSON types on a Python thread beside it (:mod:`.checker`, reading the
same file through the chunker, which also takes its SHA-256). Everything the chunked
path (:mod:`.prepare`, :mod:`.commit`) checks is checked the same way here (the same
SQL for the rows and their problems, :func:`.sql.select_rows`; the same redaction gate
pattern; duplicate keys; the same batch completion), but nothing is located: any line
the chunked path would treat specially (an experiment record, a problem, a line the
redaction gate flags, a duplicate key, a line msgspec does not vouch for, a line over
the length limit) stops the statement, the transaction is rolled back and the file goes
through the chunked path from its start, which decides and names lines as before. So
both store the same rows: ``tests/store/fast_jsonl/test_whole.py``, and the hostile
corpus, which runs every case through this path first.

Why: the chunked path stages each chunk in Arrow, in a temporary file and a ``_fast_seen``
table, and commits row groups one after another on one thread, the chain of its wall
time (BENCHMARKS.md, session 22); DuckDB's own parallel insert does none of that.
Measured on this 2-core machine (session 23, same runs, medians): 1M episodes 6.73 s
chunked, ~5.4 s whole, DuckDB's own ``CREATE TABLE AS ... read_json`` 2.75 s; 10M
episodes 62 s chunked, 47 s whole, DuckDB 25-31 s; peak RSS 850 MB at 10M.

Not tried here (the chunked path as before): a lake (other writers), a compressed file or
a stream (DuckDB would read them a second time), a store whose experiments declare
reward ranges narrower than [0, 1] (checked per experiment by the chunked path).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb

from evalatlas import interrupts
from evalatlas.adapters.jsonl import iter_file_chunks
from evalatlas.errors import Problem, StoreError
from evalatlas.pricing import Pricing
from evalatlas.records.limits import current as current_limits
from evalatlas.safe_write import errno_in_text
from evalatlas.store.costs import complete_batch
from evalatlas.store.db import (
    DEFAULT_MEMORY_LIMIT,
    ENV_MEMORY,
    StoreConnection,
    write_error_message,
)
from evalatlas.store.fast_jsonl import sql
from evalatlas.store.fast_jsonl.checker import vouch
from evalatlas.store.redaction import GATE_PATTERN, column_types, gated_columns

WHOLE_MEMORY_LIMIT = "512MB"
"""DuckDB's budget during the statement (unless the user set
:data:`~evalatlas.store.db.ENV_MEMORY`): peak RSS 850 MB at 10M episodes (session 23),
under the 1.2 GB bound; nothing is staged outside DuckDB."""

CHECK_CHUNK_BYTES = 32 << 20
"""The checking thread's chunk size (msgspec checks one at a time, in slices)."""


class Declined(Exception):
    """The whole-file try did not store the file (rolled back): the reason, for the
    ingest report; the chunked path takes the file."""


def eligible(store: StoreConnection, path: Path | str, narrowed: bool) -> bool:
    """Whether to try ``path`` whole: a regular, uncompressed file, into a file store
    (not a lake), with no narrowed reward range stored (``narrowed``)."""
    from evalatlas.adapters.jsonl_stream import is_compressed

    if store.lake is not None or store.many_writers or narrowed:
        return False
    p = Path(path)
    try:
        return p.is_file() and not is_compressed(p)
    except OSError:
        return False


def store_whole(store: StoreConnection, path: Path, source: str, batch_id: int, *,
                pricing: Pricing, hasher: hashlib._Hash | None, max_depth: int,
                progress: Callable[[int], None] | None = None) -> int:
    """Store every line of ``path`` (episodes only) as batch ``batch_id`` in one
    transaction; return how many. Declined (nothing written) when some line needs the
    chunked path; ``hasher`` then holds part of the file (the caller starts a new one).
    An interrupt rolls back and is raised. ``progress`` is called, from the checking
    thread, with the lines checked so far."""
    settings = _settings(store.con)
    try:
        return _insert(store, path, source, batch_id, pricing, max_depth,
                       _Checker(path, source, hasher, store.con, progress))
    finally:
        _restore(store.con, settings)


def _settings(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Set the statement's budget (see :data:`WHOLE_MEMORY_LIMIT`) and DuckDB's default
    threads (one a core: an ingest runs on one, :meth:`~evalatlas.store.db.
    StoreConnection.one_thread`, but this one statement is the whole file); the old
    settings."""
    old = dict(con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN "
        "('enable_progress_bar', 'threads')").fetchall())
    if os.environ.get(ENV_MEMORY) is None:  # the store's default, restored after (the
        # setting reads back rounded: '953.6 MiB' for 1 GB)
        old["memory_limit"] = DEFAULT_MEMORY_LIMIT
        con.execute(f"SET memory_limit = '{WHOLE_MEMORY_LIMIT}'")
    con.execute("SET enable_progress_bar = false")
    con.execute("RESET threads")
    return old


def _restore(con: duckdb.DuckDBPyConnection, old: dict[str, str]) -> None:
    for name, value in old.items():
        with contextlib.suppress(duckdb.Error):
            con.execute(f"SET {name} = {sql.sql_str(value)}")


class _Checker:
    """The checking thread: every chunk of the file vouched for by msgspec as episodes
    only (:attr:`lines`), else the reason to decline (:attr:`reason`), with the
    statement interrupted, since it would be rolled back anyway.

    It runs in a copy of the caller's context (the read limits in force are a context
    variable), and interrupts only while the statement runs (:meth:`running`): a
    DuckDB interrupt stops whatever query the connection runs at that moment."""

    def __init__(self, path: Path, source: str, hasher: hashlib._Hash | None,
                 con: duckdb.DuckDBPyConnection,
                 progress: Callable[[int], None] | None) -> None:
        self.path, self.source, self.hasher = path, source, hasher
        self.con, self.progress = con, progress
        self.reason: str | None = None
        self.lines = 0
        self._lock = threading.Lock()
        self._running = False
        self._stop = threading.Event()
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,),
                                        name="evalatlas-whole-check", daemon=True)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Start checking; inside the block the statement may be interrupted."""
        self._thread.start()
        with self._lock:
            self._running = True
        try:
            yield
        finally:
            with self._lock:
                self._running = False

    def join(self) -> None:
        """Wait for the whole file to be checked."""
        if self._thread.ident is not None:
            self._thread.join()

    def cancel(self) -> None:
        """Stop checking (after its current chunk) and wait for the thread."""
        self._stop.set()
        self.join()

    def _run(self) -> None:
        try:
            self._check()
        except Exception as exc:  # a read error: the chunked path meets and reports it
            self.reason = f"{type(exc).__name__}: {exc}"
        if self.reason is not None:
            with self._lock:
                if self._running:
                    with contextlib.suppress(duckdb.Error):
                        self.con.interrupt()

    def _check(self) -> None:
        verdict = vouch()
        for chunk in iter_file_chunks(self.path, self.source, chunk_bytes=CHECK_CHUNK_BYTES,
                                      hasher=self.hasher):
            if self._stop.is_set():
                self.reason = "stopped"
                return
            if isinstance(chunk, Problem):
                self.reason = chunk.reason
                return
            if chunk.oversized:
                self.reason = "a line is over the length limit"
                return
            others = verdict(chunk.data, chunk.n_lines, chunk.size)
            if others is None:
                self.reason = f"from line {chunk.first_line}: not every line is a clean episode"
                return
            if others:
                self.reason = "experiment records or measurements among the episodes"
                return
            self.lines += chunk.n_lines
            if self.progress is not None:
                self.progress(self.lines)


def _gate(types: dict[str, str]) -> str:
    """SQL: true when some gated cell of the row (:func:`~evalatlas.store.redaction.
    gated_columns`) matches :data:`~evalatlas.store.redaction.GATE_PATTERN`, the row
    gate of the chunked path: the cells joined by newlines and scanned once (measured:
    ~4% faster than one ``regexp_matches`` a column). Joining may flag a match across
    two cells, which only declines the file."""
    cells = []
    for col, kind in gated_columns("episodes", types).items():
        if col in sql.SET_AT_COMMIT:
            continue
        q = f's."{col}"'
        cells.append(f"array_to_string({q}, chr(10))" if kind == "VARCHAR[]"
                     else f"CAST({q} AS VARCHAR)" if kind == "JSON" else q)
    pattern = sql.sql_str(GATE_PATTERN)
    return f"coalesce(regexp_matches(concat_ws(chr(10), {', '.join(cells)}), {pattern}), false)"


def _insert(store: StoreConnection, path: Path, source: str, batch_id: int,
            pricing: Pricing, max_depth: int, check: _Checker) -> int:
    """The transaction: insert, then the checks that need every row, then commit."""
    con = store.con
    max_object = max(1 << 20, current_limits().max_line_bytes + 2)
    types = column_types(con, "episodes")
    typed = f"""(SELECT *, 0::BIGINT AS _line,
          true AS _types_ok, false AS _bad_list, false AS _bad_scores,
          {sql.free_flags(max_depth, huge_in=("findings",))}
        FROM read_json({sql.sql_str(str(path))}, format='newline_delimited',
                       columns={sql.PLAIN_COLUMNS}, maximum_object_size={max_object}))"""
    replaces = bool(con.execute("SELECT EXISTS (SELECT 1 FROM episodes)").fetchall()[0][0])
    try:
        con.execute("BEGIN TRANSACTION")
        with check.running():
            n = con.execute(f"""INSERT INTO episodes BY NAME
                SELECT s.* EXCLUDE (_line, _problem), s.usage_model AS llm_model,
                  {sql.sql_str(source)} AS source_file, {int(batch_id)} AS ingest_batch
                FROM ({sql.select_rows(typed)}) s
                WHERE CASE WHEN s._problem IS NULL AND NOT {_gate(types)} THEN true
                           ELSE error(coalesce(s._problem, 'a cell the redaction gate flags'))
                      END""").fetchall()[0][0]
            check.join()
        if check.reason is not None:
            raise Declined(check.reason)
        if check.lines != n:
            raise Declined(f"{check.lines} lines but {n} rows (blank lines?)")
        dup = con.execute(
            "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE ingest_batch = ? "
            "GROUP BY experiment_id, trajectory_id HAVING count(*) > 1)",
            [batch_id]).fetchall()[0][0]
        if dup:
            raise Declined(f"duplicate trajectory_id: {dup}")
        if replaces:  # the stored episodes of the same keys (as the chunked path's DELETE)
            con.execute("""DELETE FROM episodes WHERE ingest_batch <> $b
                AND (experiment_id, trajectory_id) IN (SELECT (experiment_id, trajectory_id)
                    FROM episodes WHERE ingest_batch = $b)""", {"b": batch_id})
        # models from the stored experiments, computed costs (the chunked path's commit)
        has_models = bool(con.execute(
            "SELECT EXISTS (SELECT 1 FROM experiments WHERE llm_model IS NOT NULL)"
        ).fetchall()[0][0])
        complete_batch(store, batch_id, [], pricing, models_filled=not has_models)
        con.execute("INSERT INTO ingest_batches VALUES (?, now(), now(), 0, ?, 0, 0, ?)",
                    [batch_id, n, [source]])
        con.execute("COMMIT")
    except Declined:
        _rollback(con)
        raise
    except Exception as exc:  # DuckDB's error, or its interrupt by the checking thread
        _rollback(con)
        interrupts.reraise(exc)  # Ctrl-C inside the statement: stop
        check.cancel()
        if errno_in_text(str(exc)) is not None:  # a full or read-only disk: one line
            raise StoreError(write_error_message(store.path, exc)) from exc
        if isinstance(exc, duckdb.FatalException):
            raise  # DuckDB gave up on the store: not the file's fault
        if check.reason is None and not isinstance(exc, duckdb.Error):
            raise  # a bug of ours, not the file's: not hidden behind the chunked path
        raise Declined(check.reason or _first_line(str(exc))) from exc
    except BaseException:
        _rollback(con)
        raise
    finally:
        check.cancel()
    return int(n)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")


def _first_line(text: str) -> str:
    """A DuckDB error's first line (the rest repeats the query)."""
    return text.strip().splitlines()[0] if text.strip() else "DuckDB could not read it"
