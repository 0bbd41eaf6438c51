"""Results of the lake maintenance commands (``evalatlas lake info|compact``, issue 23).

Plain tables: what a lake holds and what compaction did; the store computes them
(:mod:`evalatlas.store.lake_admin`), these carry them to the CLI and the API with the
one result protocol (``to_dict``, ``to_pandas``, a short repr).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evalatlas.analysis.results import TableResult


@dataclass
class LakeInfoResult(TableResult):
    """One row per lake table (``table``, ``rows``, ``data_files``, ``bytes``,
    ``delete_files``, ``delete_bytes``); ``meta``: ``location`` (password redacted),
    ``data_path``, ``snapshot`` read, ``snapshots``, ``oldest_snapshot``,
    ``newest_snapshot``, ``newest_snapshot_time``, ``episodes``."""

    SCHEMA: ClassVar[str] = "evalatlas.lake-info/1"


@dataclass
class LakeCompactResult(TableResult):
    """One row: ``flushed_inlined`` (tables whose inlined rows went to Parquet),
    ``merged_files``, ``expired_snapshots``, ``deleted_files``, ``deleted_orphans``,
    ``data_files_before``, ``data_files_after``, ``snapshot`` (the newest after);
    ``meta``: ``location``, ``older_than_s``."""

    SCHEMA: ClassVar[str] = "evalatlas.lake-compact/1"
