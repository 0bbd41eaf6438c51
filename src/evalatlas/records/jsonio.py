"""Strict JSON reading and atomic writing.

Strict because Python's ``json`` accepts ``NaN`` and ``Infinity``, which are not JSON
and which EEE's validator rejects; a metric fed an ``Infinity`` reward is silently wrong.
Atomic because a crash mid-write must never leave a half-written record behind.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from evalatlas import safe_write
from evalatlas.errors import InputError, Problem


class NonFiniteJSONError(ValueError):
    """A JSON text contained NaN, Infinity or -Infinity; ``field`` is its dotted path."""

    def __init__(self, literal: str, field: str | None = None) -> None:
        where = f" in field {field!r}" if field else ""
        super().__init__(f"non-finite number {literal}{where} is not valid JSON")
        self.literal = literal
        self.field = field


class _NonFinite:
    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _find_non_finite(value: Any, path: str = "") -> tuple[str, str] | None:
    if isinstance(value, _NonFinite):
        return path, value.literal
    if isinstance(value, dict):
        for k, v in value.items():
            found = _find_non_finite(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _find_non_finite(v, f"{path}.{i}" if path else str(i))
            if found:
                return found
    return None


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that rejects NaN / Infinity literals, naming the field that held one."""
    seen: list[str] = []

    def constant(name: str) -> _NonFinite:
        seen.append(name)
        return _NonFinite(name)

    def number(literal: str) -> float | _NonFinite:
        value = float(literal)
        if math.isinf(value):  # 1e999: valid JSON syntax, but no double holds it
            seen.append(literal)
            return _NonFinite(literal)
        return value

    value = json.loads(text, parse_constant=constant, parse_float=number)
    if seen:
        found = _find_non_finite(value)
        field, literal = found if found else (None, seen[0])
        raise NonFiniteJSONError(literal, field or None)
    return value


def describe_json_error(exc: Exception, *, single_line: bool = False) -> str:
    """A one-line reason for a JSON parse failure, naming the position.

    ``single_line`` drops the line number (for JSONL, where the caller names the line).
    """
    if isinstance(exc, json.JSONDecodeError):
        msg = exc.msg.removesuffix(" at")
        if single_line:
            return f"invalid JSON: {msg} (column {exc.colno})"
        return f"invalid JSON: {msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
    return str(exc)


def nesting_depth(value: Any) -> int:
    """Deepest nesting of objects and arrays in ``value`` (a scalar is 0), iteratively."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest


def too_deep_reason(max_depth: int) -> str:
    from evalatlas.records import limits

    return (f"nested more than {max_depth} levels deep (objects and arrays); "
            f"{limits.current().raise_hint('max_json_depth')}")


def parse_jsonl_line(raw: bytes, path: Path | str, lineno: int, max_depth: int = 100) -> Any:
    """One JSONL line as a value, or a :class:`Problem` naming file, line and field.

    Decisions (the fast path makes the same ones): NaN, Infinity and numbers too large
    for a double (``1e999``) are rejected naming the field; a record nested deeper than
    ``max_depth`` is rejected; a lone surrogate escape (``"\\ud800"``) is rejected when
    the record is stored (it cannot be encoded as UTF-8); duplicate keys: the last value
    wins, as in Python's ``json``.
    """
    try:
        value = loads_strict(raw.decode("utf-8"))
    except NonFiniteJSONError as exc:
        return Problem(str(path), str(exc), field=exc.field, line=lineno)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Problem(str(path), describe_json_error(exc, single_line=True), line=lineno)
    except RecursionError:
        return Problem(str(path), too_deep_reason(max_depth), line=lineno)
    # Only a line with at least max_depth openers can be that deep: skip the walk otherwise.
    if raw.count(b"{") + raw.count(b"[") > max_depth and nesting_depth(value) > max_depth:
        return Problem(str(path), too_deep_reason(max_depth), line=lineno)
    return value


def read_json_file(path: Path) -> Any:
    """Read one JSON document, raising :class:`InputError` naming the file on any failure."""
    if path.is_dir():
        raise InputError.at(path, "is a directory, expected a JSON file")
    from evalatlas.records import limits

    limit = limits.current().max_record_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise InputError.at(path, f"file is {size:,} bytes, over the {limit:,}-byte limit "
                                "for one JSON document "
                                f"({limits.current().raise_hint('max_record_bytes')})")
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError.at(path, f"cannot read: {exc.strerror or exc}") from exc
    if not raw.strip():
        raise InputError.at(path, "empty file")
    try:
        return loads_strict(raw.decode("utf-8"))
    except NonFiniteJSONError as exc:
        raise InputError.at(path, str(exc), field=exc.field) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError.at(path, describe_json_error(exc)) from exc
    except RecursionError as exc:
        raise InputError.at(path, too_deep_reason(limits.current().max_json_depth)) from exc


_LINE_BREAKERS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Serialise with NaN forbidden (raises) so nothing non-standard is ever written.

    Non-ASCII text is kept readable, except U+0085, U+2028 and U+2029, which are escaped:
    ``str.splitlines()`` (and many JSONL readers) treat them as line breaks, which would
    cut a JSONL record in two.
    """
    text = json.dumps(value, indent=indent, allow_nan=False, ensure_ascii=False)
    for raw, escaped in _LINE_BREAKERS.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (:func:`evalatlas.safe_write.write_text`:
    a temporary file in the same directory, fsynced, renamed; readers see the old file or
    the new one, never a mixture). The directory is created: an EvalLog folder's layout
    (``episodes/<id>/``) is the writer's own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    safe_write.write_text(path, text)
