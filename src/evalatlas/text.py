"""Text safety for output: strict-JSON values, Markdown, terminal and CSV escaping of
agent-produced text.

Shared by the CLI renderer and the reports (both must escape what agents wrote).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Any


def json_safe(value: Any, strings: Callable[[str], str] | None = None) -> Any:
    """Make a value strict-JSON: NaN -> null, ±infinity -> "inf"/"-inf", recursively
    (dict keys as strings, tuples as lists, numpy scalars as Python ones).
    ``strings``: applied to every string value (not to keys), so that a caller that
    also rewrites the text (a result envelope's redaction) walks the value once; a
    summary's envelope holds ~370,000 values."""
    kind = type(value)
    if kind is str:
        return value if strings is None else strings(value)
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if value - value == 0.0 else _non_finite(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            vk = type(v)
            if (vk is float and v - v == 0.0) or vk is int or vk is bool or v is None:
                out[k if type(k) is str else str(k)] = v
            else:
                out[k if type(k) is str else str(k)] = json_safe(v, strings)
        return out
    if isinstance(value, str):  # a str subclass
        return value if strings is None else strings(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else _non_finite(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v, strings) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, strings) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return json_safe(value.item(), strings)
    return value


def _non_finite(value: float) -> str | None:
    """NaN -> None, ±infinity -> "inf"/"-inf" (:func:`json_safe`)."""
    if math.isnan(value):
        return None
    return "inf" if value > 0 else "-inf"


_MD_SPECIAL = str.maketrans({
    "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "`": "\\`", "*": "\\*", "_": "\\_",
    "[": "\\[", "]": "\\]", "\n": " ", "\r": " ",
})


def md_escape(text: str) -> str:
    """Escape agent-produced text for a Markdown table cell (no HTML, no links, one line)."""
    return str(text).translate(_MD_SPECIAL)


# ---------------------------------------------------------------- terminal and CSV safety
# C0 controls except tab and newline (so CR, ESC, BEL, backspace ...), DEL, C1 controls
# (0x80-0x9f, incl. the 8-bit CSI and OSC), and the Unicode bidi overrides/isolates that
# reorder what a reader sees ("Trojan source").
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every character that could drive a terminal shown as a visible
    escape (``\\x1b``, ``\\r``-as-``\\x0d``, ``\\u202e``); tab and newline are kept, a CRLF
    line end becomes LF. ANSI/OSC sequences (colours, cursor moves, hyperlinks, title
    changes, clipboard writes) lose their ESC/CSI and print as plain text.
    """
    return _UNSAFE.sub(_visible, str(text).replace("\r\n", "\n"))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf")


def csv_cell(value: Any) -> Any:
    """A spreadsheet-safe CSV cell (OWASP "CSV injection").

    Rule: a text cell whose first character is ``=``, ``+``, ``-``, ``@``, tab or CR (or
    their full-width forms) gets a leading ``'``, which spreadsheets show as text and
    never evaluate, unless the whole cell is a plain number (``-0.5``, ``+3``, ``1e-9``,
    ``-inf``): negative numbers stay numbers. Control characters other than tab, CR and
    LF are made visible as in :func:`terminal_safe` (a CSV is often ``cat``-ed); CR and
    LF are kept and the cell is quoted by :func:`csv_line`. Non-strings are returned
    as they are.
    """
    if not isinstance(value, str):
        return value
    text = _UNSAFE.sub(lambda m: m.group() if m.group() == "\r" else _visible(m), value)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        text = "'" + text
    return text


def csv_line(cells: Iterable[Any]) -> str:
    """One RFC 4180 CSV line ending in ``\\n``: a cell holding ``,``, ``"``, CR or LF is
    quoted (Python's csv module leaves a bare CR unquoted when lines end in LF, which
    splits the row in most readers); ``None`` is empty. Cells go through
    :func:`csv_cell`."""
    out = []
    for cell in cells:
        text = "" if cell is None else str(csv_cell(cell))
        if any(c in text for c in ',"\r\n'):
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    return ",".join(out) + "\n"


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_indented(value: Any) -> str:
    """``json.dumps(value, indent=2, allow_nan=False, ensure_ascii=False)``, byte for byte,
    in a fraction of the time: the standard library writes indented JSON in Python (a
    100M-episode summary's 13 MB envelope: ~0.5 s), its C encoder only compact JSON.
    Here the C encoder writes the compact text (numbers and strings exactly as the
    indented form writes them) and msgspec's ``json.format`` adds the indentation,
    copying every token as it is (``tests/test_text.py`` checks it against
    ``json.dumps`` on awkward values). Text msgspec cannot take (a lone surrogate, which
    is not UTF-8) is written by ``json.dumps`` itself."""
    import msgspec

    compact = json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    try:
        return msgspec.json.format(compact, indent=2)
    except UnicodeEncodeError:
        return json.dumps(value, indent=2, allow_nan=False, ensure_ascii=False)


def json_text_safe(text: str) -> str:
    """JSON text with DEL, C1 controls and bidi overrides written as ``\\uXXXX`` escapes
    (``json.dumps(..., ensure_ascii=False)`` escapes only C0); the JSON value is the same."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def markdown_table(headers: list[str], rows: list[list[str]], *,
                   escape: bool = True) -> list[str]:
    """The one Markdown table renderer: header, ``| --- |`` separator, one line per row.

    Headers are always escaped with :func:`md_escape`; cells too unless ``escape=False``
    (the caller escaped them already, keeping its own Markdown). Returns the lines.
    """
    def line(cells: list[str], esc: bool) -> str:
        return "| " + " | ".join(md_escape(c) if esc else str(c) for c in cells) + " |"

    return [line(headers, True), "| " + " | ".join("---" for _ in headers) + " |",
            *(line(r, escape) for r in rows)]


_NEGATIVE_ZERO = re.compile(r"(?<![\w.])-(0(?:\.0+)?)(?![\w.])")


def no_negative_zero(text: str) -> str:
    """``text`` with every number that reads as a negative zero (``-0.0``, ``-0``, as
    ``f"{-0.0001:+.1f}"`` gives) written without its sign: a difference that rounds to
    zero is zero, not a loss. Numbers are matched whole (``-0.05`` and ``x-0`` stay)."""
    return _NEGATIVE_ZERO.sub(r"\1", text)


def fmt_value(value: Any, digits: int = 3) -> str:
    """Human formatting for tables and for sentences in result notes (one formatter, so a
    note reads like the table beside it): missing as "-", floats to ``digits`` places."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == 0:
            value = 0.0  # -0.0 prints as 0.000
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
