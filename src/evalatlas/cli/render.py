"""Render rows as a rich table, JSON, CSV or Markdown: ``--format`` on every data command.

JSON output is an envelope ``{"schema": "evalatlas.<command>/<version>", ...,
"rows": [...]}``; rows keep raw values (numbers unrounded, missing values ``null``,
NaN and infinity as ``null`` plus, for infinity, the string "inf" - see
:func:`json_safe`). Scripts should key on ``schema``: a breaking change bumps its version.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evalatlas.text import json_safe, md_escape


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def fmt_value(value: Any, digits: int = 3) -> str:
    """Human formatting for tables: missing as "-", floats to ``digits`` significant places."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and abs(value) < 10 ** -digits:
            return f"{value:.2e}"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {fmt_value(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(fmt_value(v) for v in value) or "-"
    return str(value)


Column = tuple[str, str] | tuple[str, str, Callable[[dict[str, Any]], str]]
"""(key, header) or (key, header, formatter-of-the-whole-row) for table/markdown output."""


def _cells(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> list[list[str]]:
    out = []
    for row in rows:
        cells = []
        for col in columns:
            if len(col) == 3:
                cells.append(col[2](row))  # type: ignore[misc]
            else:
                cells.append(fmt_value(row.get(col[0])))
        out.append(cells)
    return out


def render(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    fmt: OutputFormat | str,
    *,
    schema: str,
    title: str | None = None,
    meta: dict[str, Any] | None = None,
    console: Console | None = None,
    notes: Sequence[str] = (),
) -> str | None:
    """Render ``rows``; for ``table`` print to ``console`` and return None, else return text."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.json:
        env = {"schema": schema, **(meta or {}), "rows": [json_safe(dict(r)) for r in rows]}
        if notes:
            env["notes"] = list(notes)
        return json.dumps(env, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    if fmt is OutputFormat.csv:
        buf = io.StringIO()
        keys: list[str] = []
        for r in rows:
            for k in r:
                if k not in keys:
                    keys.append(k)
        w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_value(v) for k, v in json_safe(dict(r)).items()})
        return buf.getvalue()
    cells = _cells(rows, columns)
    headers = [c[1] for c in columns]
    if fmt is OutputFormat.markdown:
        lines = []
        if title:
            lines += [f"### {md_escape(title)}", ""]
        lines.append("| " + " | ".join(md_escape(h) for h in headers) + " |")
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        for row in cells:
            lines.append("| " + " | ".join(md_escape(c) for c in row) + " |")
        for n in notes:
            lines += ["", md_escape(n)]
        return "\n".join(lines) + "\n"
    table = Table(title=escape(title) if title else None)
    for h in headers:
        table.add_column(escape(h))
    for row in cells:
        table.add_row(*(escape(c) for c in row))
    con = console or Console()
    con.print(table)
    for n in notes:
        con.print(escape(n))
    return None


def _csv_value(v: Any) -> Any:
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    return v
