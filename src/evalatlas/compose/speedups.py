"""FC-Eval speedups, composed once for ``ea.speedups`` / ``ea.speedup_detail``,
``evalatlas speedups`` and the report's speedup views (store -> episodes, measurements
and bounds (:func:`evalatlas.store.speedups.load_speedup_rows`) -> per-task payloads ->
:func:`evalatlas.analysis.speedups.speedup_result`)."""

from __future__ import annotations

from collections.abc import Sequence

from evalatlas.analysis.speedups import (
    SpeedupDetail,
    SpeedupResult,
    speedup_result,
    task_payloads,
)
from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import select_experiments
from evalatlas.store.speedups import benchmark_detail, load_speedup_rows


def speedups_of(store: StoreConnection, *, by: str = "agent", level: int = 4,
                experiment: object = None, agent: str | Sequence[str] | None = None,
                task: list[str] | None = None, confidence: float = 0.95,
                resamples: int = 2000) -> SpeedupResult:
    """Speedups per agent:model (or per task) of the selected experiments (names or ids;
    None: all)."""
    rows = load_speedup_rows(store, experiment=select_experiments(store, experiment),
                             agent=agent, task=task)
    payloads = task_payloads(rows.episodes, rows.measurements, rows.bounds)
    return speedup_result(payloads, by, level=level, confidence=confidence,
                          resamples=resamples)


def speedup_detail_of(store: StoreConnection, *, experiment: object = None,
                      agent: str | Sequence[str] | None = None,
                      task: list[str] | None = None, limit: int | None = None
                      ) -> SpeedupDetail:
    """Per-benchmark FC-Eval rows as stored (a note when there is none)."""
    rows = benchmark_detail(store, experiment=select_experiments(store, experiment),
                            agent=agent, task=task, limit=limit)
    notes = [] if rows else ["no measurements; run `evalatlas ingest PATH` first"]
    return SpeedupDetail(rows=rows, notes=notes)
