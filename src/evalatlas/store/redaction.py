"""Redaction at the store boundary: every string written to or exported from the store.

The rules live in :mod:`evalatlas.records.redact` (the one redaction function); this
module only applies them to store rows, in three places:

- :func:`redact_rows`: rows written through :meth:`StoreConnection.write_batch` (exact-path ingest,
  judge, runner), in Python, cell by cell;
- :func:`redact_arrow`: Arrow tables of rows (the columnar batch of adapters' episodes,
  the fast JSONL path's staged chunks): :func:`arrow_row_gate` flags the rows that may
  hold a credential, in Arrow's RE2, and only those go through :func:`redact_rows`
  (:func:`redact_batch_in_place` does the same, in SQL, to rows already written);
- :func:`redacted_select` (built on :func:`redacted_columns`): ``export parquet`` (and any
  other SQL-side export), so a store written before a rule existed is still exported
  clean.

The SQL forms cost one RE2 scan (:data:`~evalatlas.records.redact.PREFILTER`, a necessary
condition for any change) per text cell, the Arrow gate one per distinct value of a
column; only matching cells call back into Python.
Key columns (experiment/trajectory ids, benchmark) and ``source_file`` are identifiers,
not content, and are left as they are: redacting them could merge distinct rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from evalatlas.records.redact import PREFILTER, might_hold_secret, redact, redact_text
from evalatlas.store.schema import KEYS

if TYPE_CHECKING:
    import pyarrow as pa

_TEXT_TYPES = ("VARCHAR", "JSON", "VARCHAR[]")
_UDF_TEXT = "evalatlas_redact_text"
_UDF_JSON = "evalatlas_redact_json"
_UDF_LIST = "evalatlas_redact_list"


def _skipped(table: str) -> set[str]:
    return {*KEYS.get(table, ()), "source_file", "problem_key"}


def redact_json_text(text: str) -> str:
    """A JSON document with :func:`redact` applied to its parsed value (keys at any
    depth, string leaves); text that is not JSON is redacted as plain text. Returned
    as is when the prefilter (or a ``\\u`` escape that could hide a key) does not match."""
    if "\\u" not in text and not might_hold_secret(text):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return redact_text(text)
    red = redact(value)
    return text if red == value else json.dumps(red, ensure_ascii=False)


def _redact_list(values: list[str | None] | None) -> list[str | None] | None:
    if values is None:
        return None
    return [redact_text(v) if isinstance(v, str) else v for v in values]


def redact_rows(table: str, columns: Sequence[str], types: dict[str, str],
                rows: list[tuple], *, flagged: bool = False) -> list[tuple]:
    """``rows`` of ``table`` (cells in ``columns`` order) with every text cell redacted.

    ``flagged``: the rows are ones :func:`arrow_row_gate` flagged (it matched the prefilter on
    each already, in RE2): the row's own pre-check, a Python ``re`` scan of all its text
    (~0.1 ms for a Terminal-Bench trial whose task names passwords), is skipped, and
    each text's redaction is remembered for this call (a task's description repeats in
    every trial of it). The cells come out the same either way: each cell's redaction
    starts with the prefilter on that cell."""
    skip = _skipped(table)
    text: Any = redact_text
    json_text: Any = redact_json_text
    if flagged:
        text, json_text = lru_cache(maxsize=1024)(text), lru_cache(maxsize=1024)(json_text)
    fns: list[tuple[int, Any]] = []
    for i, col in enumerate(columns):
        kind = types.get(col)
        if col in skip or kind not in _TEXT_TYPES:
            continue
        fns.append((i, {"VARCHAR": text, "JSON": json_text,
                        "VARCHAR[]": _redact_list}[kind]))
    if not fns:
        return rows
    out = []
    get = itemgetter(*(i for i, _ in fns))
    lists = [i for i, col in enumerate(columns) if types.get(col) == "VARCHAR[]"
             and col not in skip]
    for row in rows:
        # one pre-check over the row's text (a match across a cell boundary is only a
        # false alarm), then the cells one by one
        if not flagged:
            vals = get(row) if len(fns) > 1 else (get(row),)
            blob = "\x1f".join([v for v in vals if type(v) is str])
            for i in lists:
                if row[i]:
                    blob += "\x1f" + "\x1f".join([x for x in row[i] if type(x) is str])
            if "\\u" not in blob and not might_hold_secret(blob):
                out.append(row)
                continue
        cells = list(row)
        for i, fn in fns:
            if cells[i] is not None:
                cells[i] = fn(cells[i])
        out.append(tuple(cells))
    return out


def column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {table}").fetchall()}


@contextmanager
def redaction_functions(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The redaction UDFs registered on ``con`` for the duration of the block (removed
    after, else DuckDB's bindings report leaked objects at exit). Reentrant: when they
    are registered already (functions are the database's, whichever cursor registered
    them), the block uses them and leaves them to their owner."""
    if con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = ?",
                   [_UDF_TEXT]).fetchall()[0][0]:
        yield
        return
    # memoised for the block: a batch repeats its texts (a task's description in every
    # trial of it), and a text with credential-like words costs a regex pass per rule
    con.create_function(_UDF_TEXT, lru_cache(maxsize=1024)(redact_text), ["VARCHAR"],
                        "VARCHAR")
    con.create_function(_UDF_JSON, lru_cache(maxsize=1024)(redact_json_text), ["VARCHAR"],
                        "VARCHAR")
    con.create_function(_UDF_LIST, _redact_list, ["VARCHAR[]"], "VARCHAR[]")
    try:
        yield
    finally:
        con.execute("SELECT 1").fetchall()  # closes a half-fetched result, which blocks removal
        for name in (_UDF_TEXT, _UDF_JSON, _UDF_LIST):
            con.remove_function(name)


