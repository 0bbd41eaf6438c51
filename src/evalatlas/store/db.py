"""The store: one DuckDB file holding everything ingested.

Writes go through :meth:`StoreConnection.write_batch`, one transaction per batch: a killed process
leaves the store as it was before the batch (DuckDB rolls back an uncommitted WAL on
open). Upserts use the tables' primary keys, so writing the same records twice changes
nothing and a retried episode replaces the earlier one.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import functools
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa

from evalatlas import interrupts
from evalatlas.errors import Problem, StoreError
from evalatlas.pricing import Pricing
from evalatlas.safe_write import errno_in_text, reason
from evalatlas.store.columnar import text_repeats
from evalatlas.store.costs import complete_batch
from evalatlas.store.redaction import column_types, redact_arrow, redact_rows
from evalatlas.store.schema import (
    DDL,
    EPISODE_COLUMNS,
    EXPERIMENT_COLUMNS,
    KEYS,
    MEASUREMENT_COLUMNS,
    MIGRATIONS,
    QUARANTINE_COLUMNS,
    SCHEMA_VERSION,
    declared_types,
    file_store_ddl,
)
from evalatlas.store.worker_threads import RESTORE_DEFAULT, WorkerThreads

DEFAULT_DB = "evalatlas.duckdb"
ENV_DB = "EVALATLAS_DB"
ENV_MEMORY = "EVALATLAS_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "1GB"
"""DuckDB's own budget (it spills to disk beyond it), so ingest memory stays bounded."""
READ_MEMORY_LIMIT_MIB = 3072
"""DuckDB's budget inside :meth:`StoreConnection.read_budget` (MiB; at most 40% of the
machine's memory): the summary's one large aggregation, 10M (group, task) cells at 100M
episodes, holds ~2.7 GB and spilled 1.3 GB to disk (written and read back) under the
1 GB default (2026-11-27, lake of 100M: the process peaks at 3.0 GB, < 4 GB)."""

@functools.cache
def _arrow_types() -> dict[str, pa.DataType]:
    """DuckDB column type -> Arrow type (pyarrow is imported on first use: it is a
    tenth of a second of start-up that the fast JSONL path never needs)."""
    import pyarrow as pa

    return {
        "VARCHAR": pa.string(),
        "JSON": pa.string(),
        "DOUBLE": pa.float64(),
        "BIGINT": pa.int64(),
        "INTEGER": pa.int32(),
        "BOOLEAN": pa.bool_(),
        "VARCHAR[]": pa.list_(pa.string()),
        "DOUBLE[]": pa.list_(pa.float64()),
        "TIMESTAMP": pa.timestamp("us"),
    }


SMALL_BATCH = 512
"""Batches up to this many rows skip Arrow (see :meth:`StoreConnection._insert_small`)."""
SMALL_CHUNK = 64
"""Rows per INSERT statement in the small-batch path."""


@functools.cache
def schema_fingerprint() -> str:
    """SHA-256 (16 hex digits) of :data:`DDL` and :data:`MIGRATIONS`: a store whose
    ``meta.schema_ddl`` holds it has exactly these tables and columns (see
    :meth:`StoreConnection._schema_current`). Any edit of either text changes it, so a
    new column is never skipped, whether or not :data:`SCHEMA_VERSION` was bumped."""
    return hashlib.sha256((DDL + MIGRATIONS).encode()).hexdigest()[:16]


def resolve_location(db: str | Path | None = None) -> str:
    """``--db`` if given, else ``$EVALATLAS_DB``, else ``./evalatlas.duckdb``, as text (a
    ``ducklake:`` location may hold a password: never print it, see
    :attr:`StoreConnection.path`)."""
    if db:
        return str(db)
    return os.environ.get(ENV_DB) or DEFAULT_DB


def resolve_db_path(db: str | Path | None = None) -> Path:
    """The store's name as evalatlas prints it: the file, or a lake's location with its
    password redacted (:attr:`LakeLocation.display`)."""
    location = resolve_location(db)
    if location.startswith("ducklake:"):
        from evalatlas.store.lake_location import LakeLocation

        with contextlib.suppress(ValueError):
            return Path(LakeLocation.parse(location).display)
    return Path(location)


def _memory_limit() -> str:
    value = os.environ.get(ENV_MEMORY, DEFAULT_MEMORY_LIMIT)
    if not value.replace(".", "").isalnum():
        raise StoreError(f"{ENV_MEMORY}={value!r} is not a size such as 1GB or 512MB")
    return value


