"""The fast path's first try for a plain JSONL file: the whole file in one statement and
one transaction, or nothing.

DuckDB reads the file itself, on all its threads (``read_json`` with the typed columns
of :data:`~.sql.PLAIN_COLUMNS`), and inserts its episodes into ``episodes`` as they
come, writing whole row groups straight into the database file, while msgspec checks
every line's keys and JSON types on a Python thread beside it (:mod:`.checker`, reading
the same file through the chunker, which also takes its SHA-256). Everything the
chunked path (:mod:`.prepare`, :mod:`.commit`) checks is checked the same way here (the
same SQL for the rows and their problems, :func:`.sql.select_rows`; the same redaction
gate over each column's distinct values, after the insert; duplicate keys; the same
batch completion), but nothing is located: any
line the chunked path would treat specially (a problem, a cell the redaction gate
flags, a duplicate key, a line msgspec does not vouch for, a blank line or one over the
length limit, a record declaring a reward range) stops the statement or declines after
it, the transaction is rolled back and the file goes through the chunked path from its
start, which decides and names lines as before. A mixed file's experiment records and
measurements (told apart by :func:`~evalatlas.adapters.jsonl.record_kind`'s keys) are
kept aside by the checking thread and written by the exact path in the same
transaction, after the episodes, whose models and costs their batches complete, as
the chunked path's do. So both store the same rows: ``tests/store/fast_jsonl/
test_whole.py``, and the hostile corpus, which runs every case through this path first.

Why: the chunked path stages each chunk in Arrow, in a temporary file and a
``_fast_seen`` table, and commits row groups one after another on one thread, the
chain of its wall time (BENCHMARKS.md, session 22); DuckDB's own parallel insert does
none of that. Measured on this 2-core machine (session 23, ``benchmarks/
bench_ingest.py``, medians of 3, DuckDB's own ``CREATE TABLE AS ... read_json`` of the
same file in the same runs): 1M episodes 4.85 s (DuckDB 2.81, the chunked path 6.61),
the mixed 1M file 4.91 s (3.01; 7.18); 10M episodes 46.7 s (25.2; chunked 59.2 in
earlier runs that hour), the mixed 10M file 47.2 s (27.0); peak RSS at most 854 MB.

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
from evalatlas.adapters.jsonl_stream import Chunk
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
from evalatlas.store.redaction import batch_flagged, column_types, gated_columns

WHOLE_MEMORY_LIMIT = "512MB"
"""DuckDB's budget during the statement (unless the user set
:data:`~evalatlas.store.db.ENV_MEMORY`): peak RSS 746-854 MB at 10M episodes (session
23), under the 1.2 GB bound; nothing is staged outside DuckDB."""

CHECK_CHUNK_BYTES = 32 << 20
"""The checking thread's chunk size (msgspec checks one at a time, in slices)."""

MAX_OTHER_BYTES = 16 << 20
"""Experiment records and measurements kept aside (to be written by the exact path in the
same transaction) up to this many bytes; a file with more takes the chunked path."""

KIND_KEYS = ("agent", "experiment_name", "benchmark_subset", "benchmark", "sample_id")
"""The keys :func:`evalatlas.adapters.jsonl.record_kind` tells records apart by."""

_READ_COLUMNS = sql.PLAIN_COLUMNS[:-1] + "".join(f", {sql.sql_str(k)}: 'JSON'"
                                                 for k in KIND_KEYS) + "}"
"""The typed read's columns: the episode's, and :data:`KIND_KEYS` (absent: NULL)."""

_EPISODE = ("NOT ((agent IS NOT NULL AND (experiment_name IS NOT NULL "
            "OR benchmark_subset IS NOT NULL)) "
            "OR (benchmark IS NOT NULL AND task_id IS NULL AND sample_id IS NULL))")
