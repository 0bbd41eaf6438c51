"""The columnar write path: a batch of records as one Arrow table, checked in one conversion.

Why: every adapter's episodes used to become one row tuple each, checked value by value
(:func:`~evalatlas.store.rows.row_problem`) and redacted cell by cell in Python
(:func:`~evalatlas.store.redaction.redact_rows`) before Arrow saw them; for 10,000
SWE-bench instances that was two thirds of the ingest. Here a batch's rows (each
flattened as its record arrives, :func:`~evalatlas.store.rows.episode_row`, so a batch
holds one object per episode) become one Arrow table of the store's types in one
conversion (:func:`arrow_rows`), which is the check: an integer its column cannot
hold or a lone surrogate (no UTF-8 for it) fails it. Only then are the batch's rows checked
one by one (:func:`batch_problems`, the same :func:`~evalatlas.store.rows.row_problem`
as before), so a bad record is quarantined with the same field and reason and its
neighbours are stored. Redaction
(:meth:`evalatlas.store.db.StoreConnection.insert_table`): a gate in Arrow
(:func:`~evalatlas.store.redaction.arrow_row_gate`) flags the rows that may hold a
credential, and only those go through the exact path's
:func:`~evalatlas.store.redaction.redact_rows`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalatlas.store.rows import agent_models, row_problem

if TYPE_CHECKING:
    import pyarrow as pa


def arrow_rows(schema: pa.Schema, rows: list[tuple]) -> pa.Table | None:
    """``rows`` (tuples in ``schema``'s column order) as an Arrow table of ``schema``'s
    types, in one conversion (a struct array of the rows: 2-3x cheaper than turning the
    rows into columns and converting each, 0.02 -> 0.01 s for 10,000 SWE-bench rows), or
    None when some value does not convert: then :func:`batch_problems` names it."""
    import pyarrow as pa

    try:
        return pa.Table.from_struct_array(pa.array(rows, type=pa.struct(list(schema))))
    except (ValueError, OverflowError, TypeError, pa.ArrowException):
        return None


def with_agent_models(table: pa.Table, experiments: dict[str, tuple]) -> pa.Table:
    """``table`` (an episodes batch) with ``llm_model`` filled by
    :func:`~evalatlas.store.rows.agent_models` (the rule's one definition)."""
    import pyarrow as pa

    filled = agent_models(table.column("usage_model").to_pylist(),
                          table.column("experiment_id").to_pylist(), experiments)
    if filled is None:
        return table
    at = table.schema.get_field_index("llm_model")
    return table.set_column(at, table.schema.field(at), pa.array(filled, pa.string()))


def batch_problems(table: str, columns: dict[str, list[Any]]) -> dict[int, tuple[str, str]]:
    """Row index -> (field, reason) for each row of ``columns`` a value of which its
    column cannot hold (:func:`~evalatlas.store.rows.row_problem`, row by row: only
    called when the columnar conversion failed)."""
    out = {}
    for i, row in enumerate(zip(*columns.values(), strict=True)):
        bad = row_problem(table, row)
        if bad is not None:
            out[i] = bad
    return out


def without_rows(columns: dict[str, list[Any]], drop: set[int]) -> dict[str, list[Any]]:
    """``columns`` without the rows at the indexes ``drop``."""
    return {name: [v for i, v in enumerate(values) if i not in drop]
            for name, values in columns.items()}


FSST_MAX_RATIO = 8
"""FSST codes at least one byte per 8 bytes of a string (its symbols are 1-8 bytes long)."""


def text_repeats(table: pa.Table) -> bool:
    """True when every text column of ``table`` (strings, or the items of a list of
    strings) that holds a value has at most one distinct value per
    :data:`FSST_MAX_RATIO` values: then the store's commit need not analyse FSST for it
    (:meth:`~evalatlas.store.db.StoreConnection.write_batch`'s ``checkpoint``).

    Why: at a checkpoint DuckDB estimates every compression method of each column and
    keeps the smallest; FSST's estimate was ~9 of the ~27 ms of CPU of committing
    10,000 SWE-bench episodes, and FSST is never chosen there. A dictionary stores each
    distinct string once, FSST every row's string at no better than 8 to 1, so a
    column repeating each value 8 times or more on average is left to the dictionary
    (a rule of thumb, not a proof: uneven repeats could still favour FSST; store sizes
    of the fixture folders are measured equal, ``tests/store/test_columnar.py``). A
    column of mostly distinct texts (Terminal-Bench's trial ids and ``extra``, SWE-Bench
    Pro's ``extra``, where FSST wins) keeps the analysis. An empty table: False."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return False
    for col in table.columns:
        kind = col.type
        if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
            col = pc.list_flatten(col)
        elif not pa.types.is_string(kind):
            continue
        values = len(col) - col.null_count
        if values and pc.count_distinct(col).as_py() * FSST_MAX_RATIO > values:
            return False
    return True
