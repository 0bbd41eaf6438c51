"""The protocol every public result implements, and its short text and HTML views.

A result (``ea.summary(...)``, ``ea.compare(...)``, ``store.ingest(...)``, an atlas fit
...) is rows plus run-level values: ``schema`` names its JSON envelope
(``evalatlas.summary/1``), ``rows`` are its table (one dict per row), ``meta`` its
run-level values, ``notes`` the sentences a reader needs, ``to_dict()`` the JSON the CLI
prints with ``--format json`` and ``to_pandas()`` the rows as a DataFrame.

Why a repr of its own: a dataclass repr prints every row (10k-117k characters for a
summary of a real store), so a notebook or a REPL drowned in numbers. :func:`short_repr`
says what the result is in one line, ``<SummaryResult evalatlas.summary/1: 6 rows x 33
columns, 1 note>``, and :func:`html_repr` shows the first rows as a table (every value
escaped: a task id or agent name may hold markup) for Jupyter's ``_repr_html_``.

A root-level utility (no evalatlas import, no pandas): every layer's results use it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

HTML_ROWS = 10
"""Rows :func:`html_repr` shows (then a line saying how many more there are)."""
HTML_COLUMNS = 12
"""Columns :func:`html_repr` shows (then how many more)."""
HTML_NOTES = 10
"""Notes :func:`html_repr` shows (then how many more)."""
HTML_CELL_CHARS = 60
"""Characters of one cell :func:`html_repr` shows (longer values end in ``...``)."""


@runtime_checkable
class Result(Protocol):
    """What every public result has (see the module docstring). ``to_pandas`` imports
    pandas; everything else is plain Python."""

    @property
    def schema(self) -> str: ...

    @property
    def rows(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...

    @property
    def notes(self) -> Sequence[str]: ...

    def to_dict(self) -> dict[str, Any]: ...

    def to_pandas(self) -> Any: ...

    def _repr_html_(self) -> str: ...


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def columns_of(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every key of ``rows``, in first-seen order (rows may differ in their keys)."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(str(key), None)
    return list(seen)


def _shape(result: Result) -> str:
    rows = list(result.rows)
    notes = list(result.notes)
    text = f"{_plural(len(rows), 'row')} x {_plural(len(columns_of(rows)), 'column')}"
    return f"{text}, {_plural(len(notes), 'note')}" if notes else text


def short_repr(result: Result) -> str:
    """``<ClassName schema: N rows x M columns, K notes>``: what the result is, never its
    data (a short line whatever its size)."""
    return f"<{type(result).__name__} {result.schema}: {_shape(result)}>"


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    elif isinstance(value, float):
        text = f"{value:.4g}"
    else:
        text = str(value)
    if len(text) > HTML_CELL_CHARS:
        text = text[: HTML_CELL_CHARS - 3] + "..."
    return html.escape(text)


def html_repr(result: Result) -> str:
    """A small HTML table for notebooks: the heading of :func:`short_repr`, the first
    :data:`HTML_ROWS` rows and :data:`HTML_COLUMNS` columns, then the first
    :data:`HTML_NOTES` notes. Every value is escaped (names and notes come from the
    data)."""
    rows = list(result.rows)
    cols = columns_of(rows)
    shown = cols[:HTML_COLUMNS]
    parts = [f"<div class=\"evalatlas-result\"><p><b>{html.escape(type(result).__name__)}"
             f"</b> <code>{html.escape(result.schema)}</code>: "
             f"{html.escape(_shape(result))}</p>"]
    if rows:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in shown)
        body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in shown)
                       + "</tr>" for r in rows[:HTML_ROWS])
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        more = []
        if len(rows) > HTML_ROWS:
            more.append(f"{len(rows) - HTML_ROWS} more rows")
        if len(cols) > HTML_COLUMNS:
            more.append(f"{len(cols) - HTML_COLUMNS} more columns")
        if more:
            parts.append(f"<p>... {html.escape(', '.join(more))} (<code>.to_pandas()</code>"
                         " has them all)</p>")
    notes = list(result.notes)
    if notes:
        items = [f"<li>{html.escape(str(n))}</li>" for n in notes[:HTML_NOTES]]
        if len(notes) > HTML_NOTES:
            items.append(f"<li>... {len(notes) - HTML_NOTES} more notes</li>")
        parts.append("<ul>" + "".join(items) + "</ul>")
    parts.append("</div>")
    return "".join(parts)


class ResultViews:
    """Mixin: :func:`short_repr` as ``__repr__`` and :func:`html_repr` as
    ``_repr_html_`` for a class that has ``schema``, ``rows``, ``meta`` and ``notes``.
    (A dataclass subclass must say ``repr=False``, or the dataclass repr that prints
    every row replaces this one.)"""

    def __repr__(self: Result) -> str:  # the class that mixes it in is a Result
        return short_repr(self)

    def _repr_html_(self: Result) -> str:
        return html_repr(self)
