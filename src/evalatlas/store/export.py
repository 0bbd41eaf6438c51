"""Exports from the store: the seed's flat JSONL, and Parquet for other engines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from evalatlas.records.evallog import record_json
from evalatlas.records.models import EpisodeRecord
from evalatlas.store.db import Store
from evalatlas.store.redaction import redacted_select, redaction_functions
from evalatlas.store.rows import episode_from_row

TABLES = ("experiments", "episodes", "measurements", "quarantine", "ingest_batches")


def iter_episodes(
    store: Store, experiment: list[str] | None = None, chunk: int = 10_000
) -> Iterator[EpisodeRecord]:
    """Stream stored episodes as records, ordered by experiment and trajectory."""
    where, params = "", []
    if experiment:
        marks = ", ".join("?" for _ in experiment)
        where = (f"WHERE experiment_id IN ({marks}) OR experiment_id IN "
                 f"(SELECT experiment_id FROM experiments WHERE experiment_name IN ({marks}))")
        params = [*experiment, *experiment]
    cur = store.con.cursor()
    cur.execute(f"SELECT * FROM episodes {where} ORDER BY experiment_id, trajectory_id", params)
    cols = [d[0] for d in cur.description]
    while True:
        rows = cur.fetchmany(chunk)
        if not rows:
            break
        for row in rows:
            yield episode_from_row(dict(zip(cols, row, strict=True)))


def export_jsonl(store: Store, path: Path, experiment: list[str] | None = None) -> int:
    """Write one self-contained EpisodeRecord per line; returns the count. Lines are
    redacted (:func:`~evalatlas.records.evallog.record_json`).

    Written to a temporary file and renamed, so an interrupted export leaves no partial
    file under the final name.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for ep in iter_episodes(store, experiment):
            fh.write(record_json(ep) + "\n")
            n += 1
    tmp.replace(path)
    return n


def export_parquet(store: Store, directory: Path) -> dict[str, int]:
    """Write every table as ``<table>.parquet`` in ``directory``; returns row counts.

    Text cells are redacted on the way out (:mod:`evalatlas.store.redaction`), so a store
    written before a redaction rule existed still exports clean.
    """
    directory.mkdir(parents=True, exist_ok=True)
    counts = {}
    with redaction_functions(store.con):
        for table in TABLES:
            target = directory / f"{table}.parquet"
            tmp = directory / f".{table}.parquet.tmp"
            store.con.execute(f"COPY ({redacted_select(store.con, table)}) "
                              f"TO '{_sql_str(tmp)}' (FORMAT parquet)")
            tmp.replace(target)
            counts[table] = store.count(table)
    return counts


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")