_ESCAPE = r"\\u"
"""RE2 for a ``\\u`` escape in JSON text (it may spell any letter, so a key it hides is
not seen by :data:`PREFILTER`)."""


def _sql_pattern() -> str:
    """:data:`PREFILTER` as a SQL string literal."""
    return "'" + f"(?:{PREFILTER})".replace("'", "''") + "'"


def _match_and_fix(col: str, kind: str) -> tuple[str, str]:
    """(SQL condition: the cell may hold a secret, SQL expression: the redacted cell)."""
    q = f'"{col}"'
    pat = _sql_pattern()
    if kind == "VARCHAR[]":
        return (f"regexp_matches(array_to_string({q}, chr(10)), {pat})", f"{_UDF_LIST}({q})")
    if kind == "JSON":
        text = f"CAST({q} AS VARCHAR)"
        return (f"(regexp_matches({text}, {pat}) OR contains({text}, '\\u'))",
                f"CAST({_UDF_JSON}({text}) AS JSON)")
    return f"regexp_matches({q}, {pat})", f"{_UDF_TEXT}({q})"


def _text_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    skip = _skipped(table)
    return [(c, t) for c, t in column_types(con, table).items()
            if t in _TEXT_TYPES and c not in skip]


def redact_batch_in_place(con: duckdb.DuckDBPyConnection, table: str, batch_id: int) -> int:
    """Redact the rows of ``table`` written by ingest batch ``batch_id``; returns how many
    rows changed. Call inside the batch's transaction."""
    types = column_types(con, table)
    where = " OR ".join(_match_and_fix(c, t)[0] for c, t in _text_columns(con, table))
    sets = ", ".join(f'"{col}" = {case}' for col, case in _redacting(table, types).items())
    with redaction_functions(con):
        n = con.execute(f"SELECT count(*) FROM {table} WHERE ingest_batch = ? AND ({where})",
                        [batch_id]).fetchall()[0][0]
        if n:
            con.execute(f"UPDATE {table} SET {sets} WHERE ingest_batch = ? AND ({where})",
                        [batch_id])
    return int(n)


def _redacting(table: str, types: dict[str, str]) -> dict[str, str]:
    """Text column -> SQL expression of its redacted cell (only matching cells call
    Python), for the columns of ``types`` (name -> DuckDB type) that hold content."""
    skip = _skipped(table)
    out = {}
    for col, kind in types.items():
        if kind in _TEXT_TYPES and col not in skip:
            cond, fix = _match_and_fix(col, kind)
            out[col] = f'CASE WHEN {cond} THEN {fix} ELSE "{col}" END'
    return out


