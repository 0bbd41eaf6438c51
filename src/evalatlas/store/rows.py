"""Records <-> store rows. The only place that knows how records are flattened."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from math import isfinite as _isfinite
from operator import attrgetter, itemgetter
from typing import Any

import msgspec

from evalatlas.records.flat import episode_from_row, experiment_from_row, measurement_from_row
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement, UsageSummary
from evalatlas.records.strict import CheckedUsage
from evalatlas.store.schema import EPISODE_COLUMNS, EXPERIMENT_COLUMNS, FLATTENED, declared_types

_encode = msgspec.json.encode


def json_text(value: Any) -> str:
    """The JSON text of a JSON column's value: msgspec's compact encoding (``{"a":1}``,
    the form the fast JSONL path's DuckDB ``to_json`` stores too; ~10x cheaper than
    ``json.dumps``, which was most of flattening an episode with usage, scores and
    extra).

    What ``json.dumps(allow_nan=False)`` refuses stays refused: msgspec writes a NaN or
    an infinity as ``null``, so a text holding ``null`` is checked by ``json.dumps``
    (which raises on them); a value msgspec cannot encode (a lone surrogate, a key that
    is not a string or number) is left to ``json.dumps`` too, whose text
    :func:`row_problem` then judges as before."""
    try:
        out = _encode(value)
    except (TypeError, UnicodeEncodeError, ValueError, OverflowError):
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    if b"null" in out and not _plain_finite(value):
        json.dumps(value, allow_nan=False, ensure_ascii=False)  # raises on NaN, inf
    return out.decode()


_PLAIN = frozenset({str, int, bool, type(None)})
_MAX_WALK = 64


def _plain_finite(value: Any, depth: int = 0) -> bool:
    """True when ``value`` is plain JSON data (dicts with string keys, lists, strings,
    integers, booleans, None) whose floats are all finite, nested at most
    :data:`_MAX_WALK` deep: then ``json.dumps(value, allow_nan=False)`` cannot raise,
    and :func:`json_text` need not run it. Anything else (a NaN or infinity, another
    type, deeper nesting) returns False and ``json.dumps`` decides, as before.

    Why: msgspec writes a null for None and for NaN alike, so every value holding a
    None was encoded twice (Terminal-Bench: 1,500 of 4,000 trials' ``extra`` and
    ``scores`` hold a null; ``json.dumps`` costs several times this walk)."""
    t = type(value)
    if t is dict:
        items: Any = value.values()
        if any(type(k) is not str for k in value):
            return False
    elif t is list:
        items = value
    elif t is float:
        return _isfinite(value)
    else:
        return t in _PLAIN
    if depth >= _MAX_WALK:
        return False
    for x in items:
        tx = type(x)
        if tx in _PLAIN:
            continue
        if tx is float:
            if not _isfinite(x):
                return False
        elif not _plain_finite(x, depth + 1):
            return False
    return True


def _j(value: Any) -> str | None:
    """JSON text for a JSON column; None stays SQL NULL."""
    if value is None:
        return None
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return json_text(value)

# rows -> records lives in records/flat.py (adapters read evalatlas's Parquet export too)
__all__ = ["episode_from_row", "episode_row", "experiment_from_row", "experiment_row",
           "measurement_from_row", "measurement_row"]

def experiment_row(exp: ExperimentRecord, source: str | None, batch: int) -> tuple:
    a = exp.agent
    return (
        exp.experiment_id, exp.experiment_name, exp.timestamp, exp.framework_name,
        exp.framework_version, a.agent_id, a.display_name, a.config_type, a.llm_model, _j(a),
        exp.benchmark_name, exp.benchmark_version, exp.benchmark_subset.name,
        exp.benchmark_subset.n_tasks, exp.benchmark_subset.filter,
        _j(exp.investigator_llm_config), _j(exp.labels), _j(exp.extra), source, batch,
        _j([m.model_dump(mode="json") for m in exp.published_metrics]) if exp.published_metrics
        else None, exp.format_version,
    )

def _episode_cells() -> tuple[tuple[str, str, str], ...]:
    """Each episodes column (in order) and where its value comes from, read off the
    schema (:data:`~evalatlas.store.schema.FLATTENED`, the column types): ``u`` a usage
    field, ``j`` a field as JSON text, ``e`` the field of the column's name, ``s`` the
    source file, ``b`` the batch. ``llm_model`` starts as the usage model and the batch's
    completion step (:mod:`evalatlas.store.costs`) fills the agent's model otherwise."""
    usage = {column: path.split(".", 1)[1] for path, column in FLATTENED["episodes"].items()}
    types = declared_types("episodes")
    cells = []
    for column in EPISODE_COLUMNS:
        if column in usage:
            cells.append((column, "u", usage[column]))
        elif column == "llm_model":
            cells.append((column, "u", "model"))
        elif column in ("source_file", "ingest_batch"):
            cells.append((column, "s" if column == "source_file" else "b", ""))
        elif types[column] == "JSON":
            cells.append((column, "j", column))
        else:
            cells.append((column, "e", column))
    return tuple(cells)


