"""Episodes as pandas frames, and a frame back into a throw-away in-memory store.

``episodes_frame`` is what :meth:`evalatlas.api.Store.episodes` returns: every episode
column plus the experiment's identifying columns. ``store_from_frame`` loads such a frame
(or any frame with at least ``experiment_id``, ``trajectory_id``, ``task_id``) into an
in-memory store, so the public API computes a user's frame with exactly the queries it
uses for a store file (one definition of every aggregate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalatlas.errors import ArgumentError
from evalatlas.store.db import Store
from evalatlas.store.schema import EPISODE_COLUMNS, EXPERIMENT_COLUMNS
from evalatlas.store.selection import experiments_of, id_filter

if TYPE_CHECKING:
    import pandas as pd

EXPERIMENT_FIELDS = ("experiment_name", "agent_id", "agent_name", "framework_name",
                     "benchmark_name", "benchmark_version", "subset_name", "subset_n_tasks",
                     "labels")
"""Experiment columns added to each episode row (none of them is an episode column)."""

REQUIRED = ("experiment_id", "trajectory_id", "task_id")


def episodes_frame(
    store: Store, *, benchmark: str | list[str] | None = None,
    agent: str | list[str] | None = None, experiment: str | list[str] | None = None,
) -> pd.DataFrame:
    """One row per episode: every ``episodes`` column and :data:`EXPERIMENT_FIELDS`;
    ``benchmark``, ``agent``, ``experiment``: names or ids (one or a list) as every
    selector takes them (:mod:`evalatlas.selectors`), all of them applying."""
    ids = experiments_of(store, experiment=experiment, agent=agent, benchmark=benchmark)
    where, params = id_filter(ids)
    cols = ", ".join([f"e.{c}" for c in EPISODE_COLUMNS] + [f"x.{c}" for c in EXPERIMENT_FIELDS])
    return store.con.execute(
        f"SELECT {cols} FROM episodes e LEFT JOIN experiments x USING (experiment_id) "
        f"{where} ORDER BY e.experiment_id, e.task_id, e.attempt, e.trajectory_id",
        params).df()



def experiments_frame(store: Store) -> pd.DataFrame:
    """One row per experiment record (every ``experiments`` column), by name then id:
    what :meth:`evalatlas.api.Store.experiments` returns."""
    return store.con.execute(
        "SELECT * FROM experiments ORDER BY experiment_name, experiment_id").df()


_NUMERIC = ("DOUBLE", "BIGINT", "INTEGER", "FLOAT", "HUGEINT", "SMALLINT")


def _bad_value(values: Any, boolean: bool) -> Any:
    """The first non-missing value of an object column that is not a number (or, for a
    boolean column, not a bool or 0/1); ``_NONE`` when every value is fine."""
    import math
    from numbers import Real

    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if boolean:
            if isinstance(v, bool) or (hasattr(v, "dtype") and v.dtype.kind == "b"):
                continue
            if isinstance(v, Real) and not isinstance(v, str) and v in (0, 1):
                continue
            return v
        if isinstance(v, Real) and not isinstance(v, bool | str) and not (
                hasattr(v, "dtype") and v.dtype.kind == "b"):
            continue
        return v
    return _NONE


_NONE = object()


def check_frame_types(frame: pd.DataFrame, types: dict[str, str]) -> None:
    """:class:`~evalatlas.errors.ArgumentError` naming the first episode column of
    ``frame`` whose values cannot be what the store holds there (``types``: column ->
    DuckDB type): text in a number column (``reward`` as ``"1.0"``), or anything but
    True/False/0/1 in ``success`` (``"yes"``). Without this a string reward failed deep
    inside DuckDB and ``"yes"`` successes were silently dropped (issue 28.2)."""
    for col, dtype in types.items():
        if col not in frame.columns:
            continue
        boolean = dtype == "BOOLEAN"
        if not boolean and dtype not in _NUMERIC:
            continue
        series = frame[col]
        kind = series.dtype.kind
        if kind in "iuf" and (not boolean or series.dropna().isin([0, 1]).all()):
            continue
        if kind == "b":
            continue
        bad = _bad_value(series.tolist(), boolean) if kind == "O" else (
            series[~series.isin([0, 1])].iloc[0] if boolean and kind in "iuf"
            else series.dropna().iloc[0] if len(series.dropna()) else _NONE)
        if bad is _NONE:
            continue
        want = ("True/False (or 0/1; missing as None)" if boolean
                else "numbers (missing as None or NaN)")
        raise ArgumentError(f"the episodes frame's column {col!r} must hold {want}; it holds "
                            f"{type(bad).__name__} {bad!r:.60}")


def store_from_frame(frame: pd.DataFrame) -> Store:
    """An in-memory store holding the frame's episodes (and, from the experiment columns,
    its experiments). Columns the frame lacks are NULL; unknown columns are ignored."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"the episodes frame lacks column(s) {', '.join(missing)}; "
                         "use store.episodes() or add them")
    store = Store(":memory:")
    con = store.con
    try:
        check_frame_types(frame, dict(con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'episodes'").fetchall()))
    except ArgumentError:
        store.close()
        raise
    con.register("_evalatlas_frame", frame)
    try:
        ep_cols = [c for c in EPISODE_COLUMNS if c in frame.columns]
        con.execute(f"INSERT INTO episodes BY NAME SELECT {', '.join(ep_cols)} "
                    "FROM _evalatlas_frame")
        x_cols = [c for c in EXPERIMENT_COLUMNS
                  if c in frame.columns and c in EXPERIMENT_FIELDS]
        if x_cols:
            picks = ", ".join(f"any_value({c}) AS {c}" for c in x_cols)
            known = " OR ".join(f"{c} IS NOT NULL" for c in x_cols)
            con.execute(f"INSERT INTO experiments BY NAME SELECT experiment_id, {picks} "
                        f"FROM _evalatlas_frame WHERE {known} GROUP BY experiment_id")
    finally:
        con.unregister("_evalatlas_frame")
    return store
