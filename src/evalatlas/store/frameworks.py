"""Framework-comparison records from the store (SQL only).

Experiments carrying a ``framework`` label (framework-comparison convention: labels
``framework``, ``scenario``, ``mode``, ``profile``) and their episodes, as records; the
grouping and metrics are in :mod:`evalatlas.analysis.frameworks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.store.db import StoreConnection
from evalatlas.store.rows import episode_from_row, experiment_from_row
from evalatlas.store.selection import id_filter


def load_framework_records(
    store: StoreConnection,
    *,
    scenario: str | None = None,
    mode: str | None = None,
    frameworks: Sequence[str] | None = None,
) -> tuple[list[ExperimentRecord], list[EpisodeRecord]]:
    """Framework-comparison records (experiments with a ``framework`` label and their
    episodes), filtered by scenario/mode/framework; grouped by
    :func:`evalatlas.analysis.frameworks.group_records`."""
    where = ["json_extract_string(labels, '$.framework') IS NOT NULL"]
    params: list[Any] = []
    if scenario:
        where.append("coalesce(json_extract_string(labels, '$.scenario'), benchmark_name) = ?")
        params.append(scenario)
    if mode:
        where.append("json_extract_string(labels, '$.mode') = ?")
        params.append(mode)
    if frameworks:
        clause, values = id_filter(list(frameworks), "json_extract_string(labels, "
                                   "'$.framework')", joiner="")
        where.append(clause.strip())
        params.extend(values)
    xrows = store.query(f"SELECT * FROM experiments WHERE {' AND '.join(where)} "
                        "ORDER BY experiment_name, experiment_id", params)
    experiments = [experiment_from_row(r) for r in xrows]
    if not experiments:
        return [], []
    ids_where, ids = id_filter([x.experiment_id for x in experiments], "experiment_id")
    erows = store.query(f"SELECT * FROM episodes {ids_where} "
                        "ORDER BY experiment_id, coalesce(attempt, 0), task_id", ids)
    episodes = [episode_from_row(r) for r in erows]
    return experiments, episodes
