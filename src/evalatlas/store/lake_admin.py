"""Looking after a lake: what it holds (``lake info``), compaction and expiry (``lake
compact``), and moving a file store into a lake (``export lake``). DuckLake's own
maintenance functions do the work (https://ducklake.select/docs: merge_adjacent_files,
expire_snapshots, cleanup_old_files, delete_orphaned_files); this module runs them under
the commit lock so they never race a writer's commit (store/lake.py).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import duckdb

from evalatlas.errors import ArgumentError
from evalatlas.store.lake import ALIAS, current_snapshot
from evalatlas.store.schema import KEYS

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> int:
    """``30s``, ``15m``, ``12h``, ``7d``, ``2w`` (or plain seconds) -> seconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([smhdw]?)\s*", str(text).lower())
    if not m:
        raise ArgumentError(f"older_than must be a duration such as 30m, 12h, 7d or 2w "
                            f"(or whole seconds), got {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2) or "s"]


def _require_lake(store: Any) -> Any:
    if store.lake is None:
        raise ArgumentError(f"the store {store.path} is a DuckDB file, not a lake; lake "
                            "commands take a ducklake: location (see docs/scale-out.md)")
    return store.lake


def lake_info(store: Any) -> dict[str, Any]:
    """Snapshots, data files, bytes and rows of each table of the lake ``store``: a
    ``meta`` dict and ``rows`` (one per table)."""
    loc = _require_lake(store)
    con = store.con
    snaps = con.execute(f"SELECT count(*), min(snapshot_id), max(snapshot_id), "
                        f"CAST(max(snapshot_time) AS VARCHAR) FROM {ALIAS}.snapshots()"
                        ).fetchone()
    files = {r[0]: r[1:] for r in con.execute(
        f"SELECT table_name, file_count, file_size_bytes, delete_file_count, "
        f"delete_file_size_bytes FROM ducklake_table_info('{ALIAS}')").fetchall()}
    data_path = con.execute(f"SELECT value FROM {ALIAS}.options() WHERE option_name = "
                            "'data_path'").fetchone()
    rows = []
    for table in sorted(files):
        n_files, n_bytes, n_del, del_bytes = files[table]
        rows.append({"table": table,
                     "rows": int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]),
                     "data_files": int(n_files or 0), "bytes": int(n_bytes or 0),
                     "delete_files": int(n_del or 0), "delete_bytes": int(del_bytes or 0)})
    meta = {"location": loc.display, "data_path": data_path[0] if data_path else None,
            "snapshot": store.snapshot if store.snapshot is not None else int(snaps[2]),
            "snapshots": int(snaps[0]), "oldest_snapshot": int(snaps[1]),
            "newest_snapshot": int(snaps[2]), "newest_snapshot_time": snaps[3],
            "episodes": next((r["rows"] for r in rows if r["table"] == "episodes"), 0)}
    return {"meta": meta, "rows": rows}


def compact(store: Any, older_than_s: int) -> dict[str, Any]:
    """Merge small data files (inlined rows flushed to Parquet first), expire snapshots
    older than ``older_than_s`` seconds, delete files no snapshot needs any more and
    orphan files (a killed writer's) older than that; under the commit lock, so no
    writer commits meanwhile, and an orphan younger than ``older_than_s`` (a running
    writer's file not yet committed) is kept. Returns what it did."""
    _require_lake(store)
    if store.snapshot is not None:
        raise ArgumentError("compact writes: open the lake without snapshot")
    con = store.con
    before = lake_info(store)["rows"]
    interval = f"INTERVAL '{int(older_than_s)} seconds'"
    done: dict[str, Any] = {}
    # one transaction each (DuckLake refuses to commit a flush and a merge together),
    # each holding the commit lock (store/lake.py); counted in SQL, as the functions
    # return time zone-aware timestamps
    for name, call in (
            ("flushed_inlined", f"ducklake_flush_inlined_data('{ALIAS}')"),
            ("merged_files", f"ducklake_merge_adjacent_files('{ALIAS}')"),
            ("expired_snapshots", f"ducklake_expire_snapshots('{ALIAS}', "
                                  f"older_than => now() - {interval})"),
            ("deleted_files", f"ducklake_cleanup_old_files('{ALIAS}', "
                              f"older_than => now() - {interval})"),
            ("deleted_orphans", f"ducklake_delete_orphaned_files('{ALIAS}', "
                                f"older_than => now() - {interval})")):
        con.execute("BEGIN TRANSACTION")
        try:
            done[name] = int(con.execute(f"SELECT count(*) FROM {call}").fetchone()[0])
            con.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(duckdb.Error, RuntimeError):
                con.execute("ROLLBACK")
            raise
    after = lake_info(store)
    done["data_files_before"] = sum(r["data_files"] for r in before)
    done["data_files_after"] = sum(r["data_files"] for r in after["rows"])
    done["snapshot"] = current_snapshot(con)
    return done


def copy_store(source: Any, lake_store: Any) -> dict[str, int]:
    """Every table of the file store ``source`` (an open Store) into the lake
    ``lake_store``, in one transaction (keyed rows replace the lake's, as ingest would);
    streamed as Arrow record batches, so memory does not grow with the store. Returns
    rows per table. Stored atlas fits are copied too."""
    _require_lake(lake_store)
    if source.lake is not None:
        raise ArgumentError("the source of export lake is a DuckDB file store")
    con = lake_store.con
    have = {r[0] for r in source.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()}
    counts: dict[str, int] = {}
    con.execute("BEGIN TRANSACTION")  # the commit lock, on a PostgreSQL catalog
    try:
        for table in _copy_order(have):
            if table.startswith("atlas_"):
                from evalatlas.store.atlas import DDL as ATLAS_DDL

                con.execute(ATLAS_DDL)
            cols = [r[0] for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND "
                "table_name = ? ORDER BY column_index", [ALIAS, table]).fetchall()]
            names = ", ".join(cols)
            name = f"_evalatlas_copy_{table}"
            reader = source.con.execute(f"SELECT {names} FROM {table}").to_arrow_reader()
            con.register(name, reader)
            try:
                con.execute(f"CREATE TEMP TABLE {name}_rows AS SELECT * FROM {name}")
            finally:
                con.unregister(name)
            rows = f"temp.main.{name}_rows"
            key = ", ".join(KEYS.get(table) or _PLAIN_KEYS.get(table) or ())
            if key:
                con.execute(f"DELETE FROM {table} WHERE ({key}) IN (SELECT ({key}) FROM {rows})")
            con.execute(f"INSERT INTO {table} ({names}) SELECT * FROM {rows}")
            counts[table] = int(con.execute(f"SELECT count(*) FROM {rows}").fetchone()[0])
            con.execute(f"DROP TABLE {rows}")
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error, RuntimeError):
            con.execute("ROLLBACK")
        raise
    return counts


_PLAIN_KEYS = {"files": ("path",), "meta": ("key",), "ingest_batches": ("batch_id",)}


def _copy_order(have: set[str]) -> list[str]:
    first = ["meta", "experiments", "episodes", "measurements", "quarantine",
             "ingest_batches", "files"]
    return [t for t in first if t in have] + sorted(t for t in have if t.startswith("atlas_"))
