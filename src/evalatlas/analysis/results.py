"""Analysis results beside :class:`~evalatlas.records.results.TableResult` (defined with
the output contract in ``records/``, re-exported here where the analyses import it):
:class:`QuarantineResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evalatlas.records.results import TableResult

__all__ = ["QuarantineResult", "TableResult"]


@dataclass
class QuarantineResult(TableResult):
    """Input rejected during ingest (``Store.quarantine()``, ``evalatlas quarantine``).

    ``rows``: one per rejected record, newest ingest batch first: ``file``, ``line``
    (None when the format has no lines), ``record`` (its id or name when known),
    ``field``, ``reason`` and ``batch`` (the ingest batch). ``meta["total"]``: rejected
    records in the whole store (the rows may be limited or filtered)."""

    SCHEMA: ClassVar[str] = "evalatlas.quarantine/1"

    @property
    def total(self) -> int:
        return int(self.meta.get("total", len(self.rows)))
