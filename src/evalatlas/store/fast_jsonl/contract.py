"""What the fast path accepts, generated from the record contract
(:mod:`evalatlas.records.spec`): per field the JSON types DuckDB's ``json_type`` may
report, the types its typed read uses, the required keys, statuses, bounds and the
``cost_source`` pattern.

Why generated: the fast path must accept exactly what the exact path (the pydantic
models) accepts, or less; a second hand-written list of fields drifted from the models
(it took a ``null`` ``format_version`` and negative ``judge_usage`` counts that the
models refuse). A field added to a model is accepted here at once, and
``tests/store/fast_jsonl/test_contract.py`` stores a record with every field through
both paths and compares the rows, so the SQL that builds rows (:mod:`.sql`) must handle it.

Where the fast path is narrower than the contract, on purpose (such records take the
exact path, which decides): :data:`EXCLUDED` fields and :data:`NARROWED` nullability.
Not expressed here (see :mod:`.sql`): the models' derivations and cross-field rules
(``success = reward > 0``, usage totals, a reported cost's source, safe trajectory ids).
"""

from __future__ import annotations

from evalatlas.adapters.jsonl import record_kind
from evalatlas.records import spec
from evalatlas.records.models import EpisodeRecord

STR = frozenset({"VARCHAR"})
INT = frozenset({"UBIGINT", "BIGINT"})
NUM = INT | {"DOUBLE"}
NULL = frozenset({"NULL"})
BOOL = frozenset({"BOOLEAN"})
ARR = frozenset({"ARRAY"})
OBJ = frozenset({"OBJECT"})
_JSON_TYPES = {"string": STR, "integer": INT, "number": NUM, "boolean": BOOL,
               "array": ARR, "object": OBJ}
"""JSON Schema's type names -> DuckDB ``json_type`` names of a value of that type."""

EXCLUDED: dict[str, str] = {
    "outcome_source": "set by the fast path to 'harness' for every known reward; a "
                      "record that names its own source takes the exact path",
}
"""Contract fields the fast path does not accept (a line with one takes the exact path)."""

NARROWED: dict[str, str] = {
    "reward": "a null reward (an unknown outcome) takes the exact path",
}
"""Nullable contract fields the fast path accepts only with a value."""


def json_types(f: spec.FieldSpec, narrowed: bool = False) -> frozenset[str]:
    """The DuckDB ``json_type`` names field ``f`` accepts."""
    if f.json_type is None:
        raise TypeError(f"{f.name}: a field of any JSON type has no fast-path check")
    out = _JSON_TYPES[f.json_type]
    return out | NULL if f.nullable and not narrowed else out


def _spec(rspec: spec.RecordSpec, top: bool = False) -> dict[str, frozenset[str]]:
    return {f.name: json_types(f, top and f.name in NARROWED)
            for f in rspec.fields if not (top and f.name in EXCLUDED)}


EPISODE_SPEC = _spec(spec.EPISODE, top=True)
"""Top-level key -> the JSON types the fast path accepts."""
NESTED_SPEC: dict[str, dict[str, frozenset[str]]] = {
    name: _spec(record) for name, record in spec.EPISODE.nested.items()}
"""Nested record (``usage``, ``judge_usage``, ``verifier``, ``findings``) -> key -> types."""
USAGE_SPEC = _spec(spec.USAGE)
OPEN = frozenset(name for name, record in spec.EPISODE.nested.items() if not record.closed)
"""Nested records that take other keys (``findings``; but not the dropped ``_type``)."""
REQUIRED = spec.EPISODE.required
STATUSES = spec.STATUSES

STRUCTS = ("usage", "judge_usage")
"""Nested records the typed read takes as a STRUCT (the row derives values from them:
flattened usage columns, totals); the others are read and stored as JSON."""
assert all(spec.EPISODE[s].record is spec.USAGE for s in STRUCTS)

_READ = {"string": "VARCHAR", "integer": "BIGINT", "number": "DOUBLE",
         "boolean": "BOOLEAN"}
USAGE_FIELDS = {f.name: _READ[f.json_type] for f in spec.USAGE.fields
                if f.json_type is not None}
"""``usage``'s fields with the DuckDB type the typed read gives them."""
USAGE_STRUCT = "STRUCT(" + ", ".join(f"{k} {t}" for k, t in USAGE_FIELDS.items()) + ")"
EPISODE_FIELDS = {
    f.name: (USAGE_STRUCT if f.name in STRUCTS
             else _READ.get(f.json_type or "", "JSON"))
    for f in spec.EPISODE.fields if f.name not in EXCLUDED}