"""SQL: the line is an episode by :func:`~evalatlas.adapters.jsonl.record_kind`'s rule
(which tests keys, this their values: a key present with ``null`` is told apart
differently, and the count of episodes then differs from msgspec's, which declines)."""


class Declined(Exception):
    """The whole-file try did not store the file (rolled back); the chunked path takes
    the file and reports, as before, what it declines. The reason is for tests and
    debugging: it names no line."""


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


OtherWriter = Callable[[list[tuple[int, bytes]]], None]
"""Writes a file's experiment records and measurements, (line, text) each, through the
exact path inside the whole-file try's transaction (the ingest's batches)."""


def store_whole(store: StoreConnection, path: Path, source: str, batch_id: int, *,
                pricing: Pricing, hasher: hashlib._Hash | None, max_depth: int,
                write_others: OtherWriter,
                progress: Callable[[int], None] | None = None) -> int:
    """Store every episode of ``path`` as batch ``batch_id``, and its other records
    through ``write_others``, in one transaction; return how many episodes. Declined
    (nothing written, ``write_others`` not called) when some line needs the chunked
    path; ``hasher`` then holds part of the file (the caller starts a new one). An
    interrupt rolls back and is raised. ``progress`` is called, from the checking
    thread, with the lines checked so far."""
    settings = _settings(store.con)
    try:
        return _insert(store, path, source, batch_id, pricing, max_depth,
                       _Checker(path, source, hasher, store.con, progress), write_others)
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
        self.lines = 0  # every line checked
        self.others: list[tuple[int, bytes]] = []  # (line, text) of the other records
        self._other_bytes = 0
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

    def _keep(self, chunk: Chunk, others: list[int]) -> bool:
        """Keep the chunk's experiment records and measurements (``others``: lines,
        1-based in the chunk) aside; False (with the reason) when the file should take
        the chunked path instead: one declares a reward range (the chunked path checks
        the episodes after it against it), or they are over :data:`MAX_OTHER_BYTES`."""
        for lineno, raw in chunk.lines_at({chunk.first_line + i - 1 for i in others}):
            if b"reward_range" in raw:
                self.reason = f"line {lineno}: a record declares a reward range"
                return False
            self._other_bytes += len(raw)
            self.others.append((lineno, bytes(raw)))
        if self._other_bytes > MAX_OTHER_BYTES:
            self.reason = "too many experiment records and measurements to keep aside"
            return False
        return True

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
            if others and not self._keep(chunk, others):
                return
            self.lines += chunk.n_lines
            if self.progress is not None:
                self.progress(self.lines)


