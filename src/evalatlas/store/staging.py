"""Rows staged in a private DuckDB file, copied into a store in one short transaction.

Why: on a lake, a write transaction holds the lake's commit lock from its BEGIN to its
COMMIT (:mod:`evalatlas.store.lake`), so everything done inside it is done by one writer
at a time. An upload to ``evalatlas serve`` is decompressed, read, validated,
flattened, priced and redacted by an ordinary ingest into a private file store (the
*stage*: a ``.duckdb`` file in the submission's spool folder), outside any lake
transaction and in parallel with other uploads; only :func:`copy_staged`, the
delete-then-insert of the staged rows by their keys (:data:`~evalatlas.store.schema.KEYS`),
runs inside the submission's lake transaction. The stage is a file, not memory, so a
submission of hundreds of thousands of episodes costs disk, not RAM, and the copy is
DuckDB reading one attached database into another.

What stays exact: the stage was written by the same code as a direct ingest (its
rows are the rows a direct ingest would have written, keys unique within it); batch ids
are re-issued by the target store (:meth:`~evalatlas.store.db.StoreConnection.reserve_batch_ids`:
on a PostgreSQL-catalog lake, ids unique across writers); costs and models of episodes
whose experiment is stored in the target, not the stage, are completed there
(:func:`~evalatlas.store.costs.complete_batch`, as each batch of a direct ingest is).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evalatlas.pricing import Pricing
from evalatlas.store.costs import complete_batch
from evalatlas.store.schema import (
    EPISODE_COLUMNS,
    EXPERIMENT_COLUMNS,
    KEYS,
    MEASUREMENT_COLUMNS,
    QUARANTINE_COLUMNS,
)

if TYPE_CHECKING:
    from evalatlas.store.db import StoreConnection

_TABLES = (("experiments", EXPERIMENT_COLUMNS), ("episodes", EPISODE_COLUMNS),
           ("measurements", MEASUREMENT_COLUMNS), ("quarantine", QUARANTINE_COLUMNS))
_BATCH_COLUMNS = ("started_at", "n_experiments", "n_episodes", "n_measurements",
                  "n_rejected", "sources")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextlib.contextmanager
def attached(store: StoreConnection, stage: Path) -> Iterator[str]:
    """The stage file attached read-only to ``store``'s DuckDB instance; yields its
    alias. Attach outside the write transaction (before :meth:`StoreConnection.atomic`):
    attaching is no write, and takes no lock."""
    alias = f"evalatlas_stage_{uuid.uuid4().hex[:12]}"
    store.con.execute(f"ATTACH {_quote(str(stage))} AS {alias} (READ_ONLY)")
    try:
        yield alias
    finally:
        with contextlib.suppress(Exception):
            store.con.execute(f"DETACH {alias}")


def copy_staged(store: StoreConnection, alias: str, pricing: Pricing | None = None
                ) -> dict[str, int]:
    """Copy the staged rows of the attached stage ``alias`` into ``store``: per table,
    the stored rows with a staged key are deleted, then the staged rows inserted (the
    file store's upsert; deleted only when one exists: a DELETE over a large lake is
    the expensive, and in DuckLake 1.5.5 the fragile, part), each staged batch under a
    new batch id of ``store``, and each batch's costs completed. Call inside the
    caller's transaction (:meth:`StoreConnection.atomic`): all of it lands, or none.
    Returns the rows copied per table."""
    con = store.con
    ids = [int(r[0]) for r in con.execute(
        f"SELECT batch_id FROM {alias}.ingest_batches ORDER BY batch_id").fetchall()]
    lo = ids[0] if ids else 0
    first = store.reserve_batch_ids(ids[-1] - lo + 1) if ids else 0
    shift = first - lo
    copied: dict[str, int] = {}
    for table, columns in _TABLES:
        source = f"{alias}.{table}"
        n = int(con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0])
        copied[table] = n
        if n == 0:
            continue
        keys = ", ".join(KEYS[table])
        stored = con.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE ({keys}) IN "
            f"(SELECT ({keys}) FROM {source}) LIMIT 1)").fetchall()[0][0]
        if stored:
            con.execute(f"DELETE FROM {table} WHERE ({keys}) IN (SELECT ({keys}) FROM {source})")
        cols = ", ".join(columns)
        select = ", ".join(f"ingest_batch + {int(shift)}" if c == "ingest_batch" else c
                           for c in columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {select} FROM {source}")
    batch_cols = ", ".join(_BATCH_COLUMNS)
    now = _dt.datetime.now(_dt.UTC).replace(tzinfo=None)  # as write_batch: naive UTC
    con.execute(f"INSERT INTO ingest_batches (batch_id, committed_at, {batch_cols}) "
                f"SELECT batch_id + {int(shift)}, ?, {batch_cols} "
                f"FROM {alias}.ingest_batches", [now])
    for old in ids:
        experiments = [r[0] for r in con.execute(
            f"SELECT experiment_id FROM {alias}.experiments WHERE ingest_batch = ?",
            [old]).fetchall()]
        complete_batch(store, old + shift, experiments, pricing or Pricing())
    return copied


__all__ = ["attached", "copy_staged"]
