"""Submissions to ``evalatlas serve``: who sent which bytes, and what they stored.

A submission's rows carry ``source_file = 'submission:<id>/<name>'`` (set by
:func:`claim_rows` in the submission's own transaction), so its episodes, experiments,
measurements and quarantine rows are found, shown to their owner and deleted by that
prefix alone. A row another submission stored later under the same key belongs to that
one (ingest upserts by key), so deleting the first leaves it alone.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalatlas.store.db import StoreConnection

_DDL = """
CREATE TABLE IF NOT EXISTS submissions (
    submission_id VARCHAR PRIMARY KEY,
    owner VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    content_sha256 VARCHAR NOT NULL,
    bytes BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    experiments BIGINT NOT NULL,
    episodes BIGINT NOT NULL,
    measurements BIGINT NOT NULL,
    rejected BIGINT NOT NULL
)
"""

COLUMNS = ("submission_id", "owner", "name", "content_sha256", "bytes", "created_at",
           "experiments", "episodes", "measurements", "rejected")

_TABLES = ("episodes", "measurements", "experiments", "quarantine")


def source_prefix(submission_id: str) -> str:
    """The ``source_file`` prefix of every row a submission stored."""
    return f"submission:{submission_id}/"


def ensure(store: StoreConnection) -> None:
    """Create the submissions table if this store has none (a writable store). On a
    lake without its PRIMARY KEY (DuckLake has no keys): submission ids are random
    UUIDs, written once by :func:`record`."""
    store.con.execute(_DDL if store.lake is None else _DDL.replace(" PRIMARY KEY", ""))


def _scalar(store: StoreConnection, sql: str, params: list[Any] | None = None) -> int:
    row = store.con.execute(sql, params or []).fetchone()
    return int(row[0]) if row else 0


def _exists(store: StoreConnection) -> bool:
    return _scalar(store, "SELECT count(*) FROM information_schema.tables "
                   "WHERE table_name = 'submissions'") > 0


def _dicts(store: StoreConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    if not _exists(store):
        return []
    return store.query(sql, params)


def find_by_content(store: StoreConnection, owner: str, sha256: str) -> dict[str, Any] | None:
    """The owner's earlier submission of exactly these bytes, if any."""
    rows = _dicts(store, "SELECT * FROM submissions WHERE owner = ? AND content_sha256 = ?",
                  [owner, sha256])
    return rows[0] if rows else None


def claim_rows(store: StoreConnection, spool_dir: str, submission_id: str) -> None:
    """Rename the ``source_file`` of rows just ingested from ``spool_dir`` to the
    submission's prefix, and forget the spool files' ingest bookkeeping (the spool is
    temporary). Call inside the submission's transaction."""
    old = spool_dir.rstrip("/") + "/"
    new = source_prefix(submission_id)
    for table in _TABLES:
        store.con.execute(
            f"UPDATE {table} SET source_file = ? || substr(source_file, ?) "
            "WHERE starts_with(source_file, ?)", [new, len(old) + 1, old])
    for folder in {old, str(Path(spool_dir).resolve()).rstrip("/") + "/"}:
        store.con.execute("DELETE FROM files WHERE starts_with(path, ?)", [folder])


def record(store: StoreConnection, row: dict[str, Any]) -> None:
    """Insert one submission row (``COLUMNS``; ``created_at`` defaults to now)."""
    row = {**row, "created_at": row.get("created_at")
           or _dt.datetime.now(_dt.UTC).replace(tzinfo=None)}
    store.con.execute(f"INSERT INTO submissions ({', '.join(COLUMNS)}) VALUES "
                      f"({', '.join('?' * len(COLUMNS))})", [row[c] for c in COLUMNS])


def list_submissions(store: StoreConnection, owner: str | None) -> list[dict[str, Any]]:
    """Every submission (``owner`` None) or the owner's, newest first."""
    where, params = ("WHERE owner = ?", [owner]) if owner is not None else ("", [])
    return _dicts(store, f"SELECT * FROM submissions {where} "
                  "ORDER BY created_at DESC, submission_id", params)


def get_submission(store: StoreConnection, submission_id: str, owner: str | None
                   ) -> dict[str, Any] | None:
    """One submission, if it exists and (unless ``owner`` is None) is the owner's."""
    rows = _dicts(store, "SELECT * FROM submissions WHERE submission_id = ?"
                  + (" AND owner = ?" if owner is not None else ""),
                  [submission_id] + ([owner] if owner is not None else []))
    return rows[0] if rows else None


def quarantine_of(store: StoreConnection, submission_id: str, limit: int = 1000
                  ) -> list[dict[str, Any]]:
    """The submission's quarantine rows (file, line, record, field, reason)."""
    return store.query(
        "SELECT source_file AS file, line, record, field, reason FROM quarantine "
        "WHERE starts_with(source_file, ?) ORDER BY source_file, line NULLS LAST, record "
        f"LIMIT {int(limit)}", [source_prefix(submission_id)])


def delete_submission(store: StoreConnection, submission_id: str) -> dict[str, int]:
    """Remove the submission's rows in one transaction: its episodes, measurements and
    quarantine rows, its experiments unless episodes of another source still use them,
    and the submission itself. Returns the rows deleted per table."""
    prefix = source_prefix(submission_id)
    deleted: dict[str, int] = {}
    with store.atomic():
        for table in ("episodes", "measurements", "quarantine"):
            deleted[table] = _scalar(
                store, f"DELETE FROM {table} WHERE starts_with(source_file, ?)", [prefix])
        deleted["experiments"] = _scalar(
            store,
            "DELETE FROM experiments x WHERE starts_with(x.source_file, ?) AND NOT EXISTS "
            "(SELECT 1 FROM episodes e WHERE e.experiment_id = x.experiment_id) AND NOT "
            "EXISTS (SELECT 1 FROM measurements m WHERE m.experiment_id = x.experiment_id)",
            [prefix])
        store.con.execute("DELETE FROM submissions WHERE submission_id = ?", [submission_id])
    return deleted


def counts(store: StoreConnection) -> dict[str, int]:
    """Submissions, episodes and quarantined rows in the store (for /metrics)."""
    n_sub = _scalar(store, "SELECT count(*) FROM submissions") if _exists(store) else 0
    return {"submissions": n_sub,
            "episodes": _scalar(store, "SELECT count(*) FROM episodes"),
            "quarantine": _scalar(store, "SELECT count(*) FROM quarantine")}
