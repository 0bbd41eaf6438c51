"""Step 1 of the fast path: keys and JSON types of a chunk, by msgspec's strict decoder.

Why: DuckDB's typed ``read_json`` coerces (``2.5`` or ``true`` into a BIGINT, ``"0.5"``
into a DOUBLE, ``12`` into a VARCHAR) and ignores unknown keys, so before its values can
be trusted, every line's keys and JSON types must be checked against the contract.
Done in DuckDB (``json_keys`` and ``json_type`` per path) this cost more than the typed
read itself; msgspec's strict decoder (no coercion: an integer field takes no float or
bool, a string field no number; unknown keys are errors) checks a 32 MB chunk in about
a third of the time, and in C, so a whole chunk is one call.

The decoder is generated from :data:`~evalatlas.store.fast_jsonl.contract.EPISODE_SPEC`
and its nested specs (the record contract as the fast path accepts it), plus what those specs
leave to SQL flags there: list items are strings, score values numbers or null, the
free-form objects (``extra``, ``investigation_metadata``) are objects of anything, decoded
so that a number no double can hold (``1e999``) is an error here rather than a regex
over their text there (``findings``' open keys are skipped by msgspec, so the SQL flag
still covers them).

A chunk that fails here is not rejected: it goes to the DuckDB shape pass, which picks
out experiment records (so mixed files keep the fast path) and names the first
offending field, and then, if need be, to the exact path. So msgspec only ever
*accepts* more cheaply; it never decides what is stored. msgspec is optional: without
it, every chunk takes the shape pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Optional, get_origin

import evalatlas.store.fast_jsonl.contract as c
from evalatlas import collector
from evalatlas.records import spec


def _build() -> Callable[[bytes, int, int], list[int] | None] | None:
    try:
        import msgspec
    except ImportError:  # optional: the DuckDB shape pass does the same, slower
        return None
    raw_absent = msgspec.Raw(b"")
    scalar: dict[frozenset[str], Any] = {
        c.STR: str, c.STR | c.NULL: Optional[str],  # noqa: UP045 - msgspec types
        c.INT: int, c.INT | c.NULL: Optional[int],  # noqa: UP045
        c.NUM: float, c.NUM | c.NULL: Optional[float],  # noqa: UP045
        c.BOOL: bool, c.BOOL | c.NULL: Optional[bool],  # noqa: UP045
    }

    def struct(name: str, types: dict[str, frozenset[str]], closed: bool = True,
               required: tuple[str, ...] = ()) -> Any:
        fields: list[tuple[Any, ...]] = []
        for key, want in types.items():
            typ = scalar[want]
            if key in required:
                fields.append((key, typ))
            else:
                fields.append((key, typ, None))
        if not closed:  # ``findings``: other keys are allowed, but not ``_type``
            fields.append(("type_", msgspec.Raw, msgspec.field(default=raw_absent,
                                                               name="_type")))
        return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=closed,
                                 gc=False)

    records = {name: struct(name.title(), c.NESTED_SPEC[name], closed=name not in c.OPEN)
               for name in c.NESTED_SPEC if name not in c.STRUCTS[1:]}
    for name in c.STRUCTS[1:]:  # one struct for usage and judge_usage
        records[name] = records[c.STRUCTS[0]]

    def container(f: spec.FieldSpec) -> tuple[Any, Any]:
        """(msgspec type, default) of a container field, from the contract."""
        if f.record is not None:
            typ = records[f.name]
        elif f.json_type == "array" and f.items == "string":
            typ = list[str]
        elif f.json_type == "object" and f.items == "number":
            typ = (dict[str, Optional[float]] if f.items_nullable  # noqa: UP045
                   else dict[str, float])
        elif f.json_type == "object" and f.items is None:
            typ = dict[str, Any]  # decoded: msgspec rejects numbers no double can hold
        else:
            raise TypeError(f"{f.name}: no msgspec type for {f.json_type} of {f.items}")
        if f.nullable:
            return Optional[typ], None  # noqa: UP045
        return typ, msgspec.field(default_factory=get_origin(typ) or typ)

    containers = {key: container(spec.EPISODE[key]) for key, want in c.EPISODE_SPEC.items()
                  if c.kind(want) is None}
    fields: list[tuple[Any, ...]] = []
    for key, want in c.EPISODE_SPEC.items():
        if key in containers:
            fields.append((key, *containers[key]))
        elif key in c.REQUIRED:
            fields.append((key, scalar[want]))
        else:
            fields.append((key, scalar[want], None))
    # In the contract's order (keyword-only, so required fields need not come first):
    # records written from the models have their keys in this order, and msgspec finds
    # each next key at once when the orders agree.
    episode = msgspec.defstruct("Episode", fields, kw_only=True, forbid_unknown_fields=True,
                                gc=False)
    decoder = msgspec.json.Decoder(episode)
    errors = (msgspec.DecodeError, RecursionError, ValueError)
    at_line = re.compile(r"- at `\$\[(\d+)\]")

    def other(line: memoryview) -> bool:
        """The line is an experiment record or a measurement (the exact path's)."""
        try:
            value = msgspec.json.decode(line)
        except errors:
            return False
        return isinstance(value, dict) and c.is_other_record(value)

    def vouch(data: bytes, n_lines: int, size: int) -> list[int] | None:
        """The lines (1-based) of ``data[:size]`` that are experiment records or
        measurements when each other of its ``n_lines`` lines is an episode whose keys and
        JSON types the fast path accepts; else None (let the shape pass look; a blank
        line, which msgspec skips, is one reason).

        Decoded in slices of about :data:`SLICE_BYTES` of whole lines: msgspec holds the
        GIL for a whole call, and a 32 MB call (~0.2 s) stalled the thread committing
        the previous chunk between its DuckDB calls (measured: commits took 2.5x their
        CPU time in wall time). A line msgspec refuses is looked at alone: an experiment
        record or measurement (a mixed file) is noted and decoding goes on after it, so
        such a chunk keeps the fast path for its episodes."""
        view = memoryview(data)
        n = 0
        start = 0
        others: list[int] = []
        # The decoded records are dropped at once and hold no cycles, but their dicts
        # and lists trigger the cyclic collector over and over (measured: 22% of the
        # decoding time); it is paused (kept so if the caller had paused it, as an
        # ingest does: collector.paused).
        try:
            with collector.paused():
                while start < size:
                    end = data.find(b"\n", min(size, start + SLICE_BYTES) - 1)
                    end = size if end < 0 else end + 1
                    try:
                        records = decoder.decode_lines(view[start:end])
                    except msgspec.ValidationError as exc:
                        found = at_line.search(str(exc))
                        if found is None:
                            return None
                        line = start  # the refused line: after the k lines decoded before it
                        for _ in range(int(found.group(1))):
                            line = data.index(b"\n", line) + 1
                        line_end = data.find(b"\n", line, size)
                        line_end = size if line_end < 0 else line_end + 1
                        if not other(view[line:line_end]):
                            return None
                        records = decoder.decode_lines(view[start:line])
                        others.append(n + len(records) + 1)
                        n += 1
                        end = line_end
                    n += len(records)
                    if any(r.findings is not None and r.findings.type_  # type: ignore[attr-defined]  # a struct made by defstruct
                           for r in records):
                        return None
                    start = end
        except errors:
            return None
        return others if n == n_lines else None

    return vouch


SLICE_BYTES = 1 << 20
"""How much msgspec decodes per call (see ``clean``)."""

_checker: list[Callable[[bytes, int, int], list[int] | None]] = []


def _never(data: bytes, n_lines: int, size: int) -> list[int] | None:
    return None


def vouch() -> Callable[[bytes, int, int], list[int] | None]:
    """The chunk checker (built on first use; without msgspec it vouches for nothing):
    ``vouch()(data, n_lines, size)`` is None, or the lines (1-based) that are experiment
    records or measurements, every other line being an episode it vouches for."""
    if not _checker:
        _checker.append(_build() or _never)
    return _checker[0]


def checker() -> Callable[[bytes, int, int], bool]:
    """True for a chunk of episodes only, each of which msgspec vouches for."""
    check = vouch()
    return lambda data, n_lines, size: check(data, n_lines, size) == []