_EPISODE_CELLS = _episode_cells()


def _cell(v: Any) -> str | None:
    """:func:`_j` of a JSON field's value: an empty dict and a usage summary without the
    model_dump round trip (the same text: a usage's fields are all scalars)."""
    if v is None:
        return None
    if type(v) is dict:
        return json_text(v) if v else "{}"
    if type(v) is UsageSummary:  # its numbers are finite (validated): no NaN check
        return _encode(v.__dict__).decode()
    if type(v) is CheckedUsage:  # the same text: its fields, in the same order
        return _encode(v).decode()
    return _j(v)

def _getter(names: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    if len(names) == 1:
        name = names[0]
        return lambda d: (d[name],)
    return itemgetter(*names)


def _row_function(checked: bool = False
                  ) -> Callable[[Any, str | None, int], tuple]:
    """:func:`episode_row` (or, ``checked``, :func:`checked_row`), generated from
    :data:`_EPISODE_CELLS`: runs of neighbouring cells of one kind are each read with
    one getter, and the row is one tuple display (``(*g0(d), *g1(u),
    cell(d["scores"]), ..., source, batch, *g7(d))``), without a loop, a branch per run
    or a list to extend (5.3 -> 4.0 us an EvalLog episode). A record's fields are read
    from its ``__dict__`` by key, a checked episode's (a msgspec Struct) by attribute."""
    runs: list[tuple[str, list[str]]] = []
    for _, where, name in _EPISODE_CELLS:
        if runs and runs[-1][0] == where and where in "eu":
            runs[-1][1].append(name)
        else:
            runs.append((where, [name]))
    env: dict[str, Any] = {"_cell": _cell}
    parts = []
    for i, (where, names) in enumerate(runs):
        if where in "eu":
            env[f"g{i}"] = attrgetter(*names) if checked else _getter(names)
            if checked and len(names) == 1:
                parts.append(f"g{i}({'d' if where == 'e' else 'u'})")
            else:
                parts.append(f"*g{i}({'d' if where == 'e' else 'u'})")
        elif where == "j":  # None (most of them) without a call
            value = f"d.{names[0]}" if checked else f"d[{names[0]!r}]"
            parts.append(f"(None if (v{i} := {value}) is None else _cell(v{i}))")
        else:
            parts.append("source" if where == "s" else "batch")
    head = ("    d = ep\n    u = d.usage\n" if checked else
            "    d = ep.__dict__\n    u = d['usage'].__dict__\n")
    code = (f"def episode_row(ep, source, batch):\n{head}"
            f"    return ({', '.join(parts)},)\n")
    exec(code, env)  # the code made above from the schema's column list
    made: Callable[[Any, str | None, int], tuple] = env["episode_row"]
    return made


episode_row: Callable[[EpisodeRecord, str | None, int], tuple] = _row_function()
"""The episodes-table row of an :class:`EpisodeRecord` (``episode_row(ep, source,
batch)``): the one flattening (:data:`_EPISODE_CELLS`, generated by
:func:`_row_function`). ``tool_names`` is the record's list itself (rows are not
modified)."""

checked_row = _row_function(checked=True)
"""The same row of a :data:`~evalatlas.records.strict.CheckedEpisode` (what an adapter
hands over inside :func:`~evalatlas.records.strict.handing_over_rows`), read off its
attributes: equal to ``episode_row`` of the record built from the same data
(``tests/store/test_rows.py``)."""


_LLM_MODEL = EPISODE_COLUMNS.index("llm_model")
_EXP_LLM_MODEL = EXPERIMENT_COLUMNS.index("llm_model")


def agent_models(usage_models: list[str | None], experiment_ids: list[str],
                 experiments: dict[str, tuple]) -> list[str | None] | None:
    """The ``llm_model`` of each episode of a batch (its usage model and experiment id,
    in order) where its experiment is among the batch's ``experiments`` (id ->
    :func:`experiment_row`): its own usage model, else that experiment agent's model;
    None when the batch has no experiment (nothing to fill).

    The same rule as the batch's completion step (:func:`evalatlas.store.costs.complete_batch`,
    the one definition: "the usage model, else the experiment agent's"), applied before
    the insert: the step's UPDATE then finds nothing to change for these rows, where it
    rewrote every row of a batch whose episodes name no model (10,000 SWE-bench rows:
    ~0.02 s, and each updated row written again at the commit). Episodes whose
    experiment is stored already, or arrives in a later batch, are still filled by
    that step."""
    if not experiments:
        return None
    models = {eid: row[_EXP_LLM_MODEL] for eid, row in experiments.items()}
    return [m if m is not None else models.get(e)
            for m, e in zip(usage_models, experiment_ids, strict=True)]


def fill_agent_models(columns: dict[str, list[Any]],
                      experiments: dict[str, tuple]) -> dict[str, list[Any]]:
    """``columns`` (an episodes batch, column -> values) with ``llm_model`` filled by
    :func:`agent_models`."""
    filled = agent_models(columns["usage_model"], columns["experiment_id"], experiments)
    if filled is not None:
        columns["llm_model"] = filled
    return columns


def measurement_row(m: Measurement, source: str | None, batch: int) -> tuple:
    return (
        m.experiment_id, m.trajectory_id, m.benchmark, m.module, m.class_name, m.function,
        m.params, m.unit, m.baseline_samples, m.agent_samples, m.oracle_samples,
        m.baseline_time, m.agent_time, m.oracle_time, m.speedup_agent, m.speedup_oracle,
        m.advantage, m.valid, m.fallback_to_baseline, _j(m.extra), source, batch,
        m.format_version,
    )

# -- checks before a batch is written ------------------------------------------------
# Why: a value the column cannot hold (an integer of 2**63 in a BIGINT, a lone surrogate
# in a string Arrow must encode as UTF-8) used to raise inside the Arrow/DuckDB write and
# lose the whole pending batch. Checking each row first sends just that record to
# quarantine.

_INT_RANGES = {"BIGINT": (-(2**63), 2**63 - 1), "INTEGER": (-(2**31), 2**31 - 1)}
_SURROGATE = re.compile("[\ud800-\udfff]")

def _field_names(table: str) -> dict[str, str]:
    """Column -> the record field it holds, where the two names differ."""
    return {column: path for path, column in FLATTENED[table].items()}

_TYPES: dict[str, list[tuple[str, str]]] = {}
_NAMES: dict[str, dict[str, str]] = {}

def _string_problem(value: str) -> str | None:
    m = _SURROGATE.search(value)
    if m is None:
        return None
    return (f"lone surrogate \\u{ord(m.group()):04x} at character {m.start()} is not valid "
            "Unicode (it cannot be stored as UTF-8)")

def row_problem(table: str, row: tuple) -> tuple[str, str] | None:
    """(field, reason) for the first value of ``row`` its column cannot hold, else None.

    Integers must fit their column (BIGINT: signed 64-bit; INTEGER: signed 32-bit);
    strings, string lists and JSON text must be valid Unicode (no lone surrogates).
    """
    types = _TYPES.get(table)
    if types is None:
        types = _TYPES[table] = list(declared_types(table).items())
        _NAMES[table] = _field_names(table)
    for (col, typ), value in zip(types, row, strict=True):
        if value is None:
            continue
        problem = None
        if typ in _INT_RANGES and isinstance(value, int):
            lo, hi = _INT_RANGES[typ]
            if not lo <= value <= hi:
                problem = (f"{value} does not fit the store's {typ} column "
                           f"({lo} to {hi})")
        elif isinstance(value, str):
            problem = _string_problem(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str) and (problem := _string_problem(item)):
                    break
        if problem:
            return _NAMES[table].get(col, col), problem
    return None

DEFAULT_REWARD_RANGE = (0.0, 1.0)

def declared_reward_range(extra_json: str | None) -> tuple[float, float]:
    """An experiment's reward range: ``extra.reward_range = [lo, hi]`` if it declares
    one (numbers, lo <= hi), else [0, 1], the range of every supported harness."""
    if not extra_json:
        return DEFAULT_REWARD_RANGE
    try:
        value = json.loads(extra_json).get("reward_range")
    except (ValueError, AttributeError):
        return DEFAULT_REWARD_RANGE
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            and value[0] <= value[1]):
        return float(value[0]), float(value[1])
    return DEFAULT_REWARD_RANGE
