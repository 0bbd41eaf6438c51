"""Strict JSON reading and atomic writing.

Strict because Python's ``json`` accepts ``NaN`` and ``Infinity``, which are not JSON
and which EEE's validator rejects; a metric fed an ``Infinity`` reward is silently wrong.
Atomic because a crash mid-write must never leave a half-written record behind.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import msgspec

from evalatlas import collector, safe_write
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


_decode = msgspec.json.decode


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that rejects NaN / Infinity literals, naming the field that held one.

    msgspec's decoder is tried first (~3x cheaper than ``json.loads`` with the non-finite
    hooks): it accepts only standard JSON, and whatever it accepts ``json.loads`` reads to
    the same value (the last of duplicate keys wins, numbers are correctly rounded, big
    integers stay exact). Anything it refuses (NaN, ``1e999``, a lone surrogate escape,
    too deep a nesting, broken syntax, an integer over its range) is parsed again by
    ``json.loads``, which decides and words the error exactly as before
    (``tests/records/test_jsonio.py`` checks both on valid and hostile documents)."""
    try:
        return _decode(text)
    except Exception:  # any refusal: the exact parse decides
        return _loads_exact(text)


def loads_like_python(raw: str | bytes) -> Any:
    """``json.loads(raw)``'s value (NaN and Infinity read as Python's ``json`` reads them,
    for formats such as Inspect's that may write them), msgspec first as in
    :func:`loads_strict`: ``json.loads`` decides whatever msgspec refuses, and raises
    its own errors.

    The cyclic garbage collector is paused while it decodes (:mod:`evalatlas.collector`:
    an Inspect log's 2.7 MB of sample summaries, 20 -> 9 ms of CPU)."""
    with collector.paused():
        try:
            return _decode(raw)
        except Exception:  # any refusal: the exact parse decides
            return json.loads(raw)


def _loads_exact(text: str | bytes) -> Any:
    """:func:`loads_strict` by ``json.loads`` alone (the decision on refused input)."""
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


ABSENT: Any = object()
"""What :func:`read_json_file_if_present` returns for a file that does not exist."""


def read_json_file(path: Path | str) -> Any:
    """Read one JSON document, raising :class:`InputError` naming the file on any failure.

    One ``open``, one ``fstat`` (the size limit) and one read: an EvalLog folder of
    10,000 episodes reads 10,000 of these, where a ``stat`` of its own per check added up
    to a third of the read."""
    return _read_json(path, missing_ok=False)


def read_json_file_if_present(path: Path | str) -> Any:
    """:func:`read_json_file`, or :data:`ABSENT` when nothing is at ``path`` (nor a
    symbolic link to something): the existence check and the read are one ``open``."""
    return _read_json(path, missing_ok=True)


def _read_json(path: Path | str, *, missing_ok: bool) -> Any:
    raw = read_document_bytes(path, missing_ok=missing_ok)
    if raw is ABSENT:
        return ABSENT
    return decode_document(path, raw)


def read_document_bytes(path: Path | str, *, missing_ok: bool = False) -> Any:
    """The bytes of one JSON document at ``path`` (:data:`ABSENT` when ``missing_ok``
    and nothing is there), raising :class:`InputError` naming the file when it cannot be
    read or is over the record size limit: the reading half of :func:`read_json_file`,
    for a caller that decodes the bytes itself first (a typed decode) and hands them to
    :func:`decode_document` otherwise."""
    from evalatlas.records import limits

    limit = limits.current().max_record_bytes
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise InputError.at(path, f"file is {size:,} bytes, over the {limit:,}-byte "
                                    "limit for one JSON document "
                                    f"({limits.current().raise_hint('max_record_bytes')})")
            return fh.read()
    except IsADirectoryError:
        raise InputError.at(path, "is a directory, expected a JSON file") from None
    except FileNotFoundError as exc:
        if missing_ok:
            return ABSENT
        raise InputError.at(path, f"cannot read: {exc.strerror or exc}") from exc
    except OSError as exc:
        raise InputError.at(path, f"cannot read: {exc.strerror or exc}") from exc


def decode_document(path: Path | str, raw: bytes) -> Any:
    """The value of the JSON document ``raw`` read from ``path`` (the decoding half of
    :func:`read_json_file`): msgspec first, the exact parse deciding and wording what
    it refuses (see :func:`loads_strict`); :class:`InputError` naming the file."""
    from evalatlas.records import limits

    try:
        return _decode(raw)  # the common case; see loads_strict
    except Exception:  # any refusal: the exact parse decides
        pass
    if not raw.strip():
        raise InputError.at(path, "empty file")
    try:
        return _loads_exact(raw.decode("utf-8"))
    except NonFiniteJSONError as exc:
        raise InputError.at(path, str(exc), field=exc.field) from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError.at(path, describe_json_error(exc)) from exc
    except ValueError as exc:  # an integer of over 4,300 digits (Python's int limit)
        raise InputError.at(path, f"invalid JSON: {exc}") from exc
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
