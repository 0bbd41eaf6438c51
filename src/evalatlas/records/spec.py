"""The record contract as data: each record model's fields, JSON types, required keys,
bounds and allowed values, read off :mod:`evalatlas.records.models`.

Why: the models are the one declaration of the contract, but the store's DDL, the row
builders, the fast JSONL path's type checks and its msgspec decoder each need the same
facts in a form they can generate code or SQL from. Reading them off the pydantic models
(rather than writing them down a second time) means a field added to a model appears
here at once; ``tests/records/test_spec.py`` and ``tests/store/test_contract.py`` then
fail until every consumer handles it.

What it holds, per record (:class:`RecordSpec`): its fields in declaration order
(:class:`FieldSpec`: the JSON type of a present value, whether ``null`` is accepted,
whether the key is required, an array's item type or a map's value type, a lower or
upper bound, the allowed strings of a ``Literal``, a regex pattern, and the nested
record's spec for a field that holds one), and whether unknown keys are refused
(``closed``). What it does not hold: the model validators' derivations and
cross-field rules (``success = reward > 0``, ``total_tokens = prompt + completion``,
safe ids, aliases), which consumers must mirror or leave to the exact path; the
docstring of each consumer says which.

Use::

    from evalatlas.records.spec import EPISODE, STATUSES
    EPISODE.required               # ('experiment_id', 'task_id', 'reward', 'trajectory_id')
    EPISODE["usage"].record["prompt_tokens"].minimum   # 0
    [f.name for f in EPISODE.fields if f.json_type == "number"]

JSON types are JSON Schema's names: ``string``, ``integer``, ``number``, ``boolean``,
``array``, ``object``; ``None`` means any JSON value (``dict[str, Any]`` values).
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
from pydantic import BaseModel

from evalatlas.records import models

JsonType = Literal["string", "integer", "number", "boolean", "array", "object"]

_SCALAR_TYPES: dict[Any, JsonType] = {
    str: "string", int: "integer", float: "number", bool: "boolean",
}


@dataclass(frozen=True)
class FieldSpec:
    """One field of a record, as the JSON it accepts (before aliases and derivations)."""

    name: str
    json_type: JsonType | None
    """The JSON type of a present, non-null value (None: any JSON value)."""
    nullable: bool
    """``null`` is accepted (a missing value)."""
    required: bool
    """The key must be present (it may still be ``null`` when :attr:`nullable`)."""
    items: JsonType | None = None
    """Arrays: the items' JSON type; objects that are maps: the values' (None: any)."""
    items_nullable: bool = False
    """Map values (``scores``) may be ``null``."""
    record: RecordSpec | None = None
    """The nested record's spec when the field holds one (``usage``, ``verifier``...) or
    an array of them (``published_metrics``)."""
    minimum: float | None = None
    """Inclusive lower bound (pydantic ``ge``)."""
    exclusive_minimum: float | None = None
    """Exclusive lower bound (pydantic ``gt``)."""
    exclusive_maximum: float | None = None
    """Exclusive upper bound (pydantic ``lt``)."""
    choices: tuple[str, ...] | None = None
    """The allowed strings of a ``Literal`` field (``status``)."""
    pattern: str | None = None
    """A regex the string must match (pydantic ``pattern``, anchored as written)."""
    default: Any = None
    """The value an absent key takes (JSON; ``[]``/``{}`` for list and map fields, a
    nested record's defaults as an object); None for a required key."""

    @property
    def is_scalar(self) -> bool:
        """A string, number or boolean (not an array, object or nested record)."""
        return self.json_type in ("string", "integer", "number", "boolean")


@dataclass(frozen=True)
class RecordSpec:
    """One record model: its fields in declaration order and whether it is closed."""

    name: str
    model: type[BaseModel]
    fields: tuple[FieldSpec, ...]
    closed: bool
    """Unknown keys are refused (``extra='forbid'``); ``Findings`` is open."""

    def __getitem__(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    @property
    def names(self) -> tuple[str, ...]:
        """Field names in declaration order."""
        return tuple(f.name for f in self.fields)

    @property
    def required(self) -> tuple[str, ...]:
        """The keys a record must have."""
        return tuple(f.name for f in self.fields if f.required)

    @property
    def nested(self) -> dict[str, RecordSpec]:
        """Fields that hold a nested record, with its spec."""
        return {f.name: f.record for f in self.fields if f.record is not None}


def _plain(annotation: Any) -> Any:
    """``annotation`` without the JSON-number check (:data:`models.NUMBER_CHECKS`, part of
    what the JSON type says); any other ``Annotated`` metadata is not described here."""
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        if not all(m in models.NUMBER_CHECKS for m in meta):
            raise TypeError(f"no JSON type for {annotation!r}")
        return base
    return annotation


def _strip_none(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without ``None``, whether ``None`` was part of it)."""
    annotation = _plain(annotation)
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(get_args(annotation))
        if len(args) != 1:
            raise TypeError(f"no JSON type for the union {annotation!r}")
        return _plain(args[0]), nullable
    return annotation, False


def _json_type(annotation: Any) -> JsonType | None:
    annotation = _plain(annotation)
    if annotation is Any:
        return None
    if annotation in _SCALAR_TYPES:
        return _SCALAR_TYPES[annotation]
    origin = get_origin(annotation)
    if origin is Literal:
        return "string"
    if origin is list:
        return "array"
    if origin is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return "object"
    raise TypeError(f"no JSON type for {annotation!r}")


def _field(name: str, info: Any) -> FieldSpec:
    annotation, nullable = _strip_none(info.annotation)
    kw: dict[str, Any] = {}
    origin = get_origin(annotation)
    if origin is list:
        item = get_args(annotation)[0]
        kw["items"] = _json_type(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            kw["record"] = spec_of(item)
    elif origin is dict:
        value, kw["items_nullable"] = _strip_none(get_args(annotation)[1])
        kw["items"] = _json_type(value)
    elif origin is Literal:
        kw["choices"] = tuple(str(a) for a in get_args(annotation))
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        kw["record"] = spec_of(annotation)
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            kw["minimum"] = meta.ge
        elif isinstance(meta, annotated_types.Gt):
            kw["exclusive_minimum"] = meta.gt
        elif isinstance(meta, annotated_types.Lt):
            kw["exclusive_maximum"] = meta.lt
        elif getattr(meta, "pattern", None) is not None:
            kw["pattern"] = meta.pattern
        elif meta in models.NUMBER_CHECKS:
            continue  # the JSON number type itself (no boolean, no string)
        else:
            raise TypeError(f"{name}: constraint {meta!r} is not described by the spec")
    if not info.is_required():
        default = info.get_default(call_default_factory=True)
        kw["default"] = (default.model_dump(mode="json") if isinstance(default, BaseModel)
                         else default)
    return FieldSpec(name=name, json_type=_json_type(annotation), nullable=nullable,
                     required=info.is_required(), **kw)


_SPECS: dict[type[BaseModel], RecordSpec] = {}


def spec_of(model: type[BaseModel]) -> RecordSpec:
    """The :class:`RecordSpec` of a record model (built once per model)."""
    if model not in _SPECS:
        fields = tuple(_field(name, info) for name, info in model.model_fields.items())
        _SPECS[model] = RecordSpec(name=model.__name__, model=model, fields=fields,
                                   closed=model.model_config.get("extra") == "forbid")
    return _SPECS[model]


EPISODE = spec_of(models.EpisodeRecord)
"""The episode record (seed 002 plus extensions)."""
EXPERIMENT = spec_of(models.ExperimentRecord)
"""The experiment record."""
MEASUREMENT = spec_of(models.Measurement)
"""One performance benchmark of an episode."""
USAGE = spec_of(models.UsageSummary)
"""Token usage and cost (``EpisodeRecord.usage`` and ``judge_usage``)."""
STATUSES: tuple[str, ...] = EPISODE["status"].choices or ()
"""Every episode status, in the order the contract lists them."""
FORMAT_VERSION = models.FORMAT_VERSION
"""The newest record contract version this evalatlas reads (and writes)."""

__all__ = ["EPISODE", "EXPERIMENT", "FORMAT_VERSION", "MEASUREMENT", "STATUSES", "USAGE",
           "FieldSpec", "JsonType", "RecordSpec", "spec_of"]