def redacted_columns(table: str, types: dict[str, str]) -> list[str]:
    """SQL select-list items, one per column of ``types`` (name -> DuckDB type) in order,
    that redact the text cells of rows of ``table``. Use inside
    :func:`redaction_functions`."""
    cases = _redacting(table, types)
    return [f'{cases[col]} AS "{col}"' if col in cases else f'"{col}"' for col in types]


def gated_columns(table: str, types: dict[str, str]) -> dict[str, str]:
    """The columns of ``types`` (name -> DuckDB type) whose cells :func:`arrow_row_gate`
    scans and :func:`redact_rows` redacts: text columns that hold content (not keys, not
    ``source_file``)."""
    skip = _skipped(table)
    return {c: t for c, t in types.items() if t in _TEXT_TYPES and c not in skip}


GATE_PATTERN = "|".join([f"(?:{PREFILTER})", _ESCAPE])
"""RE2 of the row gate (:func:`arrow_row_gate`): :data:`PREFILTER` or a ``\\u`` escape."""


def arrow_row_gate(rows: pa.Table, columns: dict[str, str]) -> np.ndarray:
    """Boolean per row of ``rows``: true when some cell of ``columns`` (name -> DuckDB
    type, the gated columns of :func:`gated_columns` that hold a value) matches
    :data:`GATE_PATTERN`, in Arrow's RE2 (the gate of :func:`redact_arrow`).

    Each column's distinct values are scanned once (a SWE-bench batch's ``status``,
    ``extra`` or ``outcome_source`` is one value in 10,000 rows; its ``task_id`` 500),
    and a list column's distinct items (a fast JSONL chunk's ``tool_names`` holds
    ~307k items, a handful of them distinct: scanning each item was most of the gate's
    ~25 ms a 61,440-line chunk). Why not a gate in DuckDB (the joined cells of each row
    matched by ``regexp_matches``, until arrow7): its registration, the join of every
    row's cells and the scan of the joined text cost ~7 ms of CPU for 10,000 SWE-bench
    episodes, ~9 for the 4,000 of an Inspect log and ~17 for 4,000 Terminal-Bench
    trials (one thread); this ~1.0, ~4.2 and ~6.0 (same batches, same flags). It flags
    every row the redaction could change: a cell the redaction changes matches the
    pattern by itself (each cell's redaction, :func:`redact_rows`, starts with this
    prefilter on that cell; a list's on each item)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flags = np.zeros(rows.num_rows, dtype=bool)
    # every column's distinct values (a list's distinct items) in one array, scanned by
    # one call: each call compiles the pattern again (~0.15 ms a column)
    parts: list[tuple[Any, Any, Any]] = []  # (cells, distinct values, a list's items)
    for col, kind in columns.items():
        cells = rows.column(col)
        if kind == "VARCHAR[]":  # one chunk: a chunked array's parent indices are per chunk
            cells = cells.combine_chunks()
            items = pc.list_flatten(cells)
            parts.append((cells, pc.unique(items), items))
        else:
            parts.append((cells, pc.unique(cells), None))
    if not parts:
        return flags
    hits = pc.match_substring_regex(
        pa.concat_arrays([values.cast(pa.string()) for _, values, _ in parts]), GATE_PATTERN)
    if not pc.any(hits).as_py():
        return flags
    start = 0
    for cells, values, items in parts:
        hit = hits.slice(start, len(values))
        start += len(values)
        if not pc.any(hit).as_py():
            continue
        if items is not None:  # the rows holding an item that matched
            at = pc.list_parent_indices(cells).filter(
                pc.is_in(items, value_set=values.filter(hit)))
            flags[np.asarray(at, dtype=np.int64)] = True
        else:
            flags |= np.asarray(pc.fill_null(
                pc.is_in(cells, value_set=values.filter(hit)), False), dtype=bool)
    return flags


def batch_flagged(con: duckdb.DuckDBPyConnection, table: str, batch_id: int,
                  columns: dict[str, str]) -> bool:
    """Whether some cell of ``columns`` (name -> DuckDB type, gated columns) of the rows
    of ``table`` stored as batch ``batch_id`` matches :data:`GATE_PATTERN`: each
    column's distinct values (a list's distinct items) scanned once, as
    :func:`arrow_row_gate` scans a chunk's. For the fast JSONL path's whole-file try
    (:mod:`evalatlas.store.fast_jsonl.whole`), inside its transaction, after the
    insert: scanning every row's cells in the statement cost ~1.3 of ~10 CPU s at 1M
    episodes, this query 0.14 s of wall time (session 23), since a batch's tasks,
    tools, models and statuses repeat."""
    scans = []
    for col, kind in columns.items():
        q = f'"{col}"'
        value = (f"unnest({q})" if kind == "VARCHAR[]"
                 else f"CAST({q} AS VARCHAR)" if kind == "JSON" else q)
        scans.append(f"SELECT DISTINCT {value} AS v FROM {table} "
                     f"WHERE ingest_batch = {int(batch_id)}")
    if not scans:
        return False
    union = " UNION ALL ".join(f"SELECT v FROM ({scan})" for scan in scans)
    return bool(con.execute(f"SELECT coalesce(bool_or(regexp_matches(v, ?)), false) "
                            f"FROM ({union})", [GATE_PATTERN]).fetchall()[0][0])


def redact_arrow(table: str, rows: pa.Table, types: dict[str, str]) -> pa.Table:
    """``rows`` (an Arrow table holding columns of ``table``, with ``types``: name ->
    DuckDB type, and maybe others, which are left as they are) with every text cell
    redacted, in the same row order: :func:`arrow_row_gate` over the gated columns
    that hold a value finds the rows that may hold a credential, and only those go
    through the exact path's :func:`redact_rows` (memoised for the call: a
    Terminal-Bench task's description, which names passwords, repeats in all its
    trials). ``rows`` itself when nothing is flagged (the common case) or the redaction
    changed nothing.

    The columnar path (:meth:`~evalatlas.store.db.StoreConnection.insert_table`) and
    the fast JSONL path (:mod:`evalatlas.store.fast_jsonl.prepare`) both redact so. Why
    not in DuckDB (the fast path staged a chunk in a table and UPDATEd its flagged rows
    through UDFs until arrow7): the staging table cost more than the rows it spared
    (see :mod:`evalatlas.store.fast_jsonl.prepare`), and for a columnar batch of a few
    thousand rows the UDFs' registration and per-row callbacks cost more than the
    redaction itself."""
    import pyarrow as pa

    gated = {c: t for c, t in gated_columns(table, types).items()
             if c in rows.column_names and rows.column(c).null_count < rows.num_rows}
    flags = arrow_row_gate(rows, gated)
    if not flags.any():
        return rows
    at = np.flatnonzero(flags)
    columns = list(gated)
    flagged = rows.select(columns).take(pa.array(at))
    cells = list(zip(*(flagged.column(c).to_pylist() for c in columns), strict=True))
    red = redact_rows(table, columns, types, cells, flagged=True)
    # only the columns in which a cell changed are rebuilt: the gate's prefilter flags
    # more than holds a secret (an Inspect sample's random uuid spelling "pwd": 12 of
    # 4,000), and rebuilding the whole table for those rows cost ~3 ms of an ingest
    for j, col in enumerate(columns):
        new = [r[j] for r in red]
        if new == [c[j] for c in cells]:
            continue
        values = rows.column(col).to_pylist()
        for i, v in zip(at.tolist(), new, strict=True):
            values[i] = v
        k = rows.schema.get_field_index(col)
        field = rows.schema.field(k)
        rows = rows.set_column(k, field, pa.array(values, type=field.type))
    return rows


def redacted_select(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """``SELECT`` of every column of ``table`` with text cells redacted; run it inside
    :func:`redaction_functions`."""
    exprs = redacted_columns(table, column_types(con, table))
    return f"SELECT {', '.join(exprs)} FROM {table}"
