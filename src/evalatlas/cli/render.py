"""Render rows as a rich table, JSON, CSV or Markdown: ``--format`` on every data command.

JSON output is an envelope ``{"schema": "evalatlas.<command>/<version>", ...,
"rows": [...]}``; rows keep raw values (numbers unrounded, missing values ``null``,
NaN and infinity as ``null`` plus, for infinity, the string "inf" - see
:func:`json_safe`). Scripts should key on ``schema``: a breaking change bumps its version.

Terminal tables fit the console width (80 columns included): :func:`fit_columns` keeps
columns in priority order while each still gets a readable width, abbreviates names in
the middle (``claude-3-7-…-20250219``), wraps other cells at spaces, and the table's
footer names the columns it had to hide. This is the one table renderer of the CLI.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from evalatlas.records.redact import redact_strings, redact_text
from evalatlas.text import (
    csv_line,
    fmt_value,
    json_indented,
    json_safe,
    json_text_safe,
    markdown_table,
    md_escape,
    no_negative_zero,
    terminal_safe,
)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


@dataclass(frozen=True)
class Col:
    """A table column.

    ``priority``: lower is kept first when the terminal is narrow (default: the column's
    position, so the first columns survive). ``kind``: ``"name"`` cells (agents, models,
    tasks) are abbreviated in the middle and never wrapped; ``"path"`` cells keep their
    end (``…/cli/compare.py``); ``"text"`` cells wrap at spaces (a word longer than the
    column is folded, never cut off).
    """

    key: str
    header: str
    format: Callable[[dict[str, Any]], str] | None = None
    priority: float | None = None
    kind: Literal["name", "path", "text"] = "text"


Column = tuple[str, str] | tuple[str, str, Callable[[dict[str, Any]], str]] | Col
"""(key, header), (key, header, formatter-of-the-whole-row) or a :class:`Col`.

A tuple's first column is taken as a name column (abbreviated, never hidden)."""


def as_col(col: Column, position: int) -> Col:
    """Normalise a column spec to :class:`Col` (tuples: priority = position)."""
    if isinstance(col, Col):
        return col if col.priority is not None else Col(
            col.key, col.header, col.format, float(position), col.kind)
    fmt = col[2] if len(col) == 3 else None
    return Col(col[0], col[1], fmt, float(position), "name" if position == 0 else "text")


