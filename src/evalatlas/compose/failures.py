"""Why agents fail, composed once for ``ea.failures``, ``evalatlas failures``, the report's
"Why agents fail" view and ``atlas fit --exclude-infeasible`` (store -> the findings
rows -> :func:`evalatlas.analysis.failures.failures_result`)."""

from __future__ import annotations

from collections.abc import Sequence

from evalatlas.analysis.failures import FailuresResult, failures_result
from evalatlas.store.db import StoreConnection
from evalatlas.store.findings import findings_rows
from evalatlas.store.selection import select_agents, select_benchmarks, select_experiments


def failures(store: StoreConnection, *, by: str = "agent", agent: Sequence[str] | None = None,
             benchmark: Sequence[str] | None = None,
             experiment: Sequence[str] | None = None,
             confidence: float = 0.95) -> FailuresResult:
    """The :class:`FailuresResult` of the store's failed and investigated episodes,
    grouped by ``by`` and selected by agent, benchmark and experiment (ids or names as
    people type them: :mod:`evalatlas.store.selection`, an unknown one an error)."""
    rows = findings_rows(store, by=by, agent=select_agents(store, agent or None),
                         benchmark=select_benchmarks(store, benchmark or None),
                         experiment=select_experiments(store, experiment or None))
    return failures_result(rows, by=by, confidence=confidence)
