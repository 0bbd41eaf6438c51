"""Episode records built without pydantic's validation, for data already in strict form.

Why: validating one :class:`~evalatlas.records.models.EpisodeRecord` costs pydantic
~15-100 us (the alias and default bookkeeping, the nested usage, the safe-id check),
which was most of an adapter's read (10,000 SWE-bench instances: 0.15 s of a 0.22 s
read). Adapters build plain dicts that are nearly always in the contract's strict form
already: canonical keys, values of exactly the JSON type a field wants. For such data
:func:`strict_episode` checks each value against the field's declaration and builds the
record directly; anything else (an alias, a ``_type`` key, a string where a number goes,
a NaN, an unsafe id, a verifier or findings object...) returns None and the caller runs
pydantic's validation, which decides and names the field. So this only ever accepts more
cheaply: it never accepts what validation would reject, and the record it builds equals
the validated one, field for field and in ``model_fields_set``
(``tests/records/test_strict.py`` checks both on every fixture folder's episodes).

What each field accepts is read off the contract (:mod:`evalatlas.records.spec`: JSON
types, nullability, required keys, ``ge`` bounds, statuses) into a msgspec Struct
(:func:`_structs`), and one ``msgspec.convert`` checks every key and type in C (an
EvalLog episode's 33 keys: ~2 us, against ~13 us for the per-key Python loop this
replaced); the model's validators (the reward's number check, ``success = reward > 0``,
``outcome_source``, the safe trajectory id, the usage derivations, ``format_version``)
and what a Struct cannot say (a NaN score read as missing, the cost source's pattern as
a full match) are applied after it by calling the same rules.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Annotated, Any, Literal, Optional, TypeVar

import msgspec
from pydantic import BaseModel

from evalatlas.errors import UnsafeIdError
from evalatlas.records import spec
from evalatlas.records.ids import check_safe_id
from evalatlas.records.models import (
    _OUTCOME_SOURCE,
    FORMAT_VERSION,
    EpisodeRecord,
    UsageSummary,
)
from evalatlas.records.spec import FieldSpec, RecordSpec

M = TypeVar("M", bound=BaseModel)
_MISSING = object()
_BIG = 2**53
"""Integers given for a float field beyond this go through validation (the conversion
could round)."""
_setattr = object.__setattr__


def _kind(f: FieldSpec) -> str:
    """The kind of a field (:func:`_struct_type`): str, literal, int, float, bool, strlist
    (an array of strings), usage (the nested UsageSummary), object (a map of any
    values), scores (a map of numbers or null); "other" for what only validation builds
    (verifier, findings)."""
    if f.record is not None:
        return "usage" if f.record.model is UsageSummary else "other"
    if f.json_type == "string":
        return "literal" if f.choices is not None else "str"
    if f.json_type == "array":
        return "strlist" if f.items == "string" else "other"
    if f.json_type == "object":
        if f.items is None:
            return "object"
        return "scores" if f.items == "number" and f.items_nullable else "other"
    return {"integer": "int", "number": "float", "boolean": "bool"}.get(f.json_type or "",
                                                                       "other")


def _specs(record: RecordSpec) -> dict[str, tuple[str, bool, float | None]]:
    """Field -> (kind, nullable, inclusive lower bound), from the contract's spec."""
    return {f.name: (_kind(f), f.nullable,
                     None if f.minimum is None else float(f.minimum))
            for f in record.fields}


_EPISODE = _specs(spec.EPISODE)
_USAGE = _specs(spec.USAGE)  # the record of EpisodeRecord.usage
_REQUIRED = frozenset(spec.EPISODE.required)
_COST_SOURCE = re.compile(
    (spec.USAGE["cost_source"].pattern or "").strip("^$"))
"""The usage's cost_source pattern as a full match (Python's ``$`` would also accept a
trailing newline, which pydantic's does not)."""


def _defaults(model: type[Any]) -> dict[str, tuple[Any, Callable[[], Any] | None]]:
    return {name: (info.default, info.default_factory)
            for name, info in model.model_fields.items()}


_EPISODE_DEFAULTS = _defaults(EpisodeRecord)
_USAGE_DEFAULTS = _defaults(UsageSummary)
assert not any(factory for _, factory in _USAGE_DEFAULTS.values())


def _scores(v: dict[str, Any]) -> dict[str, float | None] | object:
    """A ``scores`` map (string keys, checked by the Struct) in the contract's strict
    form: numbers or null, NaN read as missing (the contract's reading), integers within
    2**53 as floats; _MISSING when only pydantic's validation may decide."""
    out: dict[str, float | None] = {}
    for name, s in v.items():
        ts = type(s)
        if s is None:
            out[name] = None
        elif ts is float:
            if math.isnan(s):  # the contract's reading: NaN on input is missing
                out[name] = None
            elif math.isinf(s):
                return _MISSING
            else:
                out[name] = s
        elif ts is int and -_BIG <= s <= _BIG:
            out[name] = float(s)
        else:
            return _MISSING
    return out


