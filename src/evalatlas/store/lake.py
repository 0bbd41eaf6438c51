"""A store on DuckLake: a catalog (PostgreSQL, or a local DuckDB file) plus Parquet files.

Why: one embedded DuckDB file admits exactly one writing process. A DuckLake on a
PostgreSQL catalog is written by many processes on many machines, with snapshot
isolation and time travel (docs/scale-out.md).

How the store's SQL runs unchanged: the lake is ATTACHed as :data:`ALIAS` and made the
default catalog (``USE``); it holds the same tables and columns as the file store
(:func:`lake_ddl`: DuckLake has no primary keys, no indexes). Keys stay unique the way
the file store keeps them (delete-then-insert on :data:`~evalatlas.store.schema.KEYS`
inside one transaction), and that is only correct when no two such transactions
interleave, hence the commit lock.

The commit lock (PostgreSQL catalogs): every write transaction holds the PostgreSQL
advisory lock :data:`LOCK_KEY` from its BEGIN to its COMMIT or ROLLBACK. The lock is
taken on a second DuckDB connection of the same instance, inside a PostgreSQL
transaction of its own (``pg_advisory_xact_lock``), *before* the write transaction
reads the catalog, so each writer starts from the latest snapshot and DuckLake's
concurrent-commit conflict path (duckdb/ducklake#1094, #1283, the READ COMMITTED
requirement of ducklake PR #1341, duckdb/duckdb-postgres#577) is never entered. A
killed writer's PostgreSQL session ends, which ends its transaction and releases the
lock; its uncommitted Parquet files are orphans that ``lake compact`` removes. Reading
and parsing input (most of an ingest's CPU) run outside the lock, in parallel.

A file catalog is one DuckDB file, which one process at a time may write (as the file
store): no lock is needed, and other processes wait with ``--wait``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import socket
import time
from pathlib import Path
from typing import Any

import duckdb

from evalatlas.errors import StoreError
from evalatlas.records.redact import redact_text
from evalatlas.store.lake_location import LakeLocation
from evalatlas.store.schema import DDL

ALIAS = "lake"
"""The name the lake is attached under (``lake.snapshots()``)."""
LOCK_DB = "evalatlas_lock_pg"
"""The name the PostgreSQL catalog is attached under for the commit lock."""
LOCK_KEY = int.from_bytes(hashlib.sha256(b"evalatlas.lake.commit").digest()[:8], "big",
                          signed=True)
"""The advisory lock key every evalatlas writer of a lake takes (one lake per catalog
database/schema, so one key)."""
EXTENSIONS = {"ducklake": "duckdb_extension_ducklake",
              "postgres_scanner": "duckdb_extension_postgres_scanner"}
"""DuckDB extension -> the PyPI package (extra ``evalatlas[lake]``) that ships it."""

_WRITES = ("INSERT", "DELETE", "UPDATE", "CREATE", "ALTER", "DROP", "COPY", "MERGE", "CALL")


def lake_ddl() -> str:
    """The file store's DDL for a lake: the same tables and columns, no PRIMARY KEY
    (DuckLake has no constraints; keys are kept by delete-then-insert, see module)."""
    return DDL.replace(" PRIMARY KEY", "")


def _extension_file(name: str) -> Path | None:
    package = EXTENSIONS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    return path if path.is_file() else None


def load_extensions(con: Any, kind: str) -> None:
    """LOAD DuckLake (and the PostgreSQL scanner for a PostgreSQL catalog) from the files
    of the ``evalatlas[lake]`` packages (``INSTALL`` needs a network); a StoreError
    naming the extra when one is missing."""
    names = ["ducklake"] + (["postgres_scanner"] if kind == "postgres" else [])
    for name in names:
        path = _extension_file(name)
        try:
            con.execute(f"LOAD '{path}'" if path else f"LOAD {name}")
        except duckdb.Error as exc:
            raise StoreError(
                f"a DuckLake store needs the extra evalatlas[lake] (pip install "
                f"'evalatlas[lake]': {EXTENSIONS[name].replace('_', '-')} built for DuckDB "
                f"{duckdb.__version__}); the {name} extension could not be loaded "
                f"({_first_line(exc)})") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return redact_text(text.splitlines()[0]) if text else type(exc).__name__


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def is_unreachable(exc: BaseException, loc: LakeLocation | None = None) -> bool:
    """Whether a DuckDB error means the PostgreSQL catalog could not be reached or went
    away (worth a retry under ``--wait``; printed as :func:`unreachable_message`).

    Two tests, either suffices: the error's words (:data:`_GONE`, libpq's and the
    postgres scanner's), and, given ``loc``, a connect to the server's port
    (:func:`catalog_answers`). Why the probe: a server that vanished mid-transaction is
    reported in whatever words the statement that failed happened to use (CI has seen
    "Failed to get global stats information from DuckLake: Current transaction is
    aborted", words PostgreSQL also says after any failed statement), so words alone
    either miss it or misname other errors; asking the port does neither."""
    low = str(exc).lower()
    if any(w in low for w in _GONE):
        return True
    return loc is not None and catalog_answers(loc) is False


def catalog_answers(loc: LakeLocation, timeout: float = 2.0) -> bool | None:
    """Whether something accepts connections at the PostgreSQL catalog's host and port
    (a TCP connect, or the Unix socket ``<dir>/.s.PGSQL.<port>``); nothing is sent. None
    for a file catalog or an endpoint that cannot be tested (a host name that does not
    resolve counts as not answering)."""
    end = loc.endpoint
    if end is None:
        return None
    host, port = end
    try:
        if host.startswith("/"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout)
                sock.connect(f"{host}/.s.PGSQL.{port}")
        else:
            socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True


_GONE = ("could not connect", "connection refused", "connection to server",
         "server closed the connection", "no such file or directory\n\t"
         "is the server running", "timeout expired", "could not translate host name",
         "the database system is", "no connection to the server",
         "terminating connection due to administrator command",
         "could not receive data from server", "could not send data to server",
         "ssl syscall error",
         # the postgres scanner's words when the server went away inside a transaction:
         # its ROLLBACK on the dead connection fails (seen in CI, PostgreSQL stopped
         # mid-ingest), and nothing else in the error names the connection
         'failed to execute query "rollback"')
"""libpq's and the postgres scanner's words for a server that cannot be reached or went
away (lower case)."""


def unreachable_message(loc: LakeLocation, exc: BaseException, wait: float = 0.0) -> str:
    waited = f" (waited {wait:g} s)" if wait else ""
    return (f"cannot reach the lake's PostgreSQL catalog at {loc.server}{waited}: "
            f"{_first_line(exc)}; check that the server runs and accepts connections, or "
            "pass --wait SECONDS to keep retrying")


class CommitLock:
    """The PostgreSQL advisory lock that serialises a lake's write transactions (see
    module). Held by a transaction on its own connection; released by ending it."""

    def __init__(self, con: Any, loc: LakeLocation) -> None:
        self.con = con.cursor()
        self.con.execute(f"ATTACH IF NOT EXISTS {_quote(loc.catalog)} AS {LOCK_DB} "
                         "(TYPE postgres)")
        self.held = False

    def acquire(self) -> None:
        if self.held:
            return
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute(f"SELECT * FROM postgres_query('{LOCK_DB}', "
                             f"'SELECT pg_advisory_xact_lock({LOCK_KEY})::text')").fetchall()
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            raise
        self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with contextlib.suppress(duckdb.Error):
            self.con.execute("ROLLBACK")

    def close(self) -> None:
        self.release()
        with contextlib.suppress(duckdb.Error):
            self.con.close()


class LakeConnection:
    """A DuckDB connection to a lake whose write transactions hold the commit lock.

    ``BEGIN`` takes the lock first, ``COMMIT``/``ROLLBACK`` release it; a write statement
    outside a transaction holds it for its own (implicit) transaction. Everything else
    is the DuckDB connection's own (``fetchall``, ``register``, ``cursor`` ...)."""

    def __init__(self, con: Any, lock: CommitLock | None) -> None:
        self._con = con
        self._lock = lock
        self._in_transaction = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, parameters: Any = None) -> Any:
        if self._lock is None:
            return self._con.execute(sql, parameters)
        head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if head in ("BEGIN", "START") and not self._in_transaction:
            self._lock.acquire()
            try:
                out = self._con.execute(sql, parameters)
            except BaseException:
                self._lock.release()
                raise
            self._in_transaction = True
            return out
        if head in ("COMMIT", "ROLLBACK", "ABORT", "END"):
            try:
                return self._con.execute(sql, parameters)
            finally:
                self._in_transaction = False
                self._lock.release()
        if not self._in_transaction and head in _WRITES and " TEMP " not in sql[:40].upper():
            self._lock.acquire()
            try:
                return self._con.execute(sql, parameters)
            finally:
                self._lock.release()
        return self._con.execute(sql, parameters)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()
        self._con.close()