def private_temp_directory(path: Path | None = None) -> str:
    """A spill folder of this DuckDB instance alone: ``<store file>.tmp-<pid>-<random>``
    beside a store file (same disk, as DuckDB's own ``<file>.tmp``), else (in-memory
    instances: lakes, ``:memory:``, frames) ``evalatlas-duckdb-<pid>-<random>`` in the
    system's temp folder. Not created here: DuckDB creates it when it first spills and
    removes it at close.

    Why: DuckDB's default for an in-memory instance is ``.tmp`` in the working folder,
    and for a file ``<file>.tmp``, shared by every process there; each instance names
    its files ``duckdb_temp_storage_<size>-0.tmp`` and the one that created the folder
    removes it at close, so two summaries of one lake (or two readers of one file)
    overwrote and then deleted each other's spilled blocks ("Could not read enough
    bytes from file .tmp/duckdb_temp_storage_...", or worse, another's data)."""
    import secrets
    import tempfile

    tag = f"{os.getpid()}-{secrets.token_hex(4)}"
    if path is not None and str(path) != ":memory:":
        return f"{path}.tmp-{tag}"
    return str(Path(tempfile.gettempdir()) / f"evalatlas-duckdb-{tag}")


def use_private_temp_directory(con: Any, path: Path | None = None) -> None:
    """Give the DuckDB instance of ``con`` its :func:`private_temp_directory`, unless it
    has one already: connections to one file in one process share one instance (and
    DuckDB refuses to move a spill folder in use)."""
    current = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    if not current or Path(current).name.endswith(".tmp"):  # DuckDB's default
        con.execute("SET temp_directory = ?", [private_temp_directory(path)])


def _is_lock_error(exc: BaseException) -> bool:
    return "lock" in str(exc).lower() and "conflicting" in str(exc).lower()


def open_error_message(path: Path, exc: BaseException, wait: float = 0.0) -> str:
    """One line naming the store file, what went wrong and what to do about it."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if _is_lock_error(exc):
        waited = f" (waited {wait:g} s)" if wait else ""
        return (f"store {path} is in use by another process{waited}; retry later or pass "
                f"--wait SECONDS to wait for it ({text})")
    if isinstance(exc, OSError) or errno_in_text(text) is not None:
        return write_error_message(path, exc)
    return damaged_message(path, exc)


def damaged_message(path: Path, exc: BaseException) -> str:
    """The one "store is damaged" line, whichever command met the damage (at open or in a
    query: a file cut short fails only when the missing blocks are read)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"store {path} is damaged or not an evalatlas store ({text}); move it aside "
            f"(mv {path} {path}.broken) and run `evalatlas ingest` again to rebuild it")


DAMAGE_WORDS = ("could not read enough bytes", "corrupt", "checksum", "not a valid duckdb",
                "invalid magic", "database has been invalidated", "serialization error",
                "failed to read database header")
"""Words in DuckDB's errors that mean the store file itself is damaged."""


def is_damage(exc: BaseException) -> bool:
    """Whether a DuckDB error (at open or in a query) says the store file is damaged."""
    text = str(exc).lower()
    return any(w in text for w in DAMAGE_WORDS)


def write_error_message(path: Path, exc: BaseException) -> str:
    """One line for a store that cannot be opened or written because of the disk: full,
    read-only (a read-only folder or file system, or no permission), or another OS error.
    Reading commands still work on a read-only store, and the message says so."""
    code = exc.errno if isinstance(exc, OSError) else errno_in_text(str(exc))
    if code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (f"cannot write the store {path}: read-only ({reason(exc)}); reading "
                "commands (summary, report, export ...) still work on it")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (f"no space left on the device holding {path.parent} (writing the store "
                f"{path}); the store keeps what it held before plus whole batches only")
    return f"cannot open store {path}: {reason(exc)}"


def problem_key(p: Problem) -> str:
    text = "\x1f".join(str(x) for x in (p.file, p.line, p.record, p.field, p.reason))
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


_default_wait = [0.0]
_default_lake: dict[str, Any] = {"data_path": None, "snapshot": None}


def set_default_wait(seconds: float) -> None:
    """How long every store opened later in this process retries a held lock, unless
    its opener says otherwise (the CLI's ``--wait``: readers and writers alike)."""
    _default_wait[0] = max(0.0, float(seconds))


_lake_reads: list[dict[str, Any]] = []


def lake_reads() -> dict[str, Any] | None:
    """What the lakes opened in this process read, for a result's ``meta``: ``{"location":
    <redacted>, "snapshot": N}`` of the last lake opened (None: no lake was opened).
    ``snapshot`` is DuckLake's ``snapshot_id`` a reader was pinned to (None for a writer,
    which writes new snapshots)."""
    return dict(_lake_reads[-1]) if _lake_reads else None


def forget_lake_reads() -> None:
    """Start a new record for :func:`lake_reads` (the CLI does, once per command)."""
    _lake_reads.clear()


def set_default_lake(*, data_path: str | None = None, snapshot: int | None = None) -> None:
    """The data path and snapshot every lake opened later in this process uses unless its
    opener says otherwise (the CLI's ``--data-path`` and ``--snapshot``). Ignored by
    file stores."""
    _default_lake.update(data_path=data_path, snapshot=snapshot)


MODEL_KEY_SQL = "evalatlas_model"
"""SQL name of :func:`evalatlas.pricing.names.normalise_model_name` on a store's
connection: ``evalatlas_model(e.llm_model)`` is the one model of every spelling
(``openai/neulab/claude-sonnet-4-20250514`` and ``anthropic/claude-sonnet-4-20250514``
are ``claude-sonnet-4-20250514``), so ``--by model`` groups a model once."""


