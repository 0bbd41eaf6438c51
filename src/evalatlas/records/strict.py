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
types, nullability, required keys, ``ge`` bounds, statuses); the model's validators (the reward's
number check, ``success = reward > 0``, ``outcome_source``, the safe trajectory id, the
usage derivations, ``format_version``) are applied by calling the same rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

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
    """What :func:`_value` checks for a field: str, literal, int, float, bool, strlist
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
_STATUSES = frozenset(spec.STATUSES)
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


def _value(kind: str, nullable: bool, ge: float | None, v: Any) -> Any:
    """The validated value of ``v`` for a field of this kind, or _MISSING when only
    pydantic's validation may decide."""
    if v is None:
        return None if nullable else _MISSING
    t = type(v)
    if kind == "str":
        return v if t is str else _MISSING
    if kind == "int":
        if t is not int or (ge is not None and v < ge):
            return _MISSING
        return v
    if kind == "float":
        if t is int:
            if not -_BIG <= v <= _BIG:
                return _MISSING
            v = float(v)
        elif t is not float or not math.isfinite(v):
            return _MISSING
        return _MISSING if ge is not None and v < ge else v
    if kind == "bool":
        return v if t is bool else _MISSING
    if kind == "strlist":
        if t is not list or not all(type(x) is str for x in v):
            return _MISSING
        return list(v)
    if kind == "object":
        if t is not dict or not all(type(k) is str for k in v):
            return _MISSING
        return dict(v)
    if kind == "scores":
        if t is not dict:
            return _MISSING
        out: dict[str, float | None] = {}
        for name, s in v.items():
            if type(name) is not str:
                return _MISSING
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
    if kind == "literal":
        return v if t is str and v in _STATUSES else _MISSING
    if kind == "usage":
        return _usage(v) if t is dict else _MISSING
    return _MISSING


def _build(model: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """What pydantic's ``model_construct`` does for a complete set of validated field
    values in declaration order (without its per-field default bookkeeping)."""
    obj = object.__new__(model)
    _setattr(obj, "__dict__", values)
    _setattr(obj, "__pydantic_fields_set__", fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


def _templates(model: type[Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(every field with its immutable default, in declaration order; the fields whose
    default comes from a factory, made afresh per record)."""
    values: dict[str, Any] = {}
    fresh = []
    for name, (default, factory) in _defaults(model).items():
        values[name] = None if factory is not None else default
        if factory is not None:
            fresh.append(name)
    return values, tuple(fresh)


_USAGE_TEMPLATE, _USAGE_FRESH = _templates(UsageSummary)
_EPISODE_TEMPLATE, _EPISODE_FRESH = _templates(EpisodeRecord)
assert not _USAGE_FRESH and set(_EPISODE_FRESH) == {"tool_names", "usage", "scores", "extra"}


def _fields(data: dict[str, Any], specs: dict[str, tuple[str, bool, float | None]],
            values: dict[str, Any]) -> bool:
    """Put the validated value of each key of ``data`` into ``values``; False when a key
    is not a field or a value is not in strict form."""
    for key, v in data.items():
        spec = specs.get(key)
        if spec is None:  # an alias, a _type key or an unknown field: validation decides
            return False
        kind, nullable, ge = spec
        if v is None:
            if not nullable:
                return False
            values[key] = None
        elif kind == "str":  # the common cases inline
            if type(v) is not str:
                return False
            values[key] = v
        elif kind == "int":
            if type(v) is not int or (ge is not None and v < ge):
                return False
            values[key] = v
        else:
            got = _value(kind, nullable, ge, v)
            if got is _MISSING:
                return False
            values[key] = got
    return True


def _usage(data: dict[str, Any]) -> UsageSummary | object:
    """A UsageSummary from strict data (its ``_derive``: the total when absent, a reported
    cost's source), or _MISSING."""
    values = _USAGE_TEMPLATE.copy()
    if data and not _fields(data, _USAGE, values):
        return _MISSING
    source = values["cost_source"]
    if source is not None and _COST_SOURCE.fullmatch(source) is None:
        return _MISSING
    fields_set = set(data)
    if values["total_tokens"] is None and values["prompt_tokens"] is not None \
            and values["completion_tokens"] is not None:
        values["total_tokens"] = values["prompt_tokens"] + values["completion_tokens"]
        fields_set.add("total_tokens")
    if values["total_cost_usd"] is not None and source is None:
        values["cost_source"] = "reported"
        fields_set.add("cost_source")
    return _build(UsageSummary, values, fields_set)


def strict_episode(data: dict[str, Any]) -> EpisodeRecord | None:
    """The EpisodeRecord ``EpisodeRecord.model_validate(data)`` returns, built without
    validation, when every key of ``data`` is a contract field and every value is
    already of the field's type (see the module docstring); else None (validate it)."""
    if not _REQUIRED.issubset(data):
        return None
    values = _EPISODE_TEMPLATE.copy()
    values["tool_names"] = []
    values["scores"] = {}
    values["extra"] = {}
    if not _fields(data, _EPISODE, values):
        return None
    if "usage" not in data:  # UsageSummary() without validating it
        values["usage"] = _usage({})
    fields_set = set(data)
    # EpisodeRecord's validators, in their order: the outcome's source and success
    # (before), the safe id, outcome_source's form, format_version, the invariant
    reward = values["reward"]
    if reward is None:
        values["outcome_source"] = None  # an unknown outcome has no source
    elif values["outcome_source"] is None:
        values["outcome_source"] = "harness"
    elif _OUTCOME_SOURCE.match(values["outcome_source"]) is None:
        return None
    fields_set.add("outcome_source")
    if values["success"] is None and reward is not None:
        values["success"] = reward > 0
        fields_set.add("success")
    elif reward is None:
        if values["success"] is not None:
            return None
    elif values["success"] != (reward > 0):
        return None
    try:
        check_safe_id(values["trajectory_id"], "trajectory_id")
    except UnsafeIdError:
        return None
    if values["format_version"] > FORMAT_VERSION:
        return None
    return _build(EpisodeRecord, values, fields_set)