def _attach_options(loc: LakeLocation, *, read_only: bool, snapshot: int | None,
                    data_path: str | None) -> str:
    opts = []
    if data_path:
        opts.append(f"DATA_PATH {_quote(data_path)}")
    if snapshot is not None:
        opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
    if read_only:
        opts.append("READ_ONLY")
    return f" ({', '.join(opts)})" if opts else ""


def _catalog_in_postgres(con: Any, loc: LakeLocation) -> bool:
    """Whether the PostgreSQL database already holds a DuckLake catalog."""
    con.execute(f"ATTACH IF NOT EXISTS {_quote(loc.catalog)} AS {LOCK_DB} (TYPE postgres)")
    rows = con.execute(
        f"SELECT * FROM postgres_query('{LOCK_DB}', 'SELECT count(*) FROM "
        "information_schema.tables WHERE table_name = ''ducklake_metadata''')").fetchall()
    return bool(rows and int(rows[0][0]) > 0)


def connect(loc: LakeLocation, *, read_only: bool, create: bool,
            snapshot: int | None = None) -> tuple[LakeConnection, int | None]:
    """Open the lake at ``loc``: attach it as :data:`ALIAS` and ``USE`` it. Returns the
    connection and, for a reader, the snapshot it reads (pinned at open, so every query
    of one command reads the same snapshot; ``snapshot``: that earlier one).
    Raises StoreError / duckdb errors (the caller retries unreachable servers)."""
    if snapshot is not None and not read_only:
        raise StoreError("a lake opened at a snapshot is read-only (time travel); open it "
                         "without snapshot to write")
    con = duckdb.connect(":memory:")
    try:
        load_extensions(con, loc.kind)
        exists = loc.catalog_exists()
        if exists is None:
            exists = _catalog_in_postgres(con, loc)
        if not exists and (read_only or not create):
            raise StoreError(f"lake {loc.display} does not exist (no DuckLake catalog there); "
                             "run `evalatlas ingest` (with --data-path DIR) to create it")
        if not exists and loc.kind == "postgres" and not loc.data_path:
            raise StoreError(f"creating the lake {loc.display} needs a data path for its "
                             "Parquet files: pass --data-path DIR (or set "
                             "$EVALATLAS_DATA_PATH; ea.open(..., data_path=DIR))")
        if not exists and loc.data_path and not Path(loc.data_path).is_dir() \
                and "://" not in loc.data_path:
            raise StoreError(f"cannot create the lake {loc.display}: its data path "
                             f"{loc.data_path} is not a folder (evalatlas does not create it)")
        target = (f"ducklake:{loc.catalog}" if loc.kind == "file"
                  else f"ducklake:postgres:{loc.catalog}")
        pinned = snapshot
        if read_only and pinned is None:
            con.execute(f"ATTACH {_quote(target)} AS {ALIAS} (READ_ONLY)")
            pinned = current_snapshot(con)
            con.execute(f"DETACH {ALIAS}")
        opts = _attach_options(loc, read_only=read_only, snapshot=pinned,
                               data_path=None if exists else loc.data_path)
        try:
            con.execute(f"ATTACH {_quote(target)} AS {ALIAS}{opts}")
        except duckdb.Error as exc:
            if snapshot is not None and "snapshot" in str(exc).lower():
                raise StoreError(f"lake {loc.display} has no snapshot {snapshot} "
                                 f"({_first_line(exc)}); `evalatlas lake info` lists "
                                 "them") from exc
            raise
        con.execute(f"USE {ALIAS}")
        lock = CommitLock(con, loc) if (loc.kind == "postgres" and not read_only) else None
        return LakeConnection(con, lock), pinned
    except BaseException:
        con.close()
        raise