@functools.lru_cache(maxsize=65536)
def _model_key(name: str) -> str:
    """:func:`normalise_model_name` of one stored name, each distinct name computed once."""
    from evalatlas.pricing.names import normalise_model_name

    return normalise_model_name(name)


def register_functions(con: Any) -> None:
    """The Python functions queries may call (:data:`MODEL_KEY_SQL`), on ``con``.

    A native (row-wise) UDF, not an Arrow one: on duckdb 1.5.5 an Arrow UDF's returned
    strings are read after pyarrow freed them (duckdb/duckdb#20606: ``--by model`` keys came
    back as ``\\x00\\x00...onnet-4-5`` or "Invalid unicode"); the native path copies each
    result. With the cache it costs ~1.5 us per row (2M rows: 2.9 s against 1.9 s)."""
    try:
        con.create_function(MODEL_KEY_SQL, _model_key, ["VARCHAR"], "VARCHAR", type="native",
                            null_handling="default", side_effects=False)
    except duckdb.CatalogException as exc:
        # a second connection to a file this process already has open (read-only twice:
        # ea.summary(path) beside ea.open(path, read_only=True)) shares its catalog, and
        # the function with it; that store is not damaged
        if "already exists" not in str(exc):
            raise


class ClosedConnection:
    """What :attr:`StoreConnection.con` is after :meth:`StoreConnection.close`: every use raises a
    :class:`StoreError` saying the store is closed, where DuckDB would raise its own
    "Connection already closed!" from deep inside a query."""

    def __init__(self, path: Path | str) -> None:
        self._path = path

    def close(self) -> None:
        """Closing again does nothing (as DuckDB's own close)."""

    def __getattr__(self, name: str) -> Any:
        raise StoreError(f"store {self._path} is closed; open it again (ea.open) to use it")