def _insert(store: StoreConnection, path: Path, source: str, batch_id: int,
            pricing: Pricing, max_depth: int, check: _Checker,
            write_others: OtherWriter) -> int:
    """The transaction: insert the episodes, then the checks that need every row, the
    other records, the batch's completion; commit."""
    con = store.con
    max_object = max(1 << 20, current_limits().max_line_bytes + 2)
    types = column_types(con, "episodes")
    typed = f"""(SELECT *, 0::BIGINT AS _line,
          true AS _types_ok, false AS _bad_list, false AS _bad_scores,
          {sql.free_flags(max_depth, huge_in=("findings",))}
        FROM (SELECT * EXCLUDE ({", ".join(KIND_KEYS)})
              FROM read_json({sql.sql_str(str(path))}, format='newline_delimited',
                             columns={_READ_COLUMNS}, maximum_object_size={max_object})
              WHERE {_EPISODE}))"""
    replaces = bool(con.execute("SELECT EXISTS (SELECT 1 FROM episodes)").fetchall()[0][0])
    wrote = False  # the other records: after them, an error is not the file's to decline
    try:
        with store.atomic():
            with check.running():
                n = con.execute(f"""INSERT INTO episodes BY NAME
                    SELECT s.* EXCLUDE (_line, _problem), s.usage_model AS llm_model,
                      {sql.sql_str(source)} AS source_file, {int(batch_id)} AS ingest_batch
                    FROM ({sql.select_rows(typed)}) s
                    WHERE CASE WHEN s._problem IS NULL THEN true ELSE error(s._problem)
                          END""").fetchall()[0][0]
                check.join()
            if check.reason is not None:
                raise Declined(check.reason)
            if check.lines != n + len(check.others):
                raise Declined(f"{check.lines} lines but {n} episodes and "
                               f"{len(check.others)} other records (blank lines?)")
            dup = _duplicates(con, batch_id)
            if dup:
                raise Declined(f"duplicate trajectory_id: {dup}")
            gated = {col: kind for col, kind in gated_columns("episodes", types).items()
                     if col not in sql.SET_AT_COMMIT}  # not the file's (as the chunked path)
            if batch_flagged(con, "episodes", batch_id, gated):
                raise Declined("a cell the redaction gate flags")
            if replaces:  # the stored episodes of the same keys (the chunked path's DELETE)
                con.execute("""DELETE FROM episodes WHERE ingest_batch <> $b
                    AND (experiment_id, trajectory_id) IN (
                        SELECT (experiment_id, trajectory_id) FROM episodes
                        WHERE ingest_batch = $b)""", {"b": batch_id})
            if check.others:
                wrote = True
                write_others(check.others)  # their batches complete their episodes
            # models from the stored experiments, computed costs (the chunked path's)
            has_models = bool(con.execute(
                "SELECT EXISTS (SELECT 1 FROM experiments WHERE llm_model IS NOT NULL)"
            ).fetchall()[0][0])
            complete_batch(store, batch_id, [], pricing, models_filled=not has_models)
            if n:  # a file of experiment records only has its batches from write_others
                con.execute("INSERT INTO ingest_batches VALUES "
                            "(?, now(), now(), 0, ?, 0, 0, ?)", [batch_id, n, [source]])
    except Declined:
        raise
    except Exception as exc:  # DuckDB's error, or its interrupt by the checking thread
        interrupts.reraise(exc)  # Ctrl-C inside the statement: stop
        check.cancel()
        if errno_in_text(str(exc)) is not None:  # a full or read-only disk: one line
            raise StoreError(write_error_message(store.path, exc)) from exc
        if isinstance(exc, duckdb.FatalException) or wrote:
            raise  # DuckDB gave up on the store, or a write of ours failed
        if check.reason is None and not isinstance(exc, duckdb.Error):
            raise  # a bug of ours, not the file's: not hidden behind the chunked path
        raise Declined(check.reason or _first_line(str(exc))) from exc
    finally:
        check.cancel()
    return int(n)


def _duplicates(con: duckdb.DuckDBPyConnection, batch_id: int) -> int:
    """How many keys (experiment id, trajectory id) batch ``batch_id`` holds more than
    once. First by the fast path's key hash (:func:`~.sql.key_hash`; 0 in all but a
    few in a million clean 10M batches), then, only when that finds any, by the keys
    themselves (a collision is no duplicate). Why: grouping 10M pairs of strings took
    1.75 s (its hash table over DuckDB's budget); the hashes' count ~0.11 s a million
    (session 23; DuckDB's bare ``hash`` of the joined key, ~0.05 s, collides on regular
    ids, see ``key_hash``)."""
    hashed = con.execute(
        f"SELECT count(*) - count(DISTINCT {sql.key_hash()}) "
        "FROM episodes WHERE ingest_batch = ?", [batch_id]).fetchall()[0][0]
    if not hashed:
        return 0
    return int(con.execute(
        "SELECT count(*) FROM (SELECT 1 FROM episodes WHERE ingest_batch = ? "
        "GROUP BY experiment_id, trajectory_id HAVING count(*) > 1)",
        [batch_id]).fetchall()[0][0])


def _first_line(text: str) -> str:
    """A DuckDB error's first line (the rest repeats the query)."""
    return text.strip().splitlines()[0] if text.strip() else "DuckDB could not read it"