def current_snapshot(con: Any) -> int:
    """The id of the lake's newest snapshot (DuckLake's ``snapshot_id``)."""
    return int(con.execute(f"SELECT max(snapshot_id) FROM {ALIAS}.snapshots()").fetchone()[0])


def newest_snapshot(store: Any) -> int:
    """The newest snapshot of a lake :class:`~evalatlas.store.db.StoreConnection` (or a view of
    one): what its next read sees unless a commit lands first."""
    return current_snapshot(store.con)


def create_tables(con: LakeConnection) -> None:
    """The store's tables on a lake (one transaction, under the commit lock), when any
    is missing: idempotent, so many writers may open a new lake at once."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(lake_ddl())
        con.execute("DELETE FROM meta WHERE key = 'schema_version'")
        from evalatlas.store.schema import SCHEMA_VERSION

        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error, RuntimeError):
            con.execute("ROLLBACK")
        raise


def tables_present(con: Any) -> bool:
    """Whether the lake holds every store table (they are created in one transaction)."""
    names = [t.split("(")[0].split()[-1] for t in lake_ddl().split("CREATE TABLE IF NOT "
                                                                   "EXISTS")[1:]]
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name IN ("
        + ", ".join("?" for _ in names) + ")", [ALIAS, *names]).fetchone()[0]
    return int(found) == len(names)


def open_lake(loc: LakeLocation, *, read_only: bool, create: bool, snapshot: int | None,
              wait: float) -> tuple[LakeConnection, int | None]:
    """:func:`connect` with ``--wait`` retries while the PostgreSQL server is
    unreachable, then the tables (a writer creates what is missing). One-line
    StoreErrors: unreachable (host:port, no password), missing extra, missing lake."""
    deadline = time.monotonic() + max(0.0, wait)
    delay = 0.1
    while True:
        try:
            con, pinned = connect(loc, read_only=read_only, create=create, snapshot=snapshot)
            break
        except duckdb.Error as exc:
            remaining = deadline - time.monotonic()
            gone = is_unreachable(exc, loc)
            if gone and remaining > 0:
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 2.0)
                continue
            if gone:
                raise StoreError(unreachable_message(loc, exc, wait)) from exc
            raise StoreError(f"cannot open the lake {loc.display}: {_first_line(exc)}") \
                from exc
    try:
        if not read_only and not tables_present(con):
            create_tables(con)
        elif read_only and not tables_present(con):
            raise StoreError(f"lake {loc.display} holds no evalatlas tables; run "
                             "`evalatlas ingest` into it first")
    except duckdb.Error as exc:
        con.close()
        if is_unreachable(exc, loc):  # the server went away between the attach and tables
            raise StoreError(unreachable_message(loc, exc, wait)) from exc
        raise StoreError(f"cannot open the lake {loc.display}: {_first_line(exc)}") from exc
    except BaseException:
        con.close()
        raise
    return con, pinned


def use_error_message(location: str, exc: BaseException) -> str | None:
    """The one line for a DuckDB error met while using the lake at ``location`` (any
    query, not only a batch's write) when it says more than the query's first line: the
    PostgreSQL catalog unreachable (host:port, no password). None otherwise."""
    try:
        loc = LakeLocation.parse(location)
    except ValueError:
        return None
    if is_unreachable(exc, loc):
        return unreachable_message(loc, exc)
    return None


def write_error_message(loc: LakeLocation, exc: BaseException) -> str:
    """One line for a lake write that failed (data path not writable or full, catalog
    gone): the snapshot before it is intact (the transaction rolled back)."""
    where = loc.data_path or "its data path"
    if is_unreachable(exc, loc):
        return unreachable_message(loc, exc) + " (the batch was rolled back)"
    return (f"cannot write to the lake {loc.display} (data files in {where}): "
            f"{_first_line(exc)}; the lake keeps its snapshot from before this batch")