class StoreConnection:
    """A connection to one store: a DuckDB file, or a DuckLake (``ducklake:...``, see
    :mod:`evalatlas.store.lake`). Use as a context manager."""

    lake: Any = None
    """The :class:`~evalatlas.store.lake_location.LakeLocation` of a lake, else None."""
    snapshot: int | None = None
    """The lake snapshot a reader reads (pinned at open), else None."""

    _atomic = False
    """True inside :meth:`atomic`: :meth:`write_batch` then joins the caller's transaction
    instead of committing each batch."""

    _con: duckdb.DuckDBPyConnection
    _threads: WorkerThreads

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection (a cursor, for a :meth:`cursor_view`). Using it outside
        a write first restores the worker threads a write left owed
        (:mod:`evalatlas.store.worker_threads`)."""
        con = self._con
        threads = self._threads
        if threads.owed is not None and not threads.depth:
            threads.pay(con)
        return con

    @con.setter
    def con(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def __init__(self, path: str | Path | None = None, *, read_only: bool = False,
                 wait: float | None = None, create: bool = True,
                 data_path: str | Path | None = None, snapshot: int | None = None) -> None:
        """Open (or create) the store. ``wait``: seconds to keep retrying while another
        process holds the lock (``--wait``), instead of failing at once; None: the
        process default (:func:`set_default_wait`, 0 unless the CLI's ``--wait`` set it).
        ``create=False``: a missing store is an error and nothing is created. A new
        store's folder must exist (:mod:`evalatlas.safe_write`: no parent folders are
        created). A ``ducklake:`` location opens a lake (``data_path``: where a new lake's
        Parquet files go; ``snapshot``: read that earlier snapshot; both default to
        :func:`set_default_lake`'s)."""
        self._location = resolve_location(path)
        self.path = resolve_db_path(path)
        self.read_only = read_only
        self._threads = WorkerThreads()
        if self._location.startswith("ducklake:"):
            self._open_lake(read_only=read_only, wait=wait, create=create,
                            data_path=data_path, snapshot=snapshot)
            return
        if snapshot is not None:
            from evalatlas.errors import ArgumentError

            raise ArgumentError("snapshot: only a lake (a ducklake: location) has snapshots; "
                                f"{self.path} is a DuckDB file")
        memory = str(self.path) == ":memory:"
        if not memory and (read_only or not create) and not self.path.exists():
            raise StoreError(f"store {self.path} does not exist; run `evalatlas ingest` first")
        if not memory and not read_only and not self.path.parent.is_dir():
            raise StoreError(f"cannot create the store {self.path}: the folder "
                             f"{self.path.parent} does not exist (evalatlas does not create "
                             "parent folders; create it first)")
        wait = _default_wait[0] if wait is None else wait
        deadline = time.monotonic() + max(0.0, wait)
        delay = 0.1
        while True:
            try:
                self._open(read_only)
                break
            except (duckdb.Error, OSError) as exc:
                remaining = deadline - time.monotonic()
                if _is_lock_error(exc) and remaining > 0:
                    # the last sleep is cut to the deadline, and one more try follows it:
                    # --wait N waits N seconds, not the last whole backoff step short of N
                    time.sleep(min(delay, remaining))
                    delay = min(delay * 2, 2.0)
                    continue
                raise StoreError(open_error_message(self.path, exc, wait)) from exc

    def _open_lake(self, *, read_only: bool, wait: float | None, create: bool,
                   data_path: str | Path | None, snapshot: int | None) -> None:
        from evalatlas.store.lake import open_lake
        from evalatlas.store.lake_location import LakeLocation

        loc = LakeLocation.parse(self._location, data_path if data_path is not None
                                 else _default_lake["data_path"])
        snap = snapshot if snapshot is not None else _default_lake["snapshot"]
        self.lake = loc
        wait = _default_wait[0] if wait is None else wait
        con, self.snapshot = open_lake(loc, read_only=read_only, create=create,
                                       snapshot=snap, wait=wait)
        # a LakeConnection is a DuckDB connection whose write transactions hold the
        # commit lock; it forwards everything else to the connection it wraps
        self.con = cast("duckdb.DuckDBPyConnection", con)
        _lake_reads.append({"location": loc.display, "snapshot": self.snapshot})
        try:
            register_functions(self.con)
            self.con.execute(f"SET memory_limit = '{_memory_limit()}'; SET "
                             "preserve_insertion_order = false; SET enable_progress_bar = false")
            use_private_temp_directory(self.con)
        except BaseException:
            self.con.close()
            raise
        self._init_caches()

    @property
    def many_writers(self) -> bool:
        """True on a lake that other processes may write while this one does: the rows
        stored can change between two of this process's transactions."""
        return self.lake is not None and self.lake.kind == "postgres"

    def reopened(self, *, read_only: bool = False) -> StoreConnection:
        """A new StoreConnection at the same location (a lake's password included, which
        :attr:`path` redacts)."""
        data_path = self.lake.data_path if self.lake is not None else None
        return type(self)(self._location, read_only=read_only, data_path=data_path)

    def _open(self, read_only: bool) -> None:
        # a file DuckDB creates now has no tables: no need to look for the schema (a
        # failed lookup raises, ~1 ms)
        new = str(self.path) == ":memory:" or not self.path.exists()
        # a writable store starts on one thread, DuckDB's default owed until a read
        # (:mod:`evalatlas.store.worker_threads`): an ingest never starts a worker
        self.con = duckdb.connect(str(self.path), read_only=read_only,
                                  config={} if read_only else {"threads": 1})
        try:
            register_functions(self.con)
            # DuckDB's own progress bar writes to stdout, which would corrupt --format json
            # output; the CLI draws its own (rich, on stderr).
            self.con.execute(
                f"SET memory_limit = '{_memory_limit()}'; SET preserve_insertion_order = false; "
                "SET enable_progress_bar = false")
            use_private_temp_directory(self.con, self.path)
            if not read_only and (new or not self._schema_current()):
                # one transaction: an interrupt leaves no half schema; one thread, as
                # an ingest's statements (:meth:`one_thread`: 7 -> 4 ms of CPU)
                with self.one_thread():
                    self.con.execute("BEGIN TRANSACTION")
                    self.con.execute(file_store_ddl())
                    self.con.execute(MIGRATIONS)
                    # a DELETE and a plain INSERT: INSERT OR REPLACE into the new
                    # table cost 2.2 ms of CPU, these two 0.9
                    self.con.execute(
                        "DELETE FROM meta WHERE key IN ('schema_version', 'schema_ddl')")
                    self.con.execute(
                        "INSERT INTO meta VALUES ('schema_version', ?), ('schema_ddl', ?)",
                        [str(SCHEMA_VERSION), schema_fingerprint()])
                    self.con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error, RuntimeError):
                self._con.execute("ROLLBACK")
            self._con.close()
            raise
        if not read_only:
            self._threads.owed = RESTORE_DEFAULT
        self._init_caches()

    def _schema_current(self) -> bool:
        """Whether the store's tables are those of :data:`DDL` and :data:`MIGRATIONS`
        already (its ``meta`` row ``schema_ddl`` is this code's
        :func:`schema_fingerprint`): one cheap read instead of the DDL, the migrations and
        a commit at every open (~10 ms of a small ingest's ~0.2 s, and the commit left a
        WAL for the close to checkpoint). A store written by another version, or before
        the fingerprint existed, gets the DDL and migrations as before."""
        try:
            row = self.con.execute(
                "SELECT value FROM meta WHERE key = 'schema_ddl'").fetchone()
        except duckdb.CatalogException:  # a new store: no meta table yet
            return False
        return row is not None and row[0] == schema_fingerprint()

    def _init_caches(self) -> None:
        self._held_before = {}
        self._schemas: dict[str, pa.Schema] = {}
        self._column_types: dict[str, dict[str, str]] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; later use raises "store ... is closed" (a
        :class:`StoreError`). Closing twice is harmless."""
        con = self._con  # not .con: closing pays no owed threads
        self.con = cast("duckdb.DuckDBPyConnection", ClosedConnection(self.path))
        self._threads = WorkerThreads()
        con.close()

    @property
    def closed(self) -> bool:
        """True after :meth:`close` (and when opening failed)."""
        return isinstance(getattr(self, "_con", None), ClosedConnection | None)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "read-only" if self.read_only else "open"
        return f"<{type(self).__name__} {str(self.path)!r} ({state})>"

    def _repr_html_(self) -> str:
        import html

        return f"<code>{html.escape(repr(self))}</code>"

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Everything written inside the block is one transaction: all of it is committed
        at the end, or (on any error, or a kill) none of it.

        Why: ingest commits every batch on its own so a huge local ingest keeps what it
        finished; a submission to ``evalatlas serve`` must be all or nothing. Nested use
        joins the outer transaction."""
        if self._atomic:
            yield
            return
        self.con.execute("BEGIN TRANSACTION")
        self._atomic = True
        try:
            yield
        except BaseException:
            with contextlib.suppress(duckdb.Error, RuntimeError):
                self.con.execute("ROLLBACK")
            raise
        else:
            try:
                self.con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error, RuntimeError):
                    self.con.execute("ROLLBACK")
                raise
        finally:
            self._atomic = False

    @contextlib.contextmanager
    def one_thread(self) -> Iterator[None]:
        """Every query inside the block runs in the thread that issues it (DuckDB's
        ``threads`` 1), and the setting is restored after it.

        Why: an ingest's statements each touch a batch of at most tens of thousands of
        rows, and waking DuckDB's worker threads for them costs more CPU than the work
        they share (duckdb 1.5.5, a 10,000-row SWE-bench batch: its Arrow insert 35 ->
        13 ms of CPU, and the same rows stored in the same size); the fast JSONL path
        runs single-threaded for the same reason. A lake is left alone: its writes
        wait on PostgreSQL round trips and Parquet uploads, where the threads overlap.
        The setting is the instance's: readers sharing it run single-threaded meanwhile.
        The number before is restored when the connection is next used outside such a
        block (:mod:`evalatlas.store.worker_threads`)."""
        if self.lake is not None or self.read_only:
            yield
            return
        with self._threads.single(self._con):
            yield

    @contextlib.contextmanager
    def read_budget(self) -> Iterator[None]:
        """Inside the block DuckDB may hold :data:`READ_MEMORY_LIMIT_MIB` before it
        spills to disk (the store's budget again after it), unless
        ``EVALATLAS_MEMORY_LIMIT`` is set: the user's budget stays the budget.

        Why: the 1 GB default bounds an ingest, whose batches never need more; a read
        that aggregates millions of groups at once (the summary's cells) spilled most of
        its hash table to disk under it, and writing and reading it back cost more than
        the aggregation (sys time on this machine). The setting is the instance's:
        other queries sharing it get the larger budget meanwhile."""
        if os.environ.get(ENV_MEMORY):
            yield
            return
        try:
            ram_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
        except (ValueError, OSError):
            ram_mib = 0
        size = min(READ_MEMORY_LIMIT_MIB, int(ram_mib * 0.4)) if ram_mib else READ_MEMORY_LIMIT_MIB
        self.con.execute(f"SET memory_limit = '{size}MiB'")
        try:
            yield
        finally:
            # the store's own budget, as opened (current_setting's text is rounded)
            with contextlib.suppress(duckdb.Error, RuntimeError):
                self.con.execute(f"SET memory_limit = '{_memory_limit()}'")

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of this store's DuckDB instance (a query streamed in chunks, another
        thread's reads) that finds the store's tables by their bare names: on a lake its
        default catalog is the lake, as a file store's cursor's is the file (a plain
        DuckDB cursor starts in ``memory``). Reads only: on a lake its writes would not
        take the commit lock."""
        cur = self.con.cursor()
        if self.lake is not None:
            from evalatlas.store.lake import ALIAS

            cur.execute(f"USE {ALIAS}")
        return cur

    def cursor_view(self) -> StoreConnection:
        """Another :class:`StoreConnection` on this store's DuckDB instance with its own cursor, for
        one thread: it reads the last committed state (DuckDB's MVCC) while this
        connection may be writing. Close it when done; the instance stays open."""
        view = type(self).__new__(type(self))
        # the worker threads' state is shared: a view's first read pays what a write
        # of this connection left owed
        view.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_con"})
        view._atomic = False
        view._schemas, view._column_types = {}, {}
        view.con = self.cursor()  # the instance's functions are the cursor's too
        view.con.execute("SET enable_progress_bar = false")
        if self.lake is not None:  # the default catalog is a connection's own setting
            from evalatlas.store.lake import ALIAS

            view.con.execute(f"USE {ALIAS}")
        return view

    # -- reading --------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Run SQL and return rows as dicts (for small results)."""
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def query_arrays(self, sql: str, params: Sequence[Any] | None = None) -> dict[str, Any]:
        """Run SQL and return columns as numpy arrays (for large numeric results)."""
        return self.con.execute(sql, params or []).fetchnumpy()

    def count(self, table: str) -> int:
        return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    # -- writing --------------------------------------------------------------
    def arrow_schema(self, table: str, columns: list[str]) -> pa.Schema:
        """The Arrow schema of ``table``'s ``columns`` (the store's column types)."""
        return self._schema(table, columns)

    def _schema(self, table: str, columns: list[str]) -> pa.Schema:
        import pyarrow as pa

        if table not in self._schemas:
            types = self._types(table)
            self._schemas[table] = pa.schema([(c, _arrow_types()[types[c]]) for c in columns])
        return self._schemas[table]

    def _types(self, table: str) -> dict[str, str]:
        """Column -> DuckDB type of one of the record tables. A file store's are the
        schema's own (:func:`~evalatlas.store.schema.declared_types`: opening it for
        writing brought its tables to :data:`DDL` and :data:`MIGRATIONS`), with no
        ``DESCRIBE`` (two of them were ~2% of a 10,000-episode ingest); a lake's are
        read from it."""
        if table not in self._column_types:
            self._column_types[table] = (
                declared_types(table) if self.lake is None and not self.read_only
                else column_types(self.con, table))
        return self._column_types[table]

    def _insert(self, table: str, columns: list[str], rows: list[tuple]) -> None:
        """Upsert ``rows``; every text cell is redacted first (store.redaction)."""
        if not rows:
            return
        rows = redact_rows(table, columns, self._types(table), rows)
        if len(rows) <= SMALL_BATCH:
            self._insert_small(table, columns, rows)
            return
        import pyarrow as pa

        schema = self._schema(table, columns)
        cols = list(zip(*rows, strict=True))
        arrays = [pa.array(list(col), type=schema.field(i).type) for i, col in enumerate(cols)]
        self._upsert_arrow(table, pa.Table.from_arrays(arrays, schema=schema))

    def insert_table(self, table: str, rows: pa.Table) -> None:
        """Upsert an Arrow table of ``table``'s columns (the columnar path,
        :mod:`evalatlas.store.columnar`), its text cells redacted by
        :func:`~evalatlas.store.redaction.redact_arrow` (one RE2 scan of each column's
        distinct values in Arrow finds the rows that may hold a credential, and only
        those are redacted, by the exact path's
        :func:`~evalatlas.store.redaction.redact_rows`); all in one upsert. Call inside a
        transaction."""
        if rows.num_rows == 0:
            return
        self._upsert_arrow(table, redact_arrow(table, rows, self._types(table)))

    def _upsert_arrow(self, table: str, rows: pa.Table) -> None:
        """Upsert an Arrow table as it is (no redaction: callers redact first)."""
        if rows.num_rows == 0:
            return
        name = f"_evalatlas_{table}_arrow"
        self.con.register(name, rows)
        try:
            self.upsert_from(table, name)
        finally:
            self.con.unregister(name)

    def _insert_small(self, table: str, columns: list[str], rows: list[tuple]) -> None:
        """A few rows upserted by two statements: a DELETE of their keys (passed as
        lists) and parameterised INSERTs of ``SMALL_CHUNK`` rows each. ``rows`` must
        have unique keys (as :meth:`upsert_from`'s source).

        Why not Arrow: pyarrow's list-to-array conversion imports pandas when it is
        installed (about a second), which ingest of 50 experiment rows should not pay.
        Why not a staging table, as before: its CREATE, INSERT, DELETE ... IN (SELECT),
        INSERT ... SELECT and DROP cost ~10 ms for 20 experiment rows, half of it the
        statements themselves.
        """
        keys = KEYS[table]
        at = [columns.index(k) for k in keys]
        names = ", ".join(keys)
        lists = ", ".join(f"unnest(?::VARCHAR[]) AS {k}" for k in keys)
        if self._may_hold_rows(table):
            self.con.execute(f"DELETE FROM {table} WHERE ({names}) IN "
                             f"(SELECT ({names}) FROM (SELECT {lists}))",
                             [[row[i] for row in rows] for i in at])
        cols = ", ".join(columns)
        one = "(" + ", ".join("?" * len(columns)) + ")"
        for start in range(0, len(rows), SMALL_CHUNK):
            chunk = rows[start:start + SMALL_CHUNK]
            self.con.execute(f"INSERT INTO {table} ({cols}) VALUES "
                             + ", ".join([one] * len(chunk)), [v for row in chunk for v in row])

    def upsert_from(self, table: str, source: str) -> None:
        """Replace rows of ``table`` whose key appears in ``source``, then insert ``source``.

        Call inside a transaction. ``source`` must have the table's columns in order and
        unique keys.
        """
        keys = ", ".join(KEYS[table])
        if self._may_hold_rows(table):
            self.con.execute(
                f"DELETE FROM {table} WHERE ({keys}) IN (SELECT ({keys}) FROM {source})")
        self.con.execute(f"INSERT INTO {table} SELECT * FROM {source}")

    def _may_hold_rows(self, table: str) -> bool:
        """False when ``table`` of a file store is empty (its row count, which DuckDB
        keeps: ~0.2 ms), so that an upsert into it need not look for rows to replace:
        the DELETE by the batch's keys cost 2.4 ms for 10,000 episodes of a new store,
        and 1 ms for its 20 experiments. A lake's count would read its catalog: always
        True there."""
        if self.lake is not None:
            return True
        held = bool(self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
        self._held_before.setdefault(table, held)
        return held

    _held_before: dict[str, bool]
    """Table -> whether it held rows before the batch being written inserted into it (the
    first :meth:`_may_hold_rows` of each table since :meth:`write_batch` began)."""

    def _held_no_records(self) -> bool:
        """True when this file store held no experiment and no episode before the batch
        being written: the answers :meth:`_may_hold_rows` gave before its inserts (no
        query of its own), else a count (a table not inserted into is as it was). A lake:
        False (its counts would read its catalog)."""
        if self.lake is not None:
            return False
        return not any(self._held_before[t] if t in self._held_before
                       else self._may_hold_rows(t) for t in ("experiments", "episodes"))

    def clear_quarantine(self, sources: list[str]) -> None:
        """Drop quarantine rows of these sources (files under a directory source too),
        in one statement (one per source cost ~0.4 ms each: 8 ms for the 20 systems of
        the SWE-bench Verified folder)."""
        if not sources or not self._may_hold_rows("quarantine"):
            return
        self.con.execute(
            "DELETE FROM quarantine WHERE list_contains(?::VARCHAR[], source_file) "
            "OR list_bool_or(list_transform(?::VARCHAR[], lambda p: starts_with(source_file, p)))",
            [sources, [src.rstrip("/") + "/" for src in sources]])

    def next_batch_id(self) -> int:
        """The id of the next ingest batch: one more than the newest stored. On a lake
        that many processes write, that would hand two writers the same id, so there it
        is the microseconds since 1970 (increasing, unique per process, and across
        processes unless two start a batch in the same microsecond)."""
        row = self.con.execute("SELECT coalesce(max(batch_id), 0) + 1 FROM ingest_batches")
        stored = int(row.fetchall()[0][0])
        if not self.many_writers:
            return stored
        last = getattr(self, "_last_batch_id", 0)
        self._last_batch_id = max(stored, last + 1, time.time_ns() // 1000)
        return self._last_batch_id

    def reserve_batch_ids(self, n: int) -> int:
        """The first of ``n`` consecutive batch ids for batches written now (rows staged
        elsewhere and copied in, :mod:`evalatlas.store.staging`): :meth:`next_batch_id`,
        and on a lake that many processes write, this process's next id after them."""
        first = self.next_batch_id()
        if self.many_writers:
            self._last_batch_id = first + max(0, n - 1)
        return first

    def remember_file(self, path: str, size: int, mtime_ns: int, sha256: str) -> None:
        """Record an ingested input file (``files``: skipped next time when unchanged)."""
        self.remember_files([(path, size, mtime_ns, sha256)])

    def remember_files(self, files: list[tuple[str, int, int, str]]) -> None:
        """Record ingested input files, (path, size, mtime_ns, sha256) each, in one
        transaction (the caller's inside :meth:`atomic`)."""
        if not files:
            return
        own = not self._atomic  # inside atomic(): the caller's transaction commits
        if own:
            self.con.execute("BEGIN TRANSACTION")
        try:
            self._insert_files(files)
            if own:
                self.con.execute("COMMIT")
        except BaseException:
            if own:
                with contextlib.suppress(duckdb.Error, RuntimeError):
                    self.con.execute("ROLLBACK")
            raise

    def _insert_files(self, files: list[tuple[str, int, int, str]]) -> None:
        """Upsert ``files`` rows by path, in the open transaction (no keys on a lake:
        delete, then insert)."""
        if not files:
            return
        one = "(?, ?, ?, ?, now())"
        # a plain INSERT into an empty table of a file store, as for the other tables
        # (:meth:`_may_hold_rows`): INSERT OR REPLACE checked the key against the
        # index, 2.2 against 0.7 ms of CPU for an ingest's one file
        fresh = len({f[0] for f in files}) == len(files) and not self._may_hold_rows("files")
        verb = "INSERT OR REPLACE INTO" if self.lake is None and not fresh else "INSERT INTO"
        if self.lake is not None:
            self.con.execute("DELETE FROM files WHERE list_contains(?::VARCHAR[], path)",
                             [[f[0] for f in files]])
        for start in range(0, len(files), SMALL_CHUNK):
            chunk = files[start:start + SMALL_CHUNK]
            self.con.execute(f"{verb} files VALUES " + ", ".join([one] * len(chunk)),
                             [v for f in chunk for v in f])

    def _commit_checkpointed(self, *, fsst: bool = True) -> None:
        """COMMIT with DuckDB's ``checkpoint_threshold`` at 0: the commit writes the
        transaction's rows into the store file (a checkpoint) instead of into the
        write-ahead log that the checkpoint at close would then copy into the file.

        Why: for an ingest's last batch the log is written only to be read back at
        close (duckdb 1.5.5, one thread: a 10,000-row SWE-bench batch's commit 11 ms +
        the close's checkpoint 32 ms -> 29 ms + 3 ms, the store the same size). Only for
        the last batch: checkpointing every batch of a long ingest would compress the
        table's last, partly filled row group again at each (the fast JSONL path raises
        the threshold for that reason).

        ``fsst=False``: the commit does not consider FSST compression (its estimate is a
        third of the commit's CPU), for a batch whose texts repeat
        (:func:`~evalatlas.store.columnar.text_repeats`): a dictionary is smaller
        there anyway."""
        before, methods = self.con.execute(
            "SELECT current_setting('checkpoint_threshold'), "
            "current_setting('disabled_compression_methods')").fetchall()[0]
        off = methods if fsst or "fsst" in methods.split(",") else ",".join(
            m for m in (methods, "fsst") if m)
        self.con.execute(f"SET checkpoint_threshold = '0b'; "
                         f"SET disabled_compression_methods = '{off}'")
        try:
            self.con.execute("COMMIT")
        finally:
            with contextlib.suppress(duckdb.Error, RuntimeError):
                self.con.execute(f"SET checkpoint_threshold = '{before}'; "
                                 f"SET disabled_compression_methods = '{methods}'")

    def write_batch(
        self,
        *,
        batch_id: int,
        experiments: list[tuple],
        episodes: list[tuple] | pa.Table,
        measurements: list[tuple],
        problems: list[Problem],
        sources: list[str],
        started_at: _dt.datetime,
        requarantine: list[str] | None = None,
        pricing: Pricing | None = None,
        files: list[tuple[str, int, int, str]] | None = None,
        checkpoint: bool = False,
        models_filled: bool = False,
    ) -> None:
        """Write one batch in one transaction: all of it lands, or none of it.

        ``requarantine``: sources being (re-)read from the start in this batch; their old
        quarantine rows (the source itself or files under it) are dropped first, so a file
        fixed and ingested again no longer shows its old problems. ``episodes``: row
        tuples, or an Arrow table of the episodes table's columns (the columnar path).
        ``pricing``: how costs missing from episodes with tokens are computed (default:
        the default price book, an unpriced model's cost unknown). ``files``: input
        files read to their end, remembered in the same transaction
        (:meth:`remember_files`). ``checkpoint``: the commit writes the store file
        itself instead of the write-ahead log (for an ingest's last batch, see
        :meth:`_commit_checkpointed`). ``models_filled``: the episodes' ``llm_model``
        is filled from ``experiments`` already (:func:`~evalatlas.store.rows.agent_models`,
        as the columnar path does): on a file store that holds no experiment and no
        episode yet, the completion step's UPDATE of the models is then skipped
        (:func:`~evalatlas.store.costs.complete_batch`).
        """
        now = _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
        qrows = [
            (problem_key(p), p.file, p.line, p.record, p.field, p.reason, batch_id, now)
            for p in problems
        ]
        qrows = list({r[0]: r for r in qrows}.values())
        own = not self._atomic  # inside atomic(): the caller's transaction commits
        if own:
            self.con.execute("BEGIN TRANSACTION")
        try:
            self._held_before = {}
            self.clear_quarantine(requarantine or [])
            self._insert("experiments", EXPERIMENT_COLUMNS, experiments)
            if isinstance(episodes, list):
                self._insert("episodes", EPISODE_COLUMNS, episodes)
            else:
                self.insert_table("episodes", episodes)
            self._insert("measurements", MEASUREMENT_COLUMNS, measurements)
            self._insert("quarantine", QUARANTINE_COLUMNS, qrows)
            complete_batch(self, batch_id, [r[0] for r in experiments], pricing or Pricing(),
                           models_filled=models_filled and self._held_no_records())
            self.con.execute(
                "INSERT INTO ingest_batches VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [batch_id, started_at.replace(tzinfo=None), now, len(experiments),
                 len(episodes) if isinstance(episodes, list) else episodes.num_rows,
                 len(measurements), len(qrows), sources],
            )
            self._insert_files(files or [])
            if own and checkpoint and self.lake is None:
                self._commit_checkpointed(fsst=isinstance(episodes, list)
                                          or not text_repeats(episodes))
            elif own:
                self.con.execute("COMMIT")
        except BaseException as exc:
            if not own:
                raise  # atomic(): the whole transaction rolls back there
            # a failed COMMIT (a full disk) may have ended the transaction already
            with contextlib.suppress(duckdb.Error, RuntimeError):
                self.con.execute("ROLLBACK")
            interrupts.reraise(exc)  # DuckDB reports Ctrl-C as "Query interrupted"
            if self.lake is not None and isinstance(exc, duckdb.Error):
                from evalatlas.store.lake import write_error_message as lake_write_error

                raise StoreError(lake_write_error(self.lake, exc)) from exc
            if not isinstance(exc, KeyboardInterrupt) and errno_in_text(str(exc)) is not None:
                # a full or read-only disk: one line, the batch rolled back
                raise StoreError(write_error_message(self.path, exc)) from exc
            raise
