"""The API tokens of ``evalatlas serve``: a small SQLite file beside the store.

Why a sidecar file and not a table of the DuckDB store: DuckDB lets one process hold a
store file for writing, and the server is that process while it runs. ``evalatlas tokens
add`` / ``revoke`` must work while it runs, so tokens live in SQLite (WAL mode), which
lets any number of processes read and one at a time write, each waiting briefly for the
other's lock. The server reads the token rows on every request through a short-lived
read connection, so a token added or revoked by the CLI counts from the next request.

Only a token's SHA-256 is stored (see :func:`evalatlas.serve.auth.token_hash` for why a
fast hash is right for 256-bit random tokens); the token itself is printed once by
``tokens add`` and never stored, logged or printed again.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.errors import StoreError

ENV_TOKENS = "EVALATLAS_TOKENS"
"""Path of the token file when the store is not a local file (a DuckLake URL)."""

ROLES = ("submitter", "reader", "admin")

_DDL = """
CREATE TABLE IF NOT EXISTS tokens (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT
)
"""


def tokens_path(db: str | Path) -> Path:
    """The token file of store ``db``: ``$EVALATLAS_TOKENS`` if set, else the store
    file's (or a lake's catalog file's) path plus ``.tokens`` (``runs.duckdb`` ->
    ``runs.duckdb.tokens``, ``ducklake:atlas.ducklake`` -> ``atlas.ducklake.tokens``); a
    lake with a PostgreSQL catalog needs ``$EVALATLAS_TOKENS``."""
    from evalatlas.store.lake_location import local_file

    env = os.environ.get(ENV_TOKENS)
    if env:
        return Path(env)
    text = str(db)
    beside = local_file(text)
    if beside is None or (":" in text.split("/")[0] and not text.startswith("ducklake:")
                          and not Path(text).exists()):
        from evalatlas.records.redact import redact_text

        raise StoreError(f"store {redact_text(text)} is not a local file: set "
                         f"${ENV_TOKENS} to the path of its token file")
    return Path(str(beside) + ".tokens")


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


class TokenFile:
    """The token rows of one store. Every method opens its own short connection, so an
    instance may be shared by threads and processes may change the file meanwhile."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._watch_lock = threading.Lock()
        self._watch: sqlite3.Connection | None = None
        self._watch_file: tuple[int, int] | None = None
        self._known: tuple[int, list[tuple[str, str, str]]] | None = None

    @contextlib.contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.exists():
            yield from self._empty()
            return
        if create and not self.path.parent.is_dir():
            raise StoreError(f"cannot create the token file {self.path}: the folder "
                             f"{self.path.parent} does not exist")
        try:
            con = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the token file {self.path}: {exc}") from exc
        try:
            if create:
                with contextlib.suppress(OSError):
                    os.chmod(self.path, 0o600)  # hashes only, but nobody else's business
                con.execute("PRAGMA journal_mode=WAL")
                con.execute(_DDL)
            yield con
        except sqlite3.Error as exc:
            raise StoreError(f"token file {self.path}: {exc}") from exc
        finally:
            con.close()

    @staticmethod
    def _empty() -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(":memory:", isolation_level=None)
        try:
            con.execute(_DDL)
            yield con
        finally:
            con.close()

    def add(self, name: str, role: str, sha256: str) -> None:
        """Store a new token's hash; StoreError when ``name`` is taken."""
        with self._connect(create=True) as con:
            try:
                con.execute("INSERT INTO tokens VALUES (?, ?, ?, ?, NULL)",
                            [name, role, sha256, _now()])
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"a token named {name!r} exists already; revoke it first "
                                 "or choose another name") from exc

    def rows(self) -> list[dict[str, Any]]:
        """Name, role, created and last used of every token (never its hash)."""
        with self._connect(create=False) as con:
            cur = con.execute("SELECT name, role, created_at, last_used_at FROM tokens "
                              "ORDER BY name")
            return [dict(zip(("name", "role", "created_at", "last_used_at"), r, strict=True))
                    for r in cur.fetchall()]

    def hashes(self) -> list[tuple[str, str, str]]:
        """(name, role, sha256) of every token, for the server's constant-time check."""
        with self._connect(create=False) as con:
            return [tuple(r) for r in con.execute("SELECT name, role, sha256 FROM tokens")]

    def current_hashes(self) -> list[tuple[str, str, str]]:
        """:meth:`hashes`, read again only when the file changed: cheap enough for every
        request of a busy server (microseconds instead of a connection per request).

        A change is seen the moment it is committed: one long-lived read connection asks
        ``PRAGMA data_version``, which SQLite changes whenever another connection commits
        to the file (https://sqlite.org/pragma.html#pragma_data_version), and the file's
        identity (device, inode) is checked too, so a token file removed or replaced is
        read anew (a removed one holds no tokens). The connection holds no transaction
        between calls, so it never blocks ``tokens add`` or ``revoke``."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            with self._watch_lock:
                self._close_watch()
            return []
        except OSError as exc:
            raise StoreError(f"cannot read the token file {self.path}: {exc}") from exc
        ident = (st.st_dev, st.st_ino)
        with self._watch_lock:
            try:
                if self._watch is None or self._watch_file != ident:
                    self._close_watch()
                    self._watch = sqlite3.connect(self.path, timeout=10,
                                                  isolation_level=None,
                                                  check_same_thread=False)
                    self._watch_file = ident
                version = self._watch.execute("PRAGMA data_version").fetchone()[0]
                if self._known is None or self._known[0] != version:
                    rows = [(str(n), str(r), str(h)) for n, r, h in self._watch.execute(
                        "SELECT name, role, sha256 FROM tokens")]
                    self._known = (version, rows)
                return list(self._known[1])
            except sqlite3.Error as exc:
                self._close_watch()
                raise StoreError(f"token file {self.path}: {exc}") from exc

    def _close_watch(self) -> None:
        if self._watch is not None:
            with contextlib.suppress(sqlite3.Error):
                self._watch.close()
        self._watch, self._watch_file, self._known = None, None, None

    def revoke(self, name: str) -> bool:
        """Delete the token ``name``; False when there is none."""
        with self._connect(create=True) as con:
            return con.execute("DELETE FROM tokens WHERE name = ?", [name]).rowcount > 0

    def touch(self, name: str) -> None:
        """Record that ``name`` was used now."""
        with self._connect(create=False) as con:
            con.execute("UPDATE tokens SET last_used_at = ? WHERE name = ?", [_now(), name])
