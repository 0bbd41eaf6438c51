"""The fast path's check of JSON types and keys, by msgspec, built from the fast path's spec.

Why: DuckDB's typed ``read_json`` coerces (``2.5`` or ``true`` into a BIGINT, ``"0.5"``
into a DOUBLE, ``12`` into a VARCHAR) and ignores unknown keys, so before its values can
be trusted, every line's keys and JSON types must be checked against the contract.
Done in DuckDB (``json_keys`` and ``json_type`` per path) this cost more than the typed
read itself; msgspec's strict decoder (no coercion: an integer field takes no float or
bool, a string field no number; unknown keys are errors) checks a 32 MB chunk in about
a third of the time, and in C, so a whole chunk is one call.

The decoder is generated from :data:`evalatlas.store.fast_jsonl._EPISODE_SPEC` and its
nested specs (one definition of what the fast path accepts), plus what those specs
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

import gc
from collections.abc import Callable
from typing import Any, Optional


def _build() -> Callable[[bytes, int, int], bool] | None:
    try:
        import msgspec
    except ImportError:  # optional: the DuckDB shape pass does the same, slower
        return None
    from evalatlas.store import fast_jsonl as fj

    raw_absent = msgspec.Raw(b"")
    scalar: dict[frozenset[str], Any] = {
        fj._STR: str, fj._STR | fj._NULL: Optional[str],  # noqa: UP045 - msgspec types
        fj._INT | fj._NULL: Optional[int],  # noqa: UP045
        fj._NUM: float, fj._NUM | fj._NULL: Optional[float],  # noqa: UP045
        fj._BOOL | fj._NULL: Optional[bool],  # noqa: UP045
    }

    def struct(name: str, spec: dict[str, frozenset[str]], closed: bool = True,
               required: tuple[str, ...] = ()) -> Any:
        fields: list[tuple[Any, ...]] = []
        for key, want in spec.items():
            typ = scalar[want]
            if key in required:
                fields.append((key, typ))
            else:
                fields.append((key, typ, None))
        if not closed:  # ``findings``: other keys are allowed, but not ``_type``
            fields.append(("type_", msgspec.Raw, msgspec.field(default=raw_absent,
                                                               name="_type")))
        return msgspec.defstruct(name, fields, forbid_unknown_fields=closed, gc=False)

    usage = struct("Usage", fj._USAGE_SPEC)
    verifier = struct("Verifier", fj._NESTED_SPEC["verifier"])
    findings = struct("Findings", fj._NESTED_SPEC["findings"], closed=False)
    free = dict[str, Any]  # decoded: msgspec rejects numbers no double can hold
    strings = list[str]
    containers: dict[str, tuple[Any, Any]] = {
        "tool_names": (strings, msgspec.field(default_factory=list)),
        "retrieved_sources": (Optional[strings], None),  # noqa: UP045
        "expected_sources": (Optional[strings], None),  # noqa: UP045
        "usage": (usage, msgspec.field(default_factory=usage)),
        "judge_usage": (Optional[usage], None),  # noqa: UP045
        "verifier": (Optional[verifier], None),  # noqa: UP045
        "findings": (Optional[findings], None),  # noqa: UP045
        "scores": (dict[str, Optional[float]],  # noqa: UP045
                   msgspec.field(default_factory=dict)),
        "extra": (free, msgspec.field(default_factory=dict)),
        "investigation_metadata": (Optional[free], None),  # noqa: UP045
    }
    fields: list[tuple[Any, ...]] = []
    for key, want in fj._EPISODE_SPEC.items():
        if key in containers:
            fields.append((key, *containers[key]))
        elif key in fj._REQUIRED:
            fields.append((key, scalar[want]))
        else:
            fields.append((key, scalar[want], None))
    fields.sort(key=len)  # msgspec wants required fields first
    episode = msgspec.defstruct("Episode", fields, forbid_unknown_fields=True, gc=False)
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(episode)  # of defstruct's class
    errors = (msgspec.DecodeError, RecursionError, ValueError)

    def clean(data: bytes, n_lines: int, size: int) -> bool:
        """True when each of the ``n_lines`` lines of ``data[:size]`` is an episode whose keys
        and JSON types the fast path accepts (False: let the shape pass look; a blank
        line, which msgspec skips, is one reason).

        Decoded in slices of about :data:`SLICE_BYTES` of whole lines: msgspec holds the
        GIL for a whole call, and a 32 MB call (~0.2 s) stalled the thread committing
        the previous chunk between its DuckDB calls (measured: commits took 2.5x their
        CPU time in wall time)."""
        view = memoryview(data)
        n = 0
        start = 0
        # The decoded records are dropped at once and hold no cycles, but their dicts
        # and lists trigger the cyclic collector over and over (measured: 22% of the
        # decoding time); it is paused, and resumed unless the caller had paused it.
        collecting = gc.isenabled()
        gc.disable()
        try:
            while start < size:
                end = data.find(b"\n", min(size, start + SLICE_BYTES) - 1)
                end = size if end < 0 else end + 1
                records = decoder.decode_lines(view[start:end])
                n += len(records)
                if any(r.findings is not None and r.findings.type_ for r in records):
                    return False
                start = end
        except errors:
            return False
        finally:
            if collecting:
                gc.enable()
        return n == n_lines

    return clean


SLICE_BYTES = 1 << 20
"""How much msgspec decodes per call (see ``clean``)."""

_checker: list[Callable[[bytes, int, int], bool]] = []


def _never(data: bytes, n_lines: int, size: int) -> bool:
    return False


def checker() -> Callable[[bytes, int, int], bool]:
    """The chunk checker (built on first use; without msgspec it vouches for nothing)."""
    if not _checker:
        _checker.append(_build() or _never)
    return _checker[0]
