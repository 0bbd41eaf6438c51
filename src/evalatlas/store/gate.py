"""The episodes the CI gate compares, per side (SQL only; the statistics are in
:mod:`evalatlas.analysis.gate`).

A side is a :class:`~evalatlas.store.sides.Side` resolved by the same selector rules as
``compare`` (:func:`evalatlas.store.sides.resolve`); the gate also needs each episode's
benchmark and split (its groups) and timestamp (the order of the sequential test).
"""

from __future__ import annotations

import numpy as np

from evalatlas.store.db import StoreConnection
from evalatlas.store.sides import Side, float_column, object_column, side_episodes


def load_gate_side(store: StoreConnection, side: Side) -> dict[str, np.ndarray]:
    """Per-episode arrays of one side, known outcomes only (an unknown outcome is not a
    failure): ``task``, ``benchmark`` and ``split`` (None when unrecorded), ``success``
    (0/1), ``reward`` and ``timestamp`` (NaN when unrecorded); read by the one side query
    (:func:`evalatlas.store.sides.side_episodes`)."""
    arr = side_episodes(store, side)
    return {
        "task": np.asarray(arr["task_id"], dtype=object),
        "benchmark": object_column(arr["benchmark_name"]),
        "split": object_column(arr["split"]),
        "success": np.asarray(arr["success"], dtype=float),
        "reward": float_column(arr["reward"]),
        "timestamp": float_column(arr["timestamp"]),
    }
