"""The episodes the CI gate compares, per side (SQL only; the statistics are in
:mod:`evalatlas.analysis.gate`).

A side is a :class:`~evalatlas.store.sides.Side` resolved by the same selector rules as
``compare`` (:func:`evalatlas.store.sides.resolve`); the gate also needs each episode's
benchmark and split (its groups) and timestamp (the order of the sequential test).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalatlas.store.db import Store
from evalatlas.store.selection import id_filter
from evalatlas.store.sides import Side, object_column


def _floats(column: Any) -> np.ndarray:
    return np.ma.filled(np.ma.asarray(column, dtype=float), np.nan)


def load_gate_side(store: Store, side: Side) -> dict[str, np.ndarray]:
    """Per-episode arrays of one side, known outcomes only (an unknown outcome is not a
    failure): ``task``, ``benchmark`` and ``split`` (None when unrecorded), ``success``
    (0/1), ``reward`` and ``timestamp`` (NaN when unrecorded)."""
    where, params = id_filter(list(side.experiment_ids))
    arr = store.query_arrays(
        f"SELECT e.task_id, x.benchmark_name, e.split, e.success, e.reward, e.timestamp "
        f"FROM episodes e LEFT JOIN experiments x USING (experiment_id) "
        f"{where} AND e.success IS NOT NULL", params)
    return {
        "task": np.asarray(arr["task_id"], dtype=object),
        "benchmark": object_column(arr["benchmark_name"]),
        "split": object_column(arr["split"]),
        "success": np.asarray(arr["success"], dtype=float),
        "reward": _floats(arr["reward"]),
        "timestamp": _floats(arr["timestamp"]),
    }