def _cells(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> list[list[str]]:
    out = []
    for row in rows:
        cells = []
        for i, spec in enumerate(columns):
            col = as_col(spec, i)
            text = col.format(row) if col.format else fmt_value(row.get(col.key))
            if col.kind == "text":  # numbers live here; names and paths stay as written
                text = no_negative_zero(text)
            cells.append(_clean(text))
        out.append(cells)
    return out


def safe_text(text: object) -> str:
    """Text fit for the terminal: credentials redacted, control characters (ANSI/OSC
    escapes, C0/C1, bare CR, bidi overrides) made visible. Every message that may quote
    input or agent output goes through here."""
    return terminal_safe(redact_text(str(text)))


def _clean(text: str) -> str:
    """One place every table/markdown cell passes through (:func:`safe_text`)."""
    return safe_text(text)


# ---------------------------------------------------------------------------- layout

ELLIPSIS = "…"

TABLE_AS_TEXT: ContextVar[bool] = ContextVar("evalatlas_table_as_text", default=False)
"""Set for a command given ``-o FILE``: :func:`render` returns a table as plain text (for
the file) instead of printing it. Reset around every command (:mod:`evalatlas.cli.guard`)."""
FILE_WIDTH = 240
"""Width of a table written to a file: wide enough that no column is hidden."""
_SEPARATORS = "-_/:.@ "
MIN_READABLE = 4
"""No shown column is narrower than this many characters."""
NAME_MIN = 16
"""A name column is abbreviated to no fewer characters than this (or its full width)."""
TEXT_MIN = 12
"""A text column wraps to no fewer characters than this (or its full width)."""
WORD_MAX = 24
"""Words longer than this may be folded rather than widening their column."""


def abbreviate_middle(text: str, width: int) -> str:
    """Shorten ``text`` to ``width`` characters by replacing its middle with "…".

    Both ends carry the identity of a model/agent/file name (``claude-3-7-…-20250219``),
    so the cut is in the middle; the tail starts at a separator when one is near.
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    budget = width - 1
    tail = text[len(text) - budget // 2:]
    for i, ch in enumerate(tail[:2]):  # snap only when it costs at most one character
        if ch in _SEPARATORS:
            tail = tail[i:]
            break
    head = text[: budget - len(tail)]
    return head + ELLIPSIS + tail


def abbreviate_path(text: str, width: int) -> str:
    """Shorten a path to ``width`` characters keeping its end (the file name)."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1:] if width > 1 else text[:width]


def _shorten(text: str, width: int, kind: str) -> str:
    short = abbreviate_path if kind == "path" else abbreviate_middle
    return "\n".join(short(line, width) for line in text.splitlines() or [""])


def _longest_word(text: str) -> int:
    return max((len(w) for line in text.splitlines() for w in line.split()), default=0)


def _natural(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@dataclass(frozen=True)
class Layout:
    """Which columns a table shows (indices into the column list) and at what width."""

    shown: list[int]
    widths: dict[int, int]
    hidden: list[int]


def table_overhead(n_columns: int) -> int:
    """Characters a rich table with edges and one space of padding adds to its columns."""
    return 3 * n_columns + 1


def fit_columns(cols: Sequence[Col], cells: Sequence[Sequence[str]], width: int) -> Layout:
    """Choose the columns to show and their widths so the table fits ``width``.

    Each column has a natural width (widest header/cell line) and a minimum: names get
    ``min(natural, NAME_MIN)``, text ``max(longest word, min(natural, TEXT_MIN))`` (words
    capped at ``WORD_MAX``), never under ``MIN_READABLE``. Columns are taken in priority
    order until the next one's minimum does not fit (the rest are hidden); spare width
    then goes, in priority order, first to columns it brings to one line each, then to
    the others.
    """
    n = len(cols)
    natural, minimum = [], []
    for i, col in enumerate(cols):
        texts = [col.header] + [row[i] for row in cells]
        nat = max(MIN_READABLE, max(_natural(t) for t in texts))
        head_word = min(_longest_word(col.header), WORD_MAX)
        if col.kind != "text":
            low = max(min(nat, NAME_MIN), head_word)
        else:
            word = min(max(_longest_word(t) for t in texts), WORD_MAX)
            low = max(word, min(nat, TEXT_MIN))
        natural.append(nat)
        minimum.append(min(nat, max(MIN_READABLE, low)))
    order = sorted(range(n), key=lambda i: (cols[i].priority or 0.0, i))
    shown: list[int] = []
    used = table_overhead(0)
    for i in order:  # stop at the first that does not fit: priority is respected
        if shown and used + minimum[i] + 3 > width:
            break
        shown.append(i)
        used += minimum[i] + 3
    widths = {i: minimum[i] for i in shown}
    spare = width - used
    by_priority = [i for i in order if i in widths]
    for whole in (True, False):  # first columns that then fit on one line, then the rest
        for i in by_priority:
            grow = natural[i] - widths[i]
            if grow <= 0 or spare <= 0 or (whole and grow > spare):
                continue
            grow = min(grow, spare)
            widths[i] += grow
            spare -= grow
    return Layout(shown=sorted(shown), widths=widths,
                  hidden=[i for i in range(n) if i not in shown])


def hidden_note(headers: Sequence[str]) -> str:
    """The footer that says which columns a narrow terminal hid."""
    return (f"hidden: {', '.join(headers)} (widen the terminal or use --format json)")


def _print_table(rows_cells: list[list[str]], cols: list[Col], title: str | None,
                 notes: Sequence[str], console: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = console or Console()
    layout = fit_columns(cols, rows_cells, con.width)
    table = Table(title=escape(_clean(title)) if title else None)
    for i in layout.shown:
        col, w = cols[i], layout.widths[i]
        if col.kind != "text":
            table.add_column(escape(_clean(col.header)), width=w, no_wrap=True,
                             overflow="ellipsis")
        else:
            table.add_column(escape(_clean(col.header)), width=w, overflow="fold")
    for row in rows_cells:
        out = []
        for i in layout.shown:
            cell = row[i]
            if cols[i].kind != "text":
                cell = _shorten(cell, layout.widths[i], cols[i].kind)
            out.append(escape(cell))
        table.add_row(*out)
    con.print(table)
    for n in notes:
        con.print(escape(_clean(n)), highlight=False)
    if layout.hidden:
        con.print(escape(hidden_note([cols[i].header for i in layout.hidden])),
                  highlight=False)


def _lake_meta() -> dict[str, Any]:
    """``{"lake": {"location", "snapshot"}}`` when the command read a lake (issue 23:
    every result names the snapshot it read), else nothing (file stores' JSON is
    unchanged)."""
    db = sys.modules.get("evalatlas.store.db")
    read = db.lake_reads() if db is not None else None
    return {"lake": read} if read else {}


def with_lake_meta(envelope: dict[str, Any]) -> dict[str, Any]:
    """``envelope`` with ``"lake"`` after its ``schema`` when the command read a lake."""
    extra = _lake_meta()
    if not extra:
        return envelope
    out = {k: v for k, v in envelope.items() if k == "schema"}
    out.update(extra)
    out.update({k: v for k, v in envelope.items() if k != "schema"})
    return out


def render(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    fmt: OutputFormat | str,
    *,
    schema: str,
    title: str | None = None,
    meta: dict[str, Any] | None = None,
    console: Any | None = None,
    notes: Sequence[str] = (),
) -> str | None:
    """Render ``rows``; for ``table`` print to ``console`` and return None (or, under
    ``-o FILE``, return the table as plain text), else return text."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.json:
        env = {"schema": schema, **(meta or {}), **_lake_meta(),
               "rows": [json_safe(dict(r)) for r in rows]}
        if notes:
            env["notes"] = list(notes)
        return json_text_safe(json_indented(redact_strings(env))) + "\n"
    if fmt is OutputFormat.csv:
        keys: list[str] = []
        for r in rows:
            for k in r:
                if k not in keys:
                    keys.append(k)
        lines = [csv_line(keys)]
        for r in rows:
            safe = redact_strings(json_safe(dict(r)))
            lines.append(csv_line(_csv_value(safe.get(k)) for k in keys))
        return "".join(lines)
    cols = [as_col(c, i) for i, c in enumerate(columns)]
    cells = _cells(rows, cols)
    headers = [c.header for c in cols]
    if fmt is OutputFormat.markdown:
        lines = []
        if title:
            lines += [f"### {md_escape(_clean(title))}", ""]
        lines += markdown_table([_clean(h) for h in headers], cells)
        for n in notes:
            lines += ["", md_escape(_clean(n))]
        return "\n".join(lines) + "\n"
    if TABLE_AS_TEXT.get():  # -o FILE: the table as plain text, every column kept
        import io

        from rich.console import Console

        buf = io.StringIO()
        _print_table(cells, cols, title, notes, Console(file=buf, width=FILE_WIDTH,
                                                         color_system=None))
        return buf.getvalue()
    _print_table(cells, cols, title, notes, console)
    return None


def render_result(
    result: Any,
    columns: Sequence[Column],
    fmt: OutputFormat | str,
    *,
    title: str | None = None,
    console: Any | None = None,
    notes: Sequence[str] = (),
) -> str | None:
    """Render a typed result (:class:`evalatlas.TableResult`): ``--format json`` is
    exactly ``result.to_dict()`` (nothing added here but, on a lake, ``"lake"``: the
    location and snapshot read, see :func:`with_lake_meta`); the other formats show its rows
    with ``columns`` and its notes, then ``notes``: sentences for a reader of the table
    that restate values of ``result.meta`` (the JSON has those values already)."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.json:
        return json_text_safe(json_indented(with_lake_meta(result.to_dict()))) + "\n"
    return render(result.rows, columns, fmt, schema=result.schema, title=title,
                  meta=result.meta, console=console, notes=[*result.notes, *notes])


def _csv_value(v: Any) -> Any:
    """A cell for :func:`~evalatlas.text.csv_line` (which neutralises formulas and quotes
    CR/LF): nested values as JSON text."""
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, float) and v == 0:
        return 0.0  # never -0.0 in a spreadsheet
    return v