"""Top-level key -> the type of DuckDB's typed read (containers as JSON text)."""

SCALARS = {"str": STR | NULL, "int": INT | NULL, "num": NUM | NULL, "bool": BOOL | NULL}


def kind(want: frozenset[str]) -> str | None:
    """The scalar kind a field's allowed JSON types make it (None: a container)."""
    for name, allowed in SCALARS.items():
        if want <= allowed:
            return name
    return None


TOP_SCALARS = {k: kd for k, w in EPISODE_SPEC.items() if (kd := kind(w))}
USAGE_SCALARS = {k: kd for k, w in USAGE_SPEC.items() if (kd := kind(w))}
assert set(USAGE_SCALARS) == set(USAGE_FIELDS)

ALL_TYPE_PATHS = [f"$.{k}" for k in EPISODE_SPEC] + [
    f"$.{o}.{k}" for o, s in NESTED_SPEC.items() for k in s]
"""Every contract field: the diagnostic pass names the first one of a wrong JSON type."""
TYPE_PATHS = [f"$.{k}" for k, w in EPISODE_SPEC.items() if k not in TOP_SCALARS
              or not (w & NULL or k in REQUIRED)] + [
    f"$.{o}.{k}" for o in NESTED_SPEC if o not in STRUCTS for k in NESTED_SPEC[o]]
"""What the shape pass types: containers, the few scalars inside objects read as JSON,
and the optional scalars that may not be null (``status``, ``format_version``: the typed
read cannot tell a null from an absent key); the typed read checks every other scalar
from its JSON text (a required one's null is a missing required field)."""
KEY_PATHS = ["$", *(f"$.{o}" for o in NESTED_SPEC)]


def is_other_record(keys: dict | set) -> bool:
    """A record with these top-level keys is an experiment record or a measurement,
    which the exact path reads (told apart by
    :func:`evalatlas.adapters.jsonl.record_kind`, the exact path's own rule)."""
    return record_kind(keys) is not EpisodeRecord


COST_SOURCE = "'" + (spec.USAGE["cost_source"].pattern or "").removeprefix("^") \
    .removesuffix("$").replace("'", "''") + "'"
"""RE2 full match of a valid ``cost_source`` (the contract's pattern, unanchored)."""


def _bounded(rspec: spec.RecordSpec, prefix: str = "") -> list[tuple[str, float]]:
    return [(prefix + f.name, f.minimum) for f in rspec.fields
            if f.minimum is not None and f.name not in EXCLUDED]


MINIMA = _bounded(spec.EPISODE) + [
    pair for s in STRUCTS for pair in _bounded(spec.USAGE, f"{s}.")]
"""(SQL path over the typed read, inclusive minimum) of every bounded field."""
NON_NEGATIVE = [path for path, low in MINIMA if low == 0]
"""Fields that must be >= 0 (counts, times, cost)."""
assert {path for path, low in MINIMA if low != 0} == {"format_version"}, (
    "a new lower bound: give it its own problem in fast_jsonl/sql.py")
FINITE = [f.name for f in spec.EPISODE.fields if f.json_type == "number"
          and f.name not in EXCLUDED] + [
    f"{s}.{f.name}" for s in STRUCTS for f in spec.USAGE.fields if f.json_type == "number"]
"""Number fields (DOUBLE in the typed read) that must be finite."""
FINITE_MAPS = [f.name for f in spec.EPISODE.fields
               if f.json_type == "object" and f.items == "number"]
"""Maps of numbers (``scores``) whose values must be finite."""
STRING_LISTS = [f.name for f in spec.EPISODE.fields
                if f.json_type == "array" and f.items == "string"]
"""Lists of strings (``tool_names``, ``retrieved_sources``, ``expected_sources``)."""
FREE = tuple(f.name for f in spec.EPISODE.fields
             if f.json_type == "object" and f.items is None and f.name not in STRUCTS)
"""The JSON columns whose content is free-form (or open): ``extra``, ``findings``..."""
DEFAULTS = {f.name: f.default for f in spec.EPISODE.fields if f.default is not None}
"""What an absent key stands for (``status``: 'completed', ``format_version``...)."""
FORMAT_VERSION = spec.FORMAT_VERSION
