"""Episodes as pandas frames, and a frame back into a throw-away in-memory store.

``episodes_frame`` is what :meth:`evalatlas.api.Store.episodes` returns: every episode
column plus the experiment's identifying columns. ``store_from_frame`` puts such a frame
(or any frame with at least ``experiment_id``, ``trajectory_id``, ``task_id``) behind an
in-memory store, so the public API computes a user's frame with exactly the queries it
uses for a store file (one definition of every aggregate).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalatlas.errors import ArgumentError
from evalatlas.store.db import StoreConnection
from evalatlas.store.schema import EPISODE_COLUMNS, EXPERIMENT_COLUMNS
from evalatlas.store.selection import experiments_of, id_filter

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

EXPERIMENT_FIELDS = ("experiment_name", "agent_id", "agent_name", "framework_name",
                     "benchmark_name", "benchmark_version", "subset_name", "subset_n_tasks",
                     "labels")
"""Experiment columns added to each episode row (none of them is an episode column)."""

REQUIRED = ("experiment_id", "trajectory_id", "task_id")

ARROW_BATCH_ROWS = 1_000_000
"""Rows per Arrow batch :func:`arrow_in_order` reads (DuckDB's default)."""


def episodes_frame(
    store: StoreConnection, *, benchmark: str | list[str] | None = None,
    agent: str | list[str] | None = None, experiment: str | list[str] | None = None,
) -> pd.DataFrame:
    """One row per episode: every ``episodes`` column and :data:`EXPERIMENT_FIELDS`;
    ``benchmark``, ``agent``, ``experiment``: names or ids (one or a list) as every
    selector takes them (:mod:`evalatlas.selectors`), all of them applying. Rows come in
    the store's order (the order they were ingested), the same every time.

    Every column is Arrow-backed (``pd.ArrowDtype``), taken without a copy from DuckDB's
    streamed Arrow result: text (JSON included, as its text) stays in Arrow buffers instead
    of one Python object per cell, and there is no sort of the whole rows. 2M episodes took
    5.8 GB through ``.df()`` with an ORDER BY; ~1.7 GB now (issue 28.6, BENCHMARKS.md). An
    Arrow column cannot be freed alone (DuckDB hands over each batch's columns together),
    so any copy here (a sort, a dtype conversion) would cost the whole frame again."""
    import pandas as pd

    ids = experiments_of(store, experiment=experiment, agent=agent, benchmark=benchmark)
    where, params = id_filter(ids)
    cols = ", ".join([f"e.{c}" for c in EPISODE_COLUMNS] + [f"x.{c}" for c in EXPERIMENT_FIELDS])
    table = arrow_in_order(
        store, f"SELECT {cols} FROM episodes e LEFT JOIN experiments x USING (experiment_id) "
        f"{where}", params)
    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype, self_destruct=True)
    del table  # self_destruct: its buffers now belong to the frame
    return frame


def arrow_in_order(store: StoreConnection, sql: str,
                   params: Sequence[Any] | None = None) -> pa.Table:
    """The rows of ``sql`` as one Arrow table in the order DuckDB produces them: its
    ORDER BY, or without one the tables' insertion order.

    The store's connection runs with ``preserve_insertion_order`` off (faster scans and
    writes), and with it off DuckDB may collect a result's Arrow batches in the order its
    threads finish them; here the query runs with it on and is read through DuckDB's
    streamed Arrow reader, so the order is DuckDB's contract and needs no second sort in
    Python. The setting is global to the database, so it is restored afterwards."""
    con = store.con
    row = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()
    preserve = bool(row and row[0])
    con.execute("SET preserve_insertion_order = true")
    try:
        return con.sql(sql, params=params or None).to_arrow_reader(
            ARROW_BATCH_ROWS).read_all()
    finally:
        con.execute(f"SET preserve_insertion_order = {'true' if preserve else 'false'}")


def experiments_frame(store: StoreConnection) -> pd.DataFrame:
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


FRAME_MEMORY_LIMIT = "128MB"
"""DuckDB's working memory for the queries over a frame (it spills beyond, into the
system temp folder). The data is the frame, already in memory outside DuckDB. Peak RSS of
``ea.summary(store.episodes())`` at 2M episodes: 2.05 GB with the store's 1 GB budget,
1.94 GB with 256 MB, 1.85 GB with 128 MB (no spill)."""


def scannable(frame: pd.DataFrame) -> Any:
    """What DuckDB scans for ``frame``: a frame of Arrow-backed columns only (as
    :func:`episodes_frame` gives) as the Arrow table under it (no copy; DuckDB reads only
    the columns a query needs); any other frame as it is."""
    import pandas as pd
    import pyarrow as pa

    if len(frame.columns) and all(isinstance(t, pd.ArrowDtype) for t in frame.dtypes):
        return pa.Table.from_pandas(frame, preserve_index=False)
    return frame


def store_from_frame(frame: pd.DataFrame) -> StoreConnection:
    """An in-memory store whose ``episodes`` is a view over the frame (and whose
    ``experiments`` come from its experiment columns). Columns the frame lacks are NULL;
    unknown columns are ignored.

    A view, not a copy: DuckDB scans the registered frame in place (Arrow-backed columns
    without converting them), each column cast to the store's type, so the queries are
    exactly those of a store file while the frame is held once (issue 28.6: a 2M-episode
    frame was copied whole into the in-memory table). The frame stays registered until the
    store is closed."""
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"the episodes frame lacks column(s) {', '.join(missing)}; "
                         "use store.episodes() or add them")
    store = StoreConnection(":memory:")
    con = store.con
    try:
        con.execute(f"SET memory_limit = '{FRAME_MEMORY_LIMIT}'")
        types = dict(con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'episodes' ORDER BY ordinal_position").fetchall())
        check_frame_types(frame, types)
        con.register("_evalatlas_frame", scannable(frame))
        source = {c: f'f."{c}"' if c in frame.columns else "NULL" for c in types}
        picks = ", ".join(f'CAST({source[c]} AS {t}) AS "{c}"' for c, t in types.items())
        con.execute("BEGIN TRANSACTION")
        con.execute("DROP TABLE episodes")
        con.execute(f"CREATE VIEW episodes AS SELECT {picks} FROM _evalatlas_frame f")
        x_cols = [c for c in EXPERIMENT_COLUMNS
                  if c in frame.columns and c in EXPERIMENT_FIELDS]
        if x_cols:
            picks = ", ".join(f"any_value({c}) AS {c}" for c in x_cols)
            known = " OR ".join(f"{c} IS NOT NULL" for c in x_cols)
            con.execute(f"INSERT INTO experiments BY NAME SELECT experiment_id, {picks} "
                        f"FROM _evalatlas_frame WHERE {known} GROUP BY experiment_id")
        con.execute("COMMIT")
    except BaseException:
        store.close()
        raise
    return store
