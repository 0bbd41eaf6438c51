"""Exports from the store: the seed's flat JSONL, and Parquet for other engines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.records.evallog import record_json
from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.safe_write import make_folder, open_output, temp_path
from evalatlas.store.db import StoreConnection
from evalatlas.store.redaction import redacted_select, redaction_functions
from evalatlas.store.rows import episode_from_row, experiment_from_row, measurement_from_row
from evalatlas.store.schema import KEYS
from evalatlas.store.selection import id_filter

TABLES = ("experiments", "episodes", "measurements", "quarantine", "ingest_batches")
RECORD_TABLES = ("experiments", "episodes", "measurements")


def iter_episodes(
    store: StoreConnection, experiment: list[str] | None = None, chunk: int = 10_000
) -> Iterator[EpisodeRecord]:
    """Stream stored episodes as records, ordered by experiment and trajectory."""
    return _iter_table(store, "episodes", episode_from_row, experiment, chunk)


def iter_experiments(store: StoreConnection, experiment: list[str] | None = None
                     ) -> Iterator[ExperimentRecord]:
    """Stored experiment records (all, or these ids), ordered by experiment id."""
    return _iter_table(store, "experiments", experiment_from_row, experiment)


def _iter_table(store: StoreConnection, table: str, from_row: Any,
                experiment: list[str] | None, chunk: int = 10_000) -> Iterator[Any]:
    where, params = id_filter(experiment, "experiment_id")
    cur = store.cursor()
    cur.execute(f"SELECT * FROM {table} {where} ORDER BY {', '.join(KEYS[table])}", params)
    cols = [d[0] for d in cur.description]
    while rows := cur.fetchmany(chunk):
        for row in rows:
            yield from_row(dict(zip(cols, row, strict=True)))


def export_jsonl(store: StoreConnection, path: Path, experiment: list[str] | None = None) -> int:
    """Write the store as JSONL records: every ExperimentRecord, then every EpisodeRecord,
    then every Measurement, one per line, each ordered by its key; returns the episode
    count. ``ingest`` of the file rebuilds the same store (every field, labels, scores,
    published metrics; ``format_version`` on each line), and exporting that store again
    gives the same bytes. Lines are redacted
    (:func:`~evalatlas.records.evallog.record_json`).

    Written by :func:`evalatlas.safe_write.open_output`: a regular file through a
    temporary file renamed into place (an interrupted or failed export leaves neither a
    partial file nor the temporary one), a device or ``-`` streamed to; errors are one
    line (:class:`~evalatlas.errors.OutputError`).
    """
    n = 0
    with open_output(path) as fh:
        for exp in iter_experiments(store, experiment):
            fh.write(record_json(exp) + "\n")
        for ep in iter_episodes(store, experiment):
            fh.write(record_json(ep) + "\n")
            n += 1
        for m in _iter_table(store, "measurements", measurement_from_row, experiment):
            fh.write(record_json(m) + "\n")
    return n


def export_parquet(store: StoreConnection, directory: Path) -> dict[str, int]:
    """Write every table as ``<table>.parquet`` in ``directory``; returns row counts.

    ``experiments``, ``episodes`` and ``measurements`` hold the record columns (with
    ``format_version``), ordered by key, without the store's ``source_file`` /
    ``ingest_batch``; ``ingest DIR`` reads such a folder back (adapter
    ``evalatlas-parquet``). pandas, polars and DuckDB read the files as they are.

    Text cells are redacted on the way out (:mod:`evalatlas.store.redaction`), so a store
    written before a redaction rule existed still exports clean. ``directory`` is created
    when its parent folder exists; each file is written whole or not at all
    (:mod:`evalatlas.safe_write`).
    """
    make_folder(directory)
    counts = {}
    with redaction_functions(store.con):
        for table in TABLES:
            select = redacted_select(store.con, table)
            if table in RECORD_TABLES:
                # records only, in key order: ingest of the folder rebuilds them and a
                # second export is identical (the store's own bookkeeping stays home)
                select = (f"SELECT * EXCLUDE (source_file, ingest_batch) FROM ({select}) "
                          f"ORDER BY {', '.join(KEYS[table])}")
            # each file whole or not at all (evalatlas.safe_write.temp_path)
            with temp_path(directory / f"{table}.parquet") as tmp:
                store.con.execute(f"COPY ({select}) TO '{_sql_str(tmp)}' (FORMAT parquet)")
            counts[table] = store.count(table)
    return counts


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")
