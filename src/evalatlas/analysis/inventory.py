"""``evalatlas agents``: the agents (experiments, benchmarks) a store holds, as a result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evalatlas.analysis.results import TableResult


@dataclass
class InventoryResult(TableResult):
    """Rows: ``id`` (agent id, experiment id or benchmark name), ``name``, ``episodes``,
    ``tasks`` (distinct task ids), ``experiments``, ``agents``, ``benchmarks`` (names)
    and ``agent_names``; ``meta["list"]``: agents, experiments or benchmarks. The names
    are what ``--agent``, ``--experiment``, ``--benchmark`` and ``compare`` accept (any
    case, ``-``/``_``/space alike, a unique prefix or substring)."""

    SCHEMA: ClassVar[str] = "evalatlas.agents/1"


def inventory_result(rows: list[dict[str, Any]], what: str) -> InventoryResult:
    """The result of :func:`evalatlas.agents` for rows of
    :func:`evalatlas.store.inventory.inventory_rows`."""
    notes = [] if rows else ["the store holds no episodes; add results with "
                             "`evalatlas ingest PATH`"]
    return InventoryResult(rows=rows, meta={"list": what, "count": len(rows)}, notes=notes)
