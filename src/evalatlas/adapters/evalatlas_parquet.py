"""evalatlas's own Parquet export (``evalatlas export parquet DIR``), read back.

A folder holding ``experiments.parquet`` and ``episodes.parquet`` (``measurements.parquet``
optional) written by evalatlas: each row becomes its record again through the same
flattening the store uses (:mod:`evalatlas.records.flat`), so export -> ingest rebuilds the
same experiments, episodes (labels, scores, usage, extras) and measurements. Rows carry
``format_version``; a row written by a newer evalatlas is reported, not guessed at. The
store's own columns (``source_file``, ``ingest_batch``) are not part of a record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalatlas.adapters.base import Adapter, Item
from evalatlas.errors import EvalAtlasError, Problem
from evalatlas.records.flat import episode_from_row, experiment_from_row, measurement_from_row

TABLES: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("experiments", experiment_from_row),
    ("episodes", episode_from_row),
    ("measurements", measurement_from_row),
)


def _detect(path: Path) -> bool:
    return (path / "experiments.parquet").is_file() and (path / "episodes.parquet").is_file()


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
        yield from batch.to_pylist()


def read_parquet_export(folder: Path) -> Iterator[Item]:
    for table, from_row in TABLES:
        path = folder / f"{table}.parquet"
        if not path.is_file():
            continue
        try:
            rows = _rows(path)
            for i, row in enumerate(rows):
                try:
                    yield from_row(row)
                except (ValidationError, EvalAtlasError, ValueError, KeyError) as exc:
                    rid = row.get("trajectory_id") or row.get("experiment_id")
                    yield Problem(str(path), f"row is not a valid record: {exc}",
                                  record=str(rid) if rid else f"#{i}")
        except OSError as exc:
            yield Problem(str(path), f"cannot read Parquet: {exc}")


ADAPTER = Adapter(
    name="evalatlas-parquet",
    kind="dir",
    detect=_detect,
    read=read_parquet_export,
    priority=5,
    description="evalatlas's own Parquet export (experiments/episodes/measurements"
    ".parquet), read back losslessly",
)
