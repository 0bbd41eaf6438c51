"""The ingest path's few parameterised statements, with their values written in.

Why: duckdb 1.5.5's Python client imports pandas (when it is installed) the first time
it binds a parameter that is not None, to test the value against pandas' types:
measured 0.28-0.34 s of CPU per process, once (a third of a 20,000-episode ingest's
~1 s, ~2.5% of a 1M-episode one's 13 s), while an ingest needs no pandas otherwise. So
the statements an ingest runs with values (the store's ``meta`` and ``files`` rows, the
``ingest_batches`` rows, the exact path's few-row upserts, the completion of missing
costs, two look-ups) give them as SQL literals, typed as the parameters were (a float
as a DOUBLE from its shortest round-trip text, a naive datetime as a TIMESTAMP, a list
of strings as a VARCHAR[]). A value a literal cannot carry the same way (a NUL, which
ends DuckDB's quoted string; a lone surrogate, which the query's UTF-8 encoding
refuses; any other type) is bound as a parameter, as before, so what a statement
stores, accepts or refuses does not change (``tests/store/test_literals.py``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

import duckdb

Value = str | int | float | bool | _dt.datetime | _dt.date | None | list[str]


class _NoLiteral(ValueError):
    """The value is bound as a parameter instead."""


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):  # naive: a TIMESTAMP, as bound
        if value.tzinfo is not None:
            raise _NoLiteral("a datetime with a time zone")
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if not isinstance(value, (int, float, str, list)):
        raise _NoLiteral(type(value).__name__)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):  # repr: the shortest text that reads back as this double
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise _NoLiteral("a list of other than strings")
        return "[" + ", ".join(_literal(v) for v in value) + "]::VARCHAR[]"
    if "\0" in value:
        raise _NoLiteral("a NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _NoLiteral("a lone surrogate") from exc
    return "'" + value.replace("'", "''") + "'"


def execute(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Value | object]
            ) -> duckdb.DuckDBPyConnection:
    """``con.execute(sql, params)``, with ``params`` written into ``sql`` as literals
    when they can all be (see the module docstring). ``sql``'s only question marks are
    its placeholders."""
    parts = sql.split("?")
    if len(parts) != len(params) + 1:
        raise ValueError(f"{len(parts) - 1} placeholders for {len(params)} values")
    try:
        values = [_literal(v) for v in params]
    except _NoLiteral:
        return con.execute(sql, list(params))
    return con.execute("".join(p + v for p, v in zip(parts, values, strict=False))
                       + parts[-1])
