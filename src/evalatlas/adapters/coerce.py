"""The one coercion rule for values read from foreign formats.

Every adapter turns a foreign value into a contract value through this module, so a
``"1.0"`` reward, a ``true`` token count or a ``"NaN"`` cost means the same thing in
every format. The rule (issue 22 point 5, issue 28 point 2):

1. **Missing stays missing.** ``None`` (JSON ``null``) is missing, never 0.
2. **Booleans are not numbers.** ``true``/``false`` where a number or a count is
   expected is refused (Python would read it as 1/0). Only :func:`boolean` takes them.
3. **Not finite is missing.** NaN and infinities are missing, with a note: the floats
   ``nan``/``inf`` (a lenient reader's ``NaN`` literal) and the strings ``"NaN"``,
   ``"inf"``, ``"-Infinity"`` or ``"1e999"`` (a number no double can hold). A bare JSON
   ``1e999`` stays refused by the strict reader (:mod:`evalatlas.records.jsonio`), as
   before; it never reaches this module.
4. **Negative counts are missing.** A token, step or call count (and a cost or a
   duration, :func:`amount`) below 0 is missing, with a note; a fractional count
   (``2.5``) is refused, an integral float (``2.0``) is the count 2.
5. **Numeric strings only where documented.** A string holding a number (``"0.7"``,
   ``"91"``) is read as that number only where the format is documented to write
   numbers as strings (``strings=True``: EEE's ``additional_details``, which the schema
   types as strings; Inspect's score values, which ``value_to_float`` parses); anywhere
   else it is refused. So is any other type (a list, an object, free text, ``""``).

A *refused* value raises :class:`Refused` with a reason in words. A value made
*missing* by rules 3-4 comes back as ``Coerced(None, note)``. What the adapter does with
either is per field, through :class:`Fields`: a field of an episode (its outcome, its
usage) is ``strict`` (a refusal quarantines that record, naming the field), a value of
the run's metadata is lenient (a refusal makes it missing with a note, never a lost
file). Notes go to the record's ``extra["coercion_notes"]`` (``{field: note}``), so
nothing is changed without a trace.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from evalatlas.errors import EvalAtlasError, InputError

T = TypeVar("T")

NOTES_KEY = "coercion_notes"
"""The ``extra`` key under which a record keeps ``{field: note}`` for values made
missing (or left out) by the rule."""

_NUMERIC = re.compile(
    r"^\s*[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)\s*$",
    re.IGNORECASE)
_SHOWN = 40
_FLOAT_MAX = sys.float_info.max
_EXACT = 2**53
"""Integers up to this are exact as floats (the fast answers of :class:`Fields`)."""


class Refused(EvalAtlasError, ValueError):
    """A value the coercion rule does not turn into the wanted type; ``reason`` says why
    in words (it never is a bare exception text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Coerced(NamedTuple, Generic[T]):
    """A coerced value, and a note when the rule made it missing."""

    value: T | None
    note: str | None = None


def describe(x: Any) -> str:
    """A short description of a foreign value for a reason (``a list``, ``'yes'``)."""
    if isinstance(x, bool):
        return f"a boolean ({'true' if x else 'false'})"
    if x is None:
        return "null"
    if isinstance(x, str):
        shown = x if len(x) <= _SHOWN else x[:_SHOWN] + "..."
        return f"the string {shown!r}" if x else "an empty string"
    if isinstance(x, int | float):
        return repr(x)
    if isinstance(x, dict):
        return "an object"
    if isinstance(x, list | tuple):
        return "a list"
    return f"a {type(x).__name__}"


def number(x: Any, *, strings: bool = False) -> Coerced[float]:
    """A finite float, or missing (rules 1-3, 5 of the module docstring)."""
    if x is None:
        return Coerced(None)
    if isinstance(x, bool):
        raise Refused(f"{describe(x)} is not a number")
    if isinstance(x, int):
        return Coerced(float(x))
    if isinstance(x, float):
        if math.isfinite(x):
            return Coerced(x)
        return Coerced(None, f"{x!r} is not a finite number; missing")
    if isinstance(x, str):
        if not _NUMERIC.match(x):
            raise Refused(f"{describe(x)} is not a number")
        f = float(x)
        if not math.isfinite(f):
            return Coerced(None, f"{describe(x)} is not a finite number; missing")
        if not strings:
            raise Refused(f"{describe(x)}: this format writes a number here, not a string")
        return Coerced(f)
    raise Refused(f"{describe(x)} is not a number")


def amount(x: Any, *, strings: bool = False) -> Coerced[float]:
    """A finite number >= 0 (a cost, a duration); negative is missing with a note."""
    c = number(x, strings=strings)
    if c.value is not None and c.value < 0:
        return Coerced(None, f"negative ({describe(x)}); missing")
    return c


def count(x: Any, *, strings: bool = False) -> Coerced[int]:
    """A whole number >= 0 (tokens, steps, calls, samples): rules 1-5; ``2.0`` is 2,
    ``2.5`` is refused, a negative count is missing with a note."""
    c = number(x, strings=strings)
    if c.value is None:
        return Coerced(None, c.note)
    if c.value != int(c.value):
        raise Refused(f"{describe(x)} is not a whole number")
    if c.value < 0:
        return Coerced(None, f"negative count ({describe(x)}); missing")
    return Coerced(x if isinstance(x, int) else int(c.value))


def boolean(x: Any, *, strings: bool = False) -> Coerced[bool]:
    """``true``/``false``; with ``strings=True`` also ``"true"``/``"false"`` (any case).
    Numbers (0/1) and words like ``"yes"`` are refused."""
    if x is None or isinstance(x, bool):
        return Coerced(x)
    if strings and isinstance(x, str) and x.strip().lower() in ("true", "false"):
        return Coerced(x.strip().lower() == "true")
    raise Refused(f"{describe(x)} is not true or false")


def text(x: Any) -> Coerced[str]:
    """A string (possibly empty); any other type is refused."""
    if x is None or isinstance(x, str):
        return Coerced(x)
    raise Refused(f"{describe(x)} is not a string")


def identifier(x: Any) -> Coerced[str]:
    """An id: a non-empty string, or a whole number (written as its digits: Inspect's
    sample ids are ``int | str``). A boolean, a float, a list or an object is refused."""
    if x is None:
        return Coerced(None)
    if isinstance(x, str):
        if not x:
            raise Refused("an empty string is not an id")
        return Coerced(x)
    if isinstance(x, int) and not isinstance(x, bool):
        return Coerced(str(x))
    raise Refused(f"{describe(x)} is not an id (a string or a whole number)")


def or_none(rule: Callable[..., Coerced[T]], x: Any, **kw: Any) -> T | None:
    """``rule(x, **kw)``'s value, or None where it refuses ``x``: for a value the adapter
    only uses when it is readable (an optional tally, a metadata number it can do
    without), where there is no record to note on. Prefer :class:`Fields` where there is
    one."""
    try:
        return rule(x, **kw).value
    except Refused:
        return None


_RULES: dict[str, Callable[..., Coerced[Any]]] = {
    "number": number, "amount": amount, "count": count, "boolean": boolean, "text": text,
    "identifier": identifier}


class Fields:
    """The rule applied to the fields of one record, with its location for messages.

    ``strict`` fields raise a located :class:`~evalatlas.errors.InputError` (the record
    is quarantined, naming file, record and field); lenient ones become missing. Every
    value made missing is noted in :attr:`notes` (``{field: note}``), which the adapter
    stores in the record's ``extra[NOTES_KEY]``.
    """

    def __init__(self, file: str | Path | None, record: str | None = None, *,
                 line: int | None = None, strict: bool = True) -> None:
        self.file = None if file is None else str(file)
        self.record = record
        self.line = line
        self.strict = strict
        self.notes: dict[str, str] = {}

    def _apply(self, rule: str, x: Any, field: str, strict: bool | None,
               **kw: Any) -> Any:
        try:
            c = _RULES[rule](x, **kw)
        except Refused as exc:
            if self.strict if strict is None else strict:
                raise self.error(field, exc.reason) from None
            self.notes[field] = f"{exc.reason}; missing"
            return None
        if c.note:
            self.notes[field] = c.note
        return c.value

    # The common values (null, a finite float, a whole number within 2**53, an id
    # string) are answered
    # before the rule's dispatch: what :func:`number`, :func:`amount` and :func:`count`
    # return for them, without the Coerced tuple and the calls (10,000 SWE-bench
    # instances x 2 fields; tests/adapters/test_coerce.py checks both ways agree).

    def number(self, x: Any, field: str, *, strings: bool = False,
               strict: bool | None = None) -> float | None:
        if x is None:
            return None
        t = type(x)
        if t is float and -_FLOAT_MAX <= x <= _FLOAT_MAX:
            return x
        if t is int and -_EXACT <= x <= _EXACT:
            return float(x)
        return self._apply("number", x, field, strict, strings=strings)

    def amount(self, x: Any, field: str, *, strings: bool = False,
               strict: bool | None = None) -> float | None:
        if x is None:
            return None
        t = type(x)
        if t is float and 0.0 <= x <= _FLOAT_MAX:
            return x
        if t is int and 0 <= x <= _EXACT:
            return float(x)
        return self._apply("amount", x, field, strict, strings=strings)

    def count(self, x: Any, field: str, *, strings: bool = False,
              strict: bool | None = None) -> int | None:
        if x is None or (type(x) is int and 0 <= x <= _EXACT):
            return x
        return self._apply("count", x, field, strict, strings=strings)

    def boolean(self, x: Any, field: str, *, strings: bool = False,
                strict: bool | None = None) -> bool | None:
        return self._apply("boolean", x, field, strict, strings=strings)

    def text(self, x: Any, field: str, *, strict: bool | None = None) -> str | None:
        return self._apply("text", x, field, strict)

    def identifier(self, x: Any, field: str, *, strict: bool | None = None) -> str | None:
        if x is None or (type(x) is str and x):
            return x
        return self._apply("identifier", x, field, strict)

    def note(self, field: str, note: str) -> None:
        """Record a note the adapter decided itself (a value left out, a fallback)."""
        self.notes[field] = note

    def error(self, field: str | None, reason: str) -> InputError:
        """A located error about ``field`` of this record (to raise)."""
        return InputError.at(self.file, reason, field=field, line=self.line,
                             record=self.record)

    def required(self, value: Any, field: str, what: str = "a value") -> Any:
        """``value``, or a located error when it is missing (None)."""
        if value is None:
            raise self.error(field, f"required field is missing ({what})")
        return value

    def mapping(self, x: Any, field: str, *, strict: bool | None = None) -> dict[str, Any]:
        """An object (``{}`` when absent); any other type is refused (strict) or missing
        with a note (lenient)."""
        if x is None:
            return {}
        if isinstance(x, dict):
            return x
        reason = f"{describe(x)}, expected an object"
        if self.strict if strict is None else strict:
            raise self.error(field, reason)
        self.notes[field] = f"{reason}; missing"
        return {}

    def attach(self, extra: dict[str, Any]) -> dict[str, Any]:
        """``extra`` with the notes under ``NOTES_KEY`` (when there are any)."""
        if self.notes:
            extra[NOTES_KEY] = {**extra.get(NOTES_KEY, {}), **self.notes}
        return extra