def _build(model: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """What pydantic's ``model_construct`` does for a complete set of validated field
    values in declaration order (without its per-field default bookkeeping)."""
    obj = object.__new__(model)
    _setattr(obj, "__dict__", values)
    _setattr(obj, "__pydantic_fields_set__", fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


_EPISODE_FRESH = tuple(name for name, (_, factory) in _EPISODE_DEFAULTS.items()
                       if factory is not None)
"""The fields whose default comes from a factory, made afresh per record."""
assert set(_EPISODE_FRESH) == {"tool_names", "usage", "scores", "extra"}


def _struct_type(kind: str, nullable: bool, ge: float | None, usage: Any = None) -> Any:
    """The msgspec type of a field of this kind (:func:`_kind`): it accepts what
    validation would accept unchanged, or less (what it refuses goes to validation);
    None ("other": verifier, findings) accepts only null."""
    t: Any
    if kind in ("str", "bool"):
        t = str if kind == "str" else bool
    elif kind == "int":
        t = int if ge is None else Annotated[int, msgspec.Meta(ge=int(ge))]
    elif kind == "float":  # finite (NaN fails both bounds), ints only within 2**53
        t = Annotated[float, msgspec.Meta(ge=-float(_BIG) if ge is None else ge,
                                          le=float(_BIG))]
    elif kind == "strlist":
        t = list[str]
    elif kind in ("object", "scores"):  # scores' values: _scores, after
        t = dict[str, Any]
    elif kind == "literal":
        t = Literal[tuple(spec.STATUSES)]
    elif kind == "usage":
        t = usage
    else:
        return None  # verifier, findings: only null here; validation builds the rest
    return Optional[t] if nullable else t  # noqa: UP045 - a msgspec type


def _structs() -> tuple[Any, Any]:
    """(the episode's msgspec Struct, the usage's), generated from the contract's specs
    (:data:`_EPISODE`, :data:`_USAGE`): keyword-only, unknown keys refused (an alias
    or a ``_type`` key then goes to validation), defaults the models' (a container's
    made afresh per record)."""
    usage = msgspec.defstruct(
        "StrictUsage", [(k, _struct_type(*v), _USAGE_DEFAULTS[k][0]) for k, v in _USAGE.items()],
        kw_only=True, forbid_unknown_fields=True, gc=False)
    fields: list[tuple[Any, ...]] = []
    for name, kind_spec in _EPISODE.items():
        t = _struct_type(*kind_spec, usage=usage)
        default, _factory = _EPISODE_DEFAULTS[name]
        if name in _REQUIRED:
            fields.append((name, t))
        elif name in _EPISODE_FRESH:
            factory = usage if name == "usage" else (list if kind_spec[0] == "strlist"
                                                     else dict)
            fields.append((name, t, msgspec.field(default_factory=factory)))
        else:
            fields.append((name, t, default))
    episode = msgspec.defstruct("StrictEpisode", fields, kw_only=True,
                                forbid_unknown_fields=True, gc=False)
    return episode, usage


_EPISODE_STRUCT, _USAGE_STRUCT = _structs()


_CONVERT_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, TypeError, ValueError,
                   OverflowError, RecursionError)
_convert = msgspec.convert
_decode_episode = msgspec.json.Decoder(_EPISODE_STRUCT).decode
_asdict = msgspec.structs.asdict


CheckedEpisode: Any = _EPISODE_STRUCT
"""The msgspec Struct an episode's data is checked into (:func:`checked_episode`): the
contract's fields as attributes, with EpisodeRecord's names and, once checked, its
values. What an adapter hands the store when the ingest asks for rows
(:func:`handing_over_rows`)."""

CheckedUsage: Any = _USAGE_STRUCT
"""The Struct of a :data:`CheckedEpisode`'s ``usage`` and ``judge_usage``
(UsageSummary's fields, in its order)."""

_ROWS: ContextVar[bool] = ContextVar("evalatlas_rows", default=False)


@contextlib.contextmanager
def handing_over_rows() -> Iterator[None]:
    """While active, :func:`~evalatlas.records.validate.parse_record` of an episode in
    strict form returns its :data:`CheckedEpisode` instead of building an EpisodeRecord
    from it (anything else is still validated and raises as before).

    Why: the store flattens an episode into a row of its columns; building the record
    (its two dicts, the nested usage object, the fields set) only to read it back cost
    more than the check itself (~4 us of ~7 for a SWE-bench instance). The ingest sets
    this around the adapters that hand over whatever ``parse_record`` returns
    (:attr:`evalatlas.adapters.base.Adapter.rows`)."""
    token = _ROWS.set(True)
    try:
        yield
    finally:
        _ROWS.reset(token)


def rows_wanted() -> bool:
    """True inside :func:`handing_over_rows`."""
    return _ROWS.get()


def _derive_usage(u: Any) -> bool:
    """UsageSummary's ``_derive`` on a checked usage struct, in place (the total when
    absent, a reported cost's source); False when the cost source breaks its pattern
    (a full match: Python's ``$`` would also accept a trailing newline)."""
    source = u.cost_source
    if source is not None and _COST_SOURCE.fullmatch(source) is None:
        return False
    if u.total_tokens is None and u.prompt_tokens is not None \
            and u.completion_tokens is not None:
        u.total_tokens = u.prompt_tokens + u.completion_tokens
    if u.total_cost_usd is not None and source is None:
        u.cost_source = "reported"
    return True


def checked_episode(data: dict[str, Any]) -> Any:
    """``data`` checked against the contract into a :data:`CheckedEpisode` holding the
    values ``EpisodeRecord.model_validate(data)`` would hold (derivations included),
    when every key is a contract field and every value already of its field's type (see
    the module docstring); else None (validate it).

    The keys and types are checked by one ``msgspec.convert`` into the Struct generated
    from the contract (:func:`_structs`: in C, ~2 us for an EvalLog episode's 33 keys
    against ~13 us for the per-key Python loop it replaced); what the Struct cannot say
    (a score's NaN read as missing, the usage's cost-source pattern as a full match,
    the model's validators) is checked here after it."""
    try:
        ep = _convert(data, _EPISODE_STRUCT, strict=True)
    except _CONVERT_ERRORS:
        return None
    return _checked(ep)


def checked_episode_json(raw: bytes) -> Any:
    """:func:`checked_episode` of the JSON document ``raw`` (an EvalLog folder's
    ``episode_record.json``), decoded straight into the Struct: no dict of the record
    is built on the way (an EvalLog episode: ~6 us of ~15 for decoding it, then
    converting). None when msgspec refuses the text (a NaN or ``1e999``, a lone
    surrogate escape, a duplicate key, too deep a nesting, broken syntax) or the
    checks leave it to validation: the caller then reads it the exact way
    (:func:`~evalatlas.records.jsonio.decode_document`, ``parse_record``), which decides
    and words the error. So this only ever accepts more cheaply."""
    try:
        ep = _decode_episode(raw)
    except _CONVERT_ERRORS:
        return None
    return _checked(ep)


def _checked(ep: Any) -> Any:
    """A converted episode Struct with what the Struct cannot say checked and the
    model's derivations applied (see :func:`checked_episode`), or None."""
    if ep.scores:
        scores = _scores(ep.scores)
        if scores is _MISSING:
            return None
        ep.scores = scores
    if not _derive_usage(ep.usage):
        return None
    if ep.judge_usage is not None and not _derive_usage(ep.judge_usage):
        return None
    # EpisodeRecord's validators, in their order: the outcome's source and success
    # (before), the safe id, outcome_source's form, format_version, the invariant
    reward = ep.reward
    if reward is None:
        ep.outcome_source = None  # an unknown outcome has no source
    elif ep.outcome_source is None:
        ep.outcome_source = "harness"
    elif _OUTCOME_SOURCE.match(ep.outcome_source) is None:
        return None
    if ep.success is None:
        if reward is not None:
            ep.success = reward > 0
    elif reward is None or ep.success != (reward > 0):
        return None
    try:
        check_safe_id(ep.trajectory_id, "trajectory_id")
    except UnsafeIdError:
        return None
    if ep.format_version > FORMAT_VERSION:
        return None
    return ep


def _usage_record(u: Any, given: Any) -> UsageSummary:
    """The UsageSummary of a checked usage struct; its fields set: the keys given, and
    the derived total and cost source."""
    fields_set = set(given) if given else set()
    if u.total_tokens is not None:
        fields_set.add("total_tokens")
    if u.cost_source is not None:
        fields_set.add("cost_source")
    return _build(UsageSummary, _asdict(u), fields_set)


def strict_episode(data: dict[str, Any]) -> EpisodeRecord | None:
    """The EpisodeRecord ``EpisodeRecord.model_validate(data)`` returns, built without
    validation, from :func:`checked_episode`; None when that leaves ``data`` to
    validation. Equal to the validated record field for field, and in the fields set
    (the keys given, plus the derived ones)."""
    ep = checked_episode(data)
    if ep is None:
        return None
    values = _asdict(ep)
    values["usage"] = _usage_record(ep.usage, data.get("usage"))
    if ep.judge_usage is not None:
        values["judge_usage"] = _usage_record(ep.judge_usage, data["judge_usage"])
    fields_set = set(data)
    fields_set.add("outcome_source")
    if ep.success is not None:
        fields_set.add("success")
    return _build(EpisodeRecord, values, fields_set)
