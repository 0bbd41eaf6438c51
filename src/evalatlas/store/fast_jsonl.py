"""DuckDB-native ingest of JSONL episodes, chunk by chunk.

Why: validating one pydantic model per line runs at ~10k records/s, while DuckDB's own
``read_json`` parses ~300k/s. For records that are provably clean, the record contract's
checks can be expressed over DuckDB's parse, so a chunk goes straight to the store.
Anything not provably clean sends that chunk (not the file) through the exact per-record
path (:mod:`evalatlas.adapters.jsonl`), which makes the decision and gives the located
error; so both paths store the same rows and quarantine the same records, by
construction. ``tests/store/test_bad_inputs.py`` runs every corpus case through both.

Per chunk (at most 64 MB of whole lines, see :mod:`evalatlas.adapters.jsonl_stream`):

1. **Keys and JSON types**, by msgspec's strict decoder (:mod:`evalatlas.store.fast_schema`,
   generated from :data:`_EPISODE_SPEC`): every key known at the closed levels (top,
   ``usage``, ``judge_usage``, ``verifier``; ``findings`` is open but for ``_type``),
   every value of the JSON type the contract wants (an integer where a count goes, so
   ``2.5`` or ``true`` never reaches a BIGINT cast; a number for ``reward``, never a
   boolean or string; an object for ``extra``; strings in ``tool_names``). DuckDB's
   typed read coerces all of these silently, so this check is what makes its values
   trustworthy. A chunk msgspec does not vouch for (experiment records mixed in, a
   wrong type, a blank line, no msgspec) takes the **shape pass** instead: ``json_keys``
   and ``json_type`` of every line on a private DuckDB instance (deep input can
   invalidate one), grouped, checked in Python (:func:`check_shapes`), which names the
   offending field and picks out experiment records and measurements so they go
   through the exact path while mixed files keep the fast path for their episodes;
   beside it a typed read that checks each scalar's JSON type from its text.
2. **One query** (at the same time as step 1, on another thread) reads the chunk with
   DuckDB's typed ``read_json`` straight into episodes rows (mirroring
   ``store.rows.episode_row``) in an in-memory table, with per row the first problem
   that needs the exact path (:data:`_PROBLEMS`: required fields, finite numbers,
   ranges, safe trajectory ids, status, ``success`` = ``reward > 0``, cheap upper
   bounds for depth and for numbers no double holds) and whether any text cell may hold
   a credential (:func:`evalatlas.store.redaction.row_gate`); then one aggregate gives
   the verdict (no problem, no duplicate key in the chunk) and the few flagged rows are
   redacted in place (:func:`evalatlas.store.redaction.redact_flagged`).
3. **Commit**: no key taken by an earlier chunk of the file; then, for a group of
   chunks that fills whole DuckDB row groups (the chunker cuts them so, see
   :data:`~evalatlas.adapters.jsonl_stream.ROW_GROUP_LINES`), delete-then-insert into
   ``episodes`` plus one batch row, in one transaction (the exact path's guarantee per
   batch). Whole row groups go straight into the database file, compressed; fewer rows
   would go to the write-ahead log first and be compressed at the next checkpoint
   (measured: the commit's CPU halved at 1M episodes). A group holds at most
   ~128 MB of input (longer rows commit chunk by chunk). If writing a group fails, it is
   rolled back and its chunks take the exact path.

Steps 1-2 run in :data:`PREPARERS` threads, on two chunks at a time, while the caller
commits the chunk before (DuckDB releases the GIL; msgspec holds it, so it decodes in
1 MB slices); commits stay in file order. The store's DuckDB runs each query in the
thread that issues it (``threads = 1`` while the fast path writes). At most
:data:`IN_FLIGHT` chunks are read ahead, staged in an in-memory database attached to the
store's instance (so the store's memory limit covers them too).

Memory is bounded by the chunk, not the file. Known differences, in the text of JSON
columns only (the values are equal, which the parity tests check): DuckDB writes JSON
compactly (``{"n":1}`` where the exact path writes ``{"n": 1}``), keeps duplicate keys
inside ``extra`` in the text (any JSON parser reads back the last value, as the exact
path stores), and leaves ``findings``' absent named keys out where the exact path
writes them as nulls.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import duckdb

from evalatlas import interrupts
from evalatlas.adapters.jsonl_stream import Chunk
from evalatlas.errors import Problem
from evalatlas.records.limits import current as current_limits
from evalatlas.records.models import FORMAT_VERSION
from evalatlas.safe_write import reason
from evalatlas.store.costs import complete_batch
from evalatlas.store.db import DEFAULT_MEMORY_LIMIT, ENV_MEMORY, Store
from evalatlas.store.fast_schema import checker
from evalatlas.store.redaction import (
    column_types,
    redact_flagged,
    redaction_functions,
    row_gate,
)

FAST_PATH_MIN_BYTES = 8 * 1024 * 1024
"""Below this size the exact path is fast enough and the fast path's fixed cost is not."""

_USAGE_FIELDS = {
    "prompt_tokens": "BIGINT", "completion_tokens": "BIGINT", "total_tokens": "BIGINT",
    "cached_tokens": "BIGINT", "cache_creation_tokens": "BIGINT",
    "reasoning_tokens": "BIGINT", "total_cost_usd": "DOUBLE", "cost_source": "VARCHAR",
    "n_llm_calls": "BIGINT", "model": "VARCHAR",
}
_USAGE_STRUCT = "STRUCT(" + ", ".join(f"{k} {t}" for k, t in _USAGE_FIELDS.items()) + ")"
_EPISODE_FIELDS = {
    "experiment_id": "VARCHAR", "task_id": "VARCHAR", "task_version_hash": "VARCHAR",
    "seed": "BIGINT", "split": "VARCHAR", "task_description": "VARCHAR",
    "tool_names": "JSON", "success": "BOOLEAN", "reward": "DOUBLE",
    "error_type": "VARCHAR", "n_steps": "BIGINT", "n_agent_steps": "BIGINT",
    "n_env_steps": "BIGINT", "wall_time_s": "DOUBLE", "usage": _USAGE_STRUCT,
    "trajectory_id": "VARCHAR", "timestamp": "DOUBLE", "verifier": "JSON",
    "findings": "JSON", "attempt": "BIGINT", "status": "VARCHAR", "error_message": "VARCHAR",
    "scores": "JSON", "input_text": "VARCHAR", "output_text": "VARCHAR",
    "expected_text": "VARCHAR", "retrieved_sources": "JSON",
    "expected_sources": "JSON", "judge_usage": _USAGE_STRUCT,
    "investigation_metadata": "JSON", "extra": "JSON", "format_version": "BIGINT",
}
_VERIFIER_KEYS = {"ref", "source"}
_STATUSES = ("completed", "error", "timeout", "max_steps", "cancelled", "incomplete",
             "skipped")



def key_hash(prefix: str = "") -> str:
    """SQL for a 64-bit hash of an episode key ``(experiment_id, trajectory_id)``: 64
    bits of its MD5.

    Why not DuckDB's ``hash(a, b)``: its 64-bit string hash collides heavily on short,
    regular ids (1M keys like ``task-00896_c0ep4`` give 864,000 distinct values), and a
    collision sends the chunk through the exact path (correct, but ~30x slower). 64 bits
    of MD5 behave like random ones (a chance collision among 10M keys: ~3 in a million),
    and take 8 bytes less per key than all 128 (80 MB at 10M episodes); a collision is
    still only a slow path, never a wrong row, because :meth:`FastJsonl.earlier_lines`
    checks the stored keys.
    """
    return f"md5_number_lower({prefix}experiment_id || chr(0) || {prefix}trajectory_id)"


class NotClean(Exception):
    """This chunk is not provably clean; use the exact path for it."""


class GroupLost(Exception):
    """Writing a group failed and was rolled back: its ``chunks`` (in file order) need
    the exact path."""

    def __init__(self, reason: str, chunks: list[Chunk]) -> None:
        super().__init__(reason)
        self.chunks = chunks


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_COST_SOURCE = "'(reported|computed)(: .*)?'"
"""RE2 full match of a valid ``cost_source`` (the record contract's pattern)."""


# -- 1. shape pass ---------------------------------------------------------------------
_INT = frozenset({"UBIGINT", "BIGINT"})
_NUM = _INT | {"DOUBLE"}
_STR = frozenset({"VARCHAR"})
_NULL = frozenset({"NULL"})
_BOOL = frozenset({"BOOLEAN"})
_ARR = frozenset({"ARRAY"})
_OBJ = frozenset({"OBJECT"})
_USAGE_SPEC: dict[str, frozenset[str]] = {
    **{k: _INT | _NULL for k in ("prompt_tokens", "completion_tokens", "total_tokens",
                                   "cached_tokens", "cache_creation_tokens",
                                   "reasoning_tokens", "n_llm_calls")},
    "total_cost_usd": _NUM | _NULL, "cost_source": _STR | _NULL, "model": _STR | _NULL,
}
_EPISODE_SPEC: dict[str, frozenset[str]] = {
    "experiment_id": _STR, "task_id": _STR, "trajectory_id": _STR, "status": _STR,
    "reward": _NUM, "success": _BOOL | _NULL, "tool_names": _ARR,
    "retrieved_sources": _ARR | _NULL, "expected_sources": _ARR | _NULL,
    "usage": _OBJ, "judge_usage": _OBJ | _NULL, "verifier": _OBJ | _NULL,
    "findings": _OBJ | _NULL, "scores": _OBJ, "extra": _OBJ,
    "investigation_metadata": _OBJ | _NULL,
    **{k: _STR | _NULL for k in ("task_version_hash", "split", "task_description",
                                   "error_type", "error_message", "input_text",
                                   "output_text", "expected_text")},
    **{k: _INT | _NULL for k in ("seed", "n_steps", "n_agent_steps", "n_env_steps",
                                   "attempt", "format_version")},
    **{k: _NUM | _NULL for k in ("wall_time_s", "timestamp")},
}
_NESTED_SPEC: dict[str, dict[str, frozenset[str]]] = {
    "usage": _USAGE_SPEC, "judge_usage": _USAGE_SPEC,
    "verifier": {"ref": _STR | _NULL, "source": _STR | _NULL},
    "findings": {"difficulty": _STR | _NULL, "feasible": _BOOL | _NULL,
                 "failure_root_cause": _STR | _NULL},
}
_OPEN = {"findings"}  # extra keys are allowed here (but not the dropped ``_type``)
_REQUIRED = ("experiment_id", "task_id", "trajectory_id", "reward")
_ALL_TYPE_PATHS = [f"$.{k}" for k in _EPISODE_SPEC] + [
    f"$.{o}.{k}" for o, spec in _NESTED_SPEC.items() for k in spec]
"""Every contract field: the diagnostic pass names the first one of a wrong JSON type."""
_SCALARS = {"str": _STR | _NULL, "int": _INT | _NULL, "num": _NUM | _NULL,
            "bool": _BOOL | _NULL}


def _kind(want: frozenset[str]) -> str | None:
    """The scalar kind a field's allowed JSON types make it (None: a container)."""
    for kind, allowed in _SCALARS.items():
        if want <= allowed:
            return kind
    return None


_TOP_SCALARS = {k: kind for k, w in _EPISODE_SPEC.items() if (kind := _kind(w))}
_USAGE_SCALARS = {k: kind for k, w in _USAGE_SPEC.items() if (kind := _kind(w))}
assert set(_USAGE_SCALARS) == set(_USAGE_FIELDS)
_TYPE_PATHS = [f"$.{k}" for k in _EPISODE_SPEC if k not in _TOP_SCALARS] + [
    f"$.{o}.{k}" for o in ("verifier", "findings") for k in _NESTED_SPEC[o]]
"""What the shape pass types: containers, and the few scalars inside free-form objects;
the typed read checks every other scalar from its JSON text (:func:`_scalar`)."""
_KEY_PATHS = ["$", *(f"$.{o}" for o in _NESTED_SPEC)]
_EXPERIMENT_MARK = ("agent", "experiment_name", "benchmark_subset", "benchmark", "sample_id")


def _sql_list(items: list[str]) -> str:
    return "[" + ", ".join(_sql_str(x) for x in items) + "]"


def keys_types_problem(keys: list[list[str]], types: list[str | None],
                       paths: list[str] | None = None) -> str | None:
    """Why an episode line with these keys (top and nested closed objects) and these JSON
    types (of ``paths``, by default :data:`_TYPE_PATHS`) needs the exact path, or None."""
    scopes = ("top", *_NESTED_SPEC)
    for scope, names in zip(scopes, keys, strict=True):
        allowed = _EPISODE_SPEC if scope == "top" else _NESTED_SPEC[scope]
        for name in names or ():
            if name not in allowed and not (scope in _OPEN and name != "_type"):
                where = "" if scope == "top" else f" in {scope}"
                return f"key {name!r}{where} is not part of the fast path's contract"
    if "task_id" not in (keys[0] or ()):
        return "missing required field: task_id"
    for path, t in zip(paths or _TYPE_PATHS, types, strict=True):
        field_ = path[2:]
        if t is None:
            if field_ in _REQUIRED:
                return f"missing required field: {field_}"
            continue
        scope, _, leaf = field_.partition(".")
        want = _NESTED_SPEC[scope][leaf] if leaf else _EPISODE_SPEC[field_]
        if t not in want:
            return f"{field_} is {t}"
    return None


def _shape_sql(src: str, max_object: int, paths: list[str]) -> str:
    """One parse per line: the key lists of the closed objects and the JSON type of
    ``paths``, grouped (a file has a handful of distinct shapes); line numbers only for
    lines that may be experiment records or measurements."""
    marks = ", ".join(f"list_contains(k[1], '{m}')" for m in _EXPERIMENT_MARK)
    return f"""
    SELECT k, t, [{marks}] AS x, count(*) AS n,
           list(ordinality) FILTER (WHERE list_contains(k[1], 'agent')
                                    OR list_contains(k[1], 'benchmark')) AS lines
    FROM (SELECT ordinality, json_keys(json, {_sql_list(_KEY_PATHS)}) AS k,
                 json_type(json, {_sql_list(paths)}) AS t
          FROM read_json_objects({src}, format='newline_delimited',
                                 maximum_object_size={max_object}) WITH ORDINALITY)
    GROUP BY ALL
    """


@dataclass
class Shapes:
    n_objects: int = 0
    other_lines: list[int] = field(default_factory=list)


def check_shapes(scratch: duckdb.DuckDBPyConnection, src: str, max_object: int,
                 paths: list[str] | None = None) -> Shapes:
    """Run the shape pass; raise NotClean with the first reason, else note which lines
    are experiment records or measurements (told apart as the exact path does)."""
    paths = paths or _TYPE_PATHS
    rows = scratch.execute(_shape_sql(src, max_object, paths)).fetchall()
    out = Shapes()
    for keys, types, marks, n, other in rows:
        out.n_objects += n
        agent, name, subset, bench, sample = marks
        if (agent and (name or subset)) or (bench and "task_id" not in (keys[0] or ())
                                            and not sample):
            out.other_lines.extend(other or [])
            continue
        problem = keys_types_problem(keys, types, paths)
        if problem:
            raise NotClean(problem)
    return out


def _scalar(raw: str, kind: str) -> tuple[str, str]:
    """(SQL value, SQL "of the right JSON type") for a scalar read as JSON text ``raw``.

    Why from the text: DuckDB's typed read coerces (``2.5`` or ``true`` into a BIGINT,
    ``"0.5"`` into a DOUBLE, ``12`` into a VARCHAR), so the JSON type must be seen before
    the cast. Reading the text costs no more than the typed read, and saves a second
    parse of every line (``json_type`` over every path cost more than the read itself).
    An integer is right when it survives the round trip through BIGINT unchanged (so
    ``2.5``, ``2.0``, ``"5"``, ``true`` and anything beyond 64 bits are not); a number
    when it parses as a double (the checks then reject non-finite ones); DuckDB writes
    JSON text compactly, so a string starts with a quote.
    """
    text = f"{raw}::VARCHAR"
    if kind == "str":
        return f"json_extract_string({raw}, '$')", f"starts_with({text}, '\"')"
    if kind == "bool":
        return f"{text} = 'true'", f"{text} IN ('true', 'false')"
    if kind == "int":
        return f"TRY_CAST({text} AS BIGINT)", "{v}::VARCHAR = " + text
    return f"TRY_CAST({text} AS DOUBLE)", "{v} IS NOT NULL"


_RECAST = ("tool_names", "retrieved_sources", "expected_sources", "scores")
"""Containers the stage casts itself (lists of strings, the scores map)."""


def _typed_columns() -> tuple[str, str, str]:
    """For the typed read: (the ``columns`` argument, the inner select of converted
    values, the outer select of the stage's typed columns plus ``_types_ok``)."""
    cols: dict[str, str] = {}
    inner: list[str] = []
    outer: list[str] = []
    oks: list[str] = []

    def scalar(raw: str, name: str, kind: str) -> str:
        value, ok = _scalar(raw, kind)
        inner.append(f'{value} AS "{name}"')
        oks.append(f'({raw} IS NULL OR coalesce({ok.format(v=chr(34) + name + chr(34))}, '
                   'false))')
        return f'"{name}"'

    for key, sql_type in _EPISODE_FIELDS.items():
        if key in _TOP_SCALARS:
            cols[key] = "JSON"
            outer.append(f"{scalar(key, f'_v_{key}', _TOP_SCALARS[key])} AS {key}")
        elif key in ("usage", "judge_usage"):
            cols[key] = "STRUCT(" + ", ".join(f"{k} JSON" for k in _USAGE_FIELDS) + ")"
            parts = ", ".join(f"{k} := {scalar(f'{key}.{k}', f'_v_{key}_{k}', kind)}"
                              for k, kind in _USAGE_SCALARS.items())
            outer.append(f"CASE WHEN {key} IS NULL THEN NULL "
                         f"ELSE struct_pack({parts}) END AS {key}")
        else:
            cols[key] = sql_type
            if key not in _RECAST:
                outer.append(key)
    outer.append("(" + " AND ".join(oks) + ") AS _types_ok")
    columns = "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(t)}" for k, t in cols.items()) + "}"
    return columns, ", ".join(inner), ", ".join(outer)


_READ_COLUMNS, _CONVERTED, _TYPED = _typed_columns()
_PLAIN_TYPES = {**_EPISODE_FIELDS, "tool_names": "VARCHAR[]", "retrieved_sources": "VARCHAR[]",
                "expected_sources": "VARCHAR[]", "scores": "MAP(VARCHAR, DOUBLE)"}
_PLAIN_COLUMNS = "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(t)}"
                                 for k, t in _PLAIN_TYPES.items()) + "}"
"""The typed read of a chunk msgspec checked (its coercions can no longer hide anything,
and lists of strings and the scores map are read as such, not re-parsed from text)."""


# -- 2. typed read and checks ----------------------------------------------------------
_PROBLEMS: list[tuple[str, str]] = [
    ("a value of the wrong JSON type", "NOT _types_ok"),
    ("missing required field", "experiment_id IS NULL OR task_id IS NULL OR reward IS NULL "
                               "OR trajectory_id IS NULL"),
    ("non-finite number", """isnan(reward) OR isinf(reward) OR isnan(wall_time_s)
        OR isinf(wall_time_s) OR isnan(timestamp) OR isinf(timestamp)
        OR isnan(usage.total_cost_usd) OR isinf(usage.total_cost_usd)
        OR isnan(judge_usage.total_cost_usd) OR isinf(judge_usage.total_cost_usd)
        OR list_bool_or(list_transform(map_values(scores), lambda x: isnan(x) OR isinf(x)))"""),
    ("negative value", """n_steps < 0 OR n_agent_steps < 0 OR n_env_steps < 0
        OR wall_time_s < 0 OR attempt < 0 OR usage.prompt_tokens < 0
        OR usage.completion_tokens < 0 OR usage.total_tokens < 0
        OR usage.cached_tokens < 0 OR usage.cache_creation_tokens < 0
        OR usage.reasoning_tokens < 0 OR usage.total_cost_usd < 0
        OR usage.n_llm_calls < 0 OR judge_usage.total_cost_usd < 0
        OR judge_usage.prompt_tokens < 0 OR judge_usage.completion_tokens < 0"""),
    ("unsafe trajectory_id", """trajectory_id = '' OR trajectory_id = '.'
        OR regexp_matches(trajectory_id,
                          '[/\\\\\\x00-\\x1f\\x7f]|^[A-Za-z]:|\\.\\.|\\.archived_')
        OR strlen(trajectory_id) > 255"""),
    ("unknown status", "status IS NOT NULL AND status NOT IN ("
                       + ", ".join(_sql_str(s) for s in _STATUSES) + ")"),
    ("success contradicts reward", "success IS NOT NULL AND success <> (reward > 0)"),
    ("unknown cost_source", f"""(usage.cost_source IS NOT NULL
        AND NOT regexp_full_match(usage.cost_source, {_COST_SOURCE}))
        OR (judge_usage.cost_source IS NOT NULL
            AND NOT regexp_full_match(judge_usage.cost_source, {_COST_SOURCE}))"""),
    ("reward outside [0, 1]", "reward < 0 OR reward > 1"),
    ("attempt too large", "attempt > 2147483647"),
    ("a list with a non-string item", "_bad_list"),
    ("a score that is not a number", "_bad_scores"),
    ("maybe nested too deep", "_maybe_deep"),
    ("maybe a number too large for a double", "_maybe_huge"),
    ("unknown format_version", f"format_version < 1 OR format_version > {FORMAT_VERSION}"),
]
"""Why a staged record needs the exact path (name, SQL over the typed read's columns).
Each row gets the first that holds (:data:`_PROBLEM`), computed in the same query that
builds its episodes row, so a chunk is materialised once."""

_PROBLEM = ("CASE " + " ".join(f"WHEN ({cond}) THEN {_sql_str(name)}"
                               for name, cond in _PROBLEMS) + " END AS _problem")
_WRONG_TYPE = _PROBLEMS[0][0]
_DUPLICATES = "duplicate trajectory_id"


def _usage_json(col: str) -> str:
    # UsageSummary's derivations: total = prompt + completion when absent; a reported cost.
    return f"""CASE WHEN {col} IS NULL THEN NULL ELSE to_json(struct_pack(
        prompt_tokens := {col}.prompt_tokens, completion_tokens := {col}.completion_tokens,
        total_tokens := coalesce({col}.total_tokens,
                                 {col}.prompt_tokens + {col}.completion_tokens),
        cached_tokens := {col}.cached_tokens,
        cache_creation_tokens := {col}.cache_creation_tokens,
        reasoning_tokens := {col}.reasoning_tokens, total_cost_usd := {col}.total_cost_usd,
        cost_source := CASE WHEN {col}.total_cost_usd IS NOT NULL
                            THEN coalesce({col}.cost_source, 'reported') END,
        n_llm_calls := {col}.n_llm_calls, model := {col}.model)) END"""


_SET_AT_COMMIT = ("llm_model", "source_file", "ingest_batch")
"""Episode columns the commit fills (the experiment's model; the source and batch)."""


def _select_rows(source: str) -> str:
    """The episodes-table row for each record of ``source`` (a typed read, see
    :meth:`FastJsonl._prepare`; mirrors store.rows.episode_row), by column name, without
    :data:`_SET_AT_COMMIT`; ``_line`` kept for duplicates, ``_problem`` for the checks."""
    return f"""
    SELECT s.experiment_id, s.trajectory_id, s.task_id, s.task_version_hash,
      TRY_CAST(s.attempt AS INTEGER) AS attempt, s.seed, s.split, s.task_description,
      coalesce(s.tool_names, []::VARCHAR[]) AS tool_names, s.reward > 0 AS success,
      s.reward, coalesce(s.status, 'completed') AS status, s.error_type, s.error_message,
      s.n_steps, s.n_agent_steps, s.n_env_steps, s.wall_time_s, s.timestamp,
      s.usage.prompt_tokens AS prompt_tokens,
      s.usage.completion_tokens AS completion_tokens,
      coalesce(s.usage.total_tokens, s.usage.prompt_tokens + s.usage.completion_tokens)
        AS total_tokens,
      s.usage.cached_tokens AS cached_tokens,
      s.usage.cache_creation_tokens AS cache_creation_tokens,
      s.usage.reasoning_tokens AS reasoning_tokens, s.usage.total_cost_usd AS cost_usd,
      CASE WHEN s.usage.total_cost_usd IS NOT NULL
           THEN coalesce(s.usage.cost_source, 'reported') END AS cost_source,
      s.usage.n_llm_calls AS n_llm_calls, s.usage.model AS usage_model,
      {_usage_json("s.judge_usage")} AS judge_usage,
      to_json(coalesce(s.scores, MAP {{}}::MAP(VARCHAR, DOUBLE))) AS scores,
      s.input_text, s.output_text, s.expected_text, s.retrieved_sources,
      s.expected_sources, s.verifier, s.findings, s.investigation_metadata,
      coalesce(s.extra, '{{}}'::JSON) AS extra,
      TRY_CAST(coalesce(s.format_version, {FORMAT_VERSION}) AS INTEGER) AS format_version,
      CASE WHEN s.reward IS NOT NULL THEN 'harness' END AS outcome_source,
      s._line, {_PROBLEM}
    FROM {source} s
    """


_STRINGS = r'\[\s*("([^"\\]|\\.)*"\s*(,\s*"([^"\\]|\\.)*"\s*)*)?\]'
_NUMBER_OR_NULL = r'(-?[0-9][0-9.eE+-]*|null)'
_KEY = r'"([^"\\]|\\.)*"\s*:\s*'
_SCORES = (r'\{\s*(' + _KEY + _NUMBER_OR_NULL + r'\s*(,\s*' + _KEY + _NUMBER_OR_NULL
           + r'\s*)*)?\}')
_HUGE = r'[0-9.][eE][+]?0*[1-9][0-9]{2}|[0-9]{300}'


def _openers(col: str) -> str:
    v = f"{col}::VARCHAR"
    return f"coalesce(length({v}) - length(replace(replace({v}, '{{', ''), '[', '')), 0)"


_FREE = ("extra", "findings", "investigation_metadata", "verifier")
"""The free-form JSON columns."""


def _free_flags(max_depth: int, huge_in: tuple[str, ...] = _FREE) -> str:
    """Cheap upper bounds for depth and overflow in the free-form JSON (the exact path
    decides when a bound is hit). Openers are only counted in rows whose free-form text
    is longer than ``max_depth`` (shorter text cannot nest deeper): counting them in
    every row cost a fifth of the chunk's read. ``huge_in``: the columns whose text may
    hold a number no double holds (msgspec has ruled it out in the others)."""
    deep = " + ".join(_openers(c) for c in _FREE)
    size = " + ".join(f"coalesce(strlen({c}::VARCHAR), 0)" for c in _FREE)
    text = " || ".join(f"coalesce({c}::VARCHAR, '')" for c in huge_in)
    return f"""({size}) > {max_depth} AND ({deep}) > {max_depth} AS _maybe_deep,
      regexp_matches({text}, '{_HUGE}') AS _maybe_huge"""


def _stage_flags(max_depth: int) -> str:
    """Per-row flags computed from the JSON text DuckDB kept: lists of strings only,
    scores numbers or null, and :func:`_free_flags`."""
    lists = " OR ".join(f"NOT coalesce(regexp_full_match({c}::VARCHAR, '{_STRINGS}'), true)"
                        for c in ("tool_names", "retrieved_sources", "expected_sources"))
    return f"""({lists}) AS _bad_list,
      NOT coalesce(regexp_full_match(scores::VARCHAR, '{_SCORES}'), true) AS _bad_scores,
      {_free_flags(max_depth)}"""


@dataclass
class Prepared:
    """One chunk after the worker's steps 1 and 2: staged rows, or why it needs the exact
    path. ``other_lines``: experiment records and measurements (1-based within the
    chunk), which the exact path parses."""

    chunk: Chunk
    table: str | None = None
    reason: str | None = None
    other_lines: list[int] = field(default_factory=list)
    n: int = 0
    unpriced: bool = True


@dataclass
class Group:
    """Staged chunks to be written as one batch (see :meth:`FastJsonl.insert`)."""

    batch_id: int
    preps: list[Prepared] = field(default_factory=list)
    n: int = 0
    unpriced: bool = False


_SCRATCH = "evalatlas_fast"
"""In-memory database attached to the store's DuckDB instance: staged chunks live there,
visible to both the worker's cursor and the committing connection, and vanish with the
process (a killed ingest leaves nothing behind in the store file)."""

PREPARERS = 2
"""Threads preparing chunks side by side."""

IN_FLIGHT = 3
"""Chunks read but not yet committed, at most (memory is bounded by this x chunk)."""

MEMORY_LIMIT = "640MB"
"""The store instance's DuckDB memory budget while the fast path runs (unless the user
set :data:`evalatlas.store.db.ENV_MEMORY`); the scratch instance has 256 MB more."""

CHECKPOINT_THRESHOLD = "128MB"
"""DuckDB's WAL size that triggers a checkpoint, while the fast path writes."""

_DONE = object()

_swept: list[str] = []
"""The stale chunk directories this process removed (see :func:`remove_stale_chunk_dirs`)."""

_CHUNK_DIR = "evalatlas-chunk-"
"""Prefix of the temporary directory holding the chunk files DuckDB reads, followed by
the ingesting process's id."""


def remove_stale_chunk_dirs(root: str | None = None) -> list[str]:
    """Delete the chunk directories of ingests that were killed (their process is gone),
    and return them: a killed ingest cannot clean up after itself, and each left up to
    :data:`IN_FLIGHT` chunk files behind. A directory whose process id is alive (maybe
    reused) is kept; so is everything on Windows, where ``os.kill(pid, 0)`` is not a
    harmless probe."""
    root = root or tempfile.gettempdir()
    removed: list[str] = []
    if os.name == "nt":
        return removed
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            pid, _, rest = entry.name.removeprefix(_CHUNK_DIR).partition("-")
            if (not entry.name.startswith(_CHUNK_DIR) or not pid.isdigit() or not rest
                    or not entry.is_dir(follow_symlinks=False) or _alive(int(pid))):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:  # 0 would probe our own process group
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


class FastJsonl:
    """The fast path's state for one input file (or stream).

    Two threads: :meth:`pipeline` reads and prepares chunk k+1 (the chunker, the shape
    pass on a private DuckDB instance, the typed read, checks and redaction on a cursor
    of the store's instance, into :data:`_SCRATCH`) while the caller commits chunk k on
    the store connection. DuckDB releases the GIL, so the two overlap on two cores.
    Commits stay in file order, one transaction per group of chunks (:meth:`insert`).

    ``_fast_seen`` holds a hash and line per episode key already taken by this file, so
    a duplicate in a later chunk is found without keeping every key in Python.
    """

    def __init__(self, store: Store, source: str, max_depth: int = 100) -> None:
        self.store = store
        self.con = store.con
        self.source = source
        self.max_depth = max_depth
        # Lines over the line limit never reach DuckDB (the chunker blanks them).
        self.max_object = max(1 << 20, current_limits().max_line_bytes + 2)
        if not _swept:  # once per process: other ingests' leftovers only
            _swept.extend(remove_stale_chunk_dirs())
        # first: an OSError here ($TMPDIR full) leaves nothing to undo
        self.tmpdir = tempfile.mkdtemp(prefix=f"{_CHUNK_DIR}{os.getpid()}-")
        try:
            self._setup()
        except BaseException:  # an interrupt while setting up: no chunk folder left
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise

    def _setup(self) -> None:
        self.scratch = self._scratch()
        self.group: Group | None = None
        self.con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {_SCRATCH}")
        # Checkpoint every few chunks, not after each: each checkpoint recompresses the
        # last, partly filled row group (measured: ~10% less CPU, lower peak RSS). The
        # WAL still makes every committed chunk durable.
        self._threshold = self.con.execute(
            "SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
        self.con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
        # The store's DuckDB budget shrinks while two chunks are staged and the scratch
        # instance runs beside it (DuckDB evicts cached blocks or spills beyond it): peak
        # RSS measured 1.21 GB at 10M episodes with the store's 1 GB.
        self._own_memory_limit = os.environ.get(ENV_MEMORY) is None
        if self._own_memory_limit:
            self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self.con.execute("CREATE OR REPLACE TEMP TABLE _fast_seen (h UBIGINT, line BIGINT)")
        # Chunks of one file never share a key (see commit), so only episodes stored
        # before this file can be replaced: with none, no chunk scans the table for them.
        self._replaces = bool(self.con.execute(
            "SELECT EXISTS (SELECT 1 FROM episodes)").fetchall()[0][0])
        # One cursor per preparing thread (a DuckDB connection serves one thread at a
        # time); closed in close(). The redaction UDFs are the instance's, registered
        # once through the first cursor.
        self._local = threading.local()
        self._cursors: list[duckdb.DuckDBPyConnection] = [self.con.cursor()]
        self._cursor_lock = threading.Lock()
        self._udfs = contextlib.ExitStack()
        self._udfs.enter_context(redaction_functions(self._cursors[0]))
        # Each query runs in the thread that issues it: the preparers and the committer
        # already keep both cores busy, and DuckDB's own threads only add scheduling
        # (measured: ~10% more CPU for the same chunks with threads=2).
        self._threads = self.con.execute(
            "SELECT current_setting('threads')").fetchall()[0][0]
        self.con.execute("SET threads = 1")
        types = column_types(self.con, "episodes")
        self._row_types = {c: t for c, t in types.items() if c not in _SET_AT_COMMIT}
        self._seq = itertools.count()
        self._shape_thread = ThreadPoolExecutor(1, thread_name_prefix="evalatlas-shapes")

    @property
    def cur(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the store's instance."""
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self.con.cursor()
            cur.execute("SET enable_progress_bar = false")
            with self._cursor_lock:
                self._cursors.append(cur)
            self._local.cur = cur
        return cur

    @staticmethod
    def _scratch() -> duckdb.DuckDBPyConnection:
        """A private DuckDB instance for the shape pass (deep input can invalidate an
        instance; it must not be the store's)."""
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false; SET preserve_insertion_order = false; "
                    "SET memory_limit = '256MB'")
        return con

    def close(self) -> None:
        """Restore the store's settings and free the scratch space; an open group
        (only after an error) is dropped unwritten, as a killed ingest's would be. The
        chunk folder goes whatever fails here (after an interrupt, say)."""
        try:
            if self.group is not None:
                for prep in self.group.preps:
                    self.discard(prep)
                self.group = None
            self.con.execute(f"SET checkpoint_threshold = {_sql_str(self._threshold)}")
            if self._own_memory_limit:  # the store's default (see Store._open)
                self.con.execute(f"SET memory_limit = '{DEFAULT_MEMORY_LIMIT}'")
            self.con.execute(f"SET threads = {int(self._threads)}")
            self._shape_thread.shutdown()
            self._udfs.close()
            for cur in self._cursors:
                cur.close()
            self.con.execute("DROP TABLE IF EXISTS _fast_seen")
            self.con.execute(f"DETACH DATABASE IF EXISTS {_SCRATCH}")
            self.scratch.close()
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    # -- worker side -------------------------------------------------------------------
    def prepare(self, chunk: Chunk) -> Prepared:
        """Steps 1 and 2 for ``chunk``: staged, checked and redacted rows ready to commit,
        or the reason it needs the exact path. Runs in the worker thread; touches only the
        scratch instance and this object's cursor."""
        if chunk.oversized:
            return Prepared(chunk, reason="a line is over the length limit")
        seq = next(self._seq)
        tmp = os.path.join(self.tmpdir, f"chunk-{seq}.jsonl")
        try:
            Path(tmp).write_bytes(chunk.view)
        except OSError as exc:  # $TMPDIR full or gone: this chunk takes the exact path
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return Prepared(chunk, reason=f"cannot stage the chunk in {self.tmpdir}: "
                            f"{reason(exc)}")
        try:
            return self._prepare(chunk, _sql_str(tmp), seq)
        except NotClean as exc:
            return Prepared(chunk, reason=str(exc))
        finally:
            os.unlink(tmp)

    def _shapes(self, src: str) -> Shapes:
        """Step 1 (on the shape thread, private instance)."""
        try:
            return check_shapes(self.scratch, src, self.max_object)
        except duckdb.FatalException as exc:  # the scratch instance is gone; renew it
            self.scratch = self._scratch()
            raise NotClean(f"DuckDB could not read it: {exc}") from exc
        except duckdb.Error as exc:
            raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc

    def _diagnose(self, src: str) -> str | None:
        """Which field has the wrong JSON type (a second parse, only for a declined
        chunk; the fast path itself only counts such lines). On the shape thread, which
        owns the scratch instance."""
        def run() -> str | None:
            try:
                check_shapes(self.scratch, src, self.max_object, _ALL_TYPE_PATHS)
            except (NotClean, duckdb.Error) as exc:
                return str(exc)
            return None
        return self._shape_thread.submit(run).result()

    def _prepare(self, chunk: Chunk, src: str, seq: int) -> Prepared:
        # msgspec checks keys and JSON types (shape thread, holding the GIL) while DuckDB
        # reads the chunk straight into episodes rows (this thread, without it): one
        # query reads, converts, flags problems and redacts, so the chunk is materialised
        # once. A chunk msgspec does not vouch for is read again the slow, checked way.
        validating = self._shape_thread.submit(self._clean, chunk)
        rows = f"{_SCRATCH}.rows_{seq}"
        cur = self.cur
        other_lines: list[int] = []
        try:
            read_error: duckdb.Error | None = None
            try:
                self._stage(rows, f"""(
                    SELECT * EXCLUDE (ordinality),
                      ordinality + {chunk.first_line - 1} AS _line,
                      true AS _types_ok, false AS _bad_list, false AS _bad_scores,
                      {_free_flags(self.max_depth, huge_in=("findings",))}
                    FROM read_json({src}, format='newline_delimited',
                                   columns={_PLAIN_COLUMNS},
                                   maximum_object_size={self.max_object}) WITH ORDINALITY)""")
            except duckdb.Error as exc:
                read_error = exc
            if not validating.result() or read_error is not None:
                cur.execute(f"DROP TABLE IF EXISTS {rows}")
                other_lines = self._stage_checked(chunk, src, rows)
            n, unpriced = self._check(rows, src)
        except duckdb.Error as exc:
            cur.execute(f"DROP TABLE IF EXISTS {rows}")
            raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc
        except BaseException:
            cur.execute(f"DROP TABLE IF EXISTS {rows}")
            raise
        finally:
            validating.exception()
        return Prepared(chunk, table=rows, other_lines=other_lines, n=n, unpriced=unpriced)

    def _stage(self, rows: str, source: str) -> None:
        """Create ``rows``: the episodes rows of the typed read ``source``, with
        ``_line``, ``_problem``, ``_maybe_secret`` (see :meth:`_check`) and the key's hash
        ``_h`` (:func:`key_hash`)."""
        gate = row_gate("episodes", self._row_types)
        self.cur.execute(f"CREATE TABLE {rows} AS SELECT *, {gate} AS _maybe_secret, "
                         f"{key_hash()} AS _h FROM ({_select_rows(source)})")

    def _clean(self, chunk: Chunk) -> bool:
        return checker()(chunk.data, chunk.n_lines, chunk.size)

    def _stage_checked(self, chunk: Chunk, src: str, rows: str) -> list[int]:
        """The slow way to stage a chunk msgspec did not vouch for: the shape pass
        (names the first offending key or container, picks out experiment records)
        beside a typed read that checks every scalar's JSON type from its text.
        Returns the lines (1-based in the chunk) that are not episodes."""
        shaping = self._shape_thread.submit(self._shapes, src)
        try:
            read_error: duckdb.Error | None = None
            try:
                self._stage(rows, f"""(
                    SELECT {_TYPED},
                      ordinality + {chunk.first_line - 1} AS _line,
                      tool_names::VARCHAR[] AS tool_names,
                      retrieved_sources::VARCHAR[] AS retrieved_sources,
                      expected_sources::VARCHAR[] AS expected_sources,
                      json_transform(scores, '"MAP(VARCHAR, DOUBLE)"') AS scores,
                      {_stage_flags(self.max_depth)}
                    FROM (SELECT *, {_CONVERTED}
                          FROM read_json({src}, format='newline_delimited',
                                         columns={_READ_COLUMNS},
                                         maximum_object_size={self.max_object})
                          WITH ORDINALITY))""")
            except duckdb.Error as exc:
                read_error = exc
            shapes = shaping.result()  # its NotClean comes first: it names the field
            if shapes.n_objects != chunk.n_lines:
                raise NotClean(f"{chunk.n_lines} lines but {shapes.n_objects} JSON objects "
                               "(blank lines?)")
            if read_error is not None:
                raise read_error
            if shapes.other_lines:
                lines = ", ".join(str(chunk.first_line - 1 + i) for i in shapes.other_lines)
                self.cur.execute(f"DELETE FROM {rows} WHERE _line IN ({lines})")
        finally:
            shaping.exception()  # never leave the shape thread reading a deleted file
        return shapes.other_lines

    def _check(self, rows: str, src: str) -> tuple[int, bool]:
        """Step 2's verdict on the staged rows: their number and whether some row has
        tokens but no cost (to price at commit), or NotClean with every reason (and how
        many rows have it)."""
        n, dups, problems, secret, unpriced = self.cur.execute(
            # duplicates by key hash: a (negligible) collision only sends the chunk to
            # the exact path, which decides
            f"SELECT count(*), count(*) - count(DISTINCT _h), "
            f"list(_problem) FILTER (WHERE _problem IS NOT NULL), "
            f"count(*) FILTER (WHERE _maybe_secret), "
            f"count(*) FILTER (WHERE cost_usd IS NULL AND (prompt_tokens IS NOT NULL "
            f"OR completion_tokens IS NOT NULL)) FROM {rows}").fetchall()[0]
        if not problems and not dups:
            if secret:  # redact the few rows that may hold a credential, in place
                redact_flagged(self.cur, rows, self._row_types, "_maybe_secret")
            return int(n), bool(unpriced)
        counts = {name: 0 for name, _ in _PROBLEMS}
        for name in problems or ():
            counts[name] += 1
        counts[_DUPLICATES] = dups
        bad = [f"{name}: {k}" for name, k in counts.items() if k]
        if counts[_WRONG_TYPE]:  # name the first field of the wrong JSON type
            bad[0] = self._diagnose(src) or bad[0]
        raise NotClean("; ".join(bad))

    def pipeline(self, items: Iterator[Chunk | Problem]
                 ) -> Iterator[tuple[Chunk | Problem, Prepared | None]]:
        """``items`` (chunks of one input, or problems), each chunk with its
        :class:`Prepared` (None for a problem), in input order.

        A feeder thread reads the chunks and hands each to one of :data:`PREPARERS`
        threads, so chunks are prepared side by side while the caller commits (measured:
        with one preparer the committer waited for it, ~1.35 of 2 cores busy). At most
        :data:`IN_FLIGHT` chunks are read and not yet handed back finished (the caller is
        done with an item when it asks for the next one). A staged table the caller did
        not commit is dropped by :meth:`discard`, or here on early exit.
        """
        slots = threading.Semaphore(IN_FLIGHT)
        out: queue.Queue[object] = queue.Queue()
        stop = threading.Event()
        pool = ThreadPoolExecutor(PREPARERS, thread_name_prefix="evalatlas-prepare")

        def feed() -> None:
            try:
                while True:
                    slots.acquire()
                    if stop.is_set():
                        return
                    item = next(items, _DONE)
                    if item is _DONE:
                        break
                    job = (pool.submit(contextvars.copy_context().run, self.prepare, item)
                           if isinstance(item, Chunk) else None)
                    out.put((item, job))
                out.put(_DONE)
            except BaseException as exc:  # handed to the caller, raised there
                out.put(exc)

        # The read limits are a ContextVar: the threads run in copies of this context.
        feeder = threading.Thread(target=contextvars.copy_context().run, args=(feed,),
                                  name="evalatlas-fast-jsonl", daemon=True)
        feeder.start()
        try:
            while True:
                got = out.get()
                if got is _DONE:
                    return
                if isinstance(got, BaseException):
                    raise got
                item, job = cast("tuple[Chunk | Problem, Future[Prepared] | None]", got)
                yield item, (job.result() if job is not None else None)
                slots.release()
        finally:
            stop.set()
            slots.release()
            feeder.join()
            while not out.empty():
                left = out.get_nowait()
                if isinstance(left, tuple) and left[1] is not None:
                    with contextlib.suppress(BaseException):
                        self.discard(left[1].result())
            pool.shutdown(wait=True)
            close = getattr(items, "close", None)
            if close is not None:
                close()

    # -- committing side ---------------------------------------------------------------
    def insert(self, prep: Prepared, batch_id: int) -> None:
        """Add the staged episodes to the open group (opening one as batch ``batch_id``);
        :meth:`flush` writes the group in one transaction, which the caller does after a
        chunk that :attr:`~evalatlas.adapters.jsonl_stream.Chunk.closes` a row group and
        before anything else writes. Raise NotClean (the group unchanged) when a key was
        already used by an earlier chunk.

        Why the write waits for the group's last chunk: a transaction sees only the
        tables committed before it began, and the preparing threads create each chunk's
        table while the one before is being written."""
        rows = prep.table
        assert rows is not None
        group = self.group
        earlier = " UNION ALL ".join(["SELECT h FROM _fast_seen", *(
            f"SELECT _h FROM {p.table}" for p in (group.preps if group else ()))])
        dup = self.con.execute(f"SELECT count(*) FROM {rows} s JOIN ({earlier}) f(h) "
                               "ON s._h = f.h").fetchall()[0][0]
        if dup:
            raise NotClean(f"duplicate trajectory_id with an earlier chunk: {dup}")
        if group is None:
            group = self.group = Group(batch_id)
        group.preps.append(prep)
        group.n += prep.n
        group.unpriced = group.unpriced or prep.unpriced

    def flush(self) -> Group | None:
        """Write the open group and its batch row in one transaction (None: no group was
        open); drop its staged chunks. GroupLost when the write failed (rolled back)."""
        group, con = self.group, self.con
        if group is None:
            return None
        try:
            con.execute("BEGIN TRANSACTION")
            for prep in group.preps:
                rows = prep.table
                if self._replaces:
                    con.execute("DELETE FROM episodes WHERE (experiment_id, trajectory_id) IN "
                                f"(SELECT (experiment_id, trajectory_id) FROM {rows})")
                con.execute(f"""INSERT INTO episodes BY NAME
                    SELECT s.* EXCLUDE (_line, _problem, _maybe_secret, _h),
                      coalesce(s.usage_model, x.llm_model) AS llm_model,
                      {_sql_str(self.source)} AS source_file,
                      {int(group.batch_id)} AS ingest_batch
                    FROM {rows} s
                    LEFT JOIN (SELECT experiment_id, llm_model FROM experiments) x
                      USING (experiment_id)""")
                con.execute(f"INSERT INTO _fast_seen SELECT _h, _line FROM {rows}")
            if group.unpriced:  # the insert's join already set each row's model
                complete_batch(self.store, group.batch_id, [])
            con.execute(
                "INSERT INTO ingest_batches VALUES (?, now(), now(), 0, ?, 0, 0, ?)",
                [group.batch_id, group.n, [self.source]])
            con.execute("COMMIT")
        except Exception as exc:
            lost = self._lose(exc)
            interrupts.reraise(exc)  # Ctrl-C inside a query: stop, do not redo the group
            raise lost from exc
        except BaseException as exc:  # interrupted: rolled back, as a kill would leave it
            self._lose(exc)
            raise
        self.group = None
        for prep in group.preps:
            self.discard(prep)
        return group

    def _lose(self, exc: BaseException) -> GroupLost:
        group = self.group
        self._rollback()
        assert group is not None
        for prep in group.preps:
            self.discard(prep)
        return GroupLost(str(exc), [p.chunk for p in group.preps])

    def _rollback(self) -> None:
        self.group = None
        with contextlib.suppress(duckdb.Error):  # none open when BEGIN itself failed
            self.con.execute("ROLLBACK")

    def discard(self, prep: Prepared) -> None:
        """Drop the chunk's staged rows (committed, or going through the exact path)."""
        if prep.table is not None:
            self.con.execute(f"DROP TABLE IF EXISTS {prep.table}")
            prep.table = None

    def earlier_lines(self, keys: list[tuple[str, str, int]]) -> dict[tuple[str, str], int]:
        """For keys of an exact-path chunk: the first line of those an earlier chunk of
        this file already used (checked against the stored rows, so a hash collision
        cannot invent a duplicate)."""
        if not keys:
            return {}
        import pyarrow as pa

        tbl = pa.table({"experiment_id": [k[0] for k in keys],
                        "trajectory_id": [k[1] for k in keys]})
        self.con.register("_fast_keys", tbl)
        try:
            rows = self.con.execute(f"""
                SELECT k.experiment_id, k.trajectory_id, min(f.line) FROM _fast_keys k
                JOIN _fast_seen f ON {key_hash('k.')} = f.h
                JOIN episodes e ON e.experiment_id = k.experiment_id
                  AND e.trajectory_id = k.trajectory_id AND e.source_file = ?
                GROUP BY ALL""", [self.source]).fetchall()
        finally:
            self.con.unregister("_fast_keys")
        return {(r[0], r[1]): int(r[2]) for r in rows}

    def remember(self, keys: list[tuple[str, str, int]]) -> None:
        """Record the episode keys an exact-path chunk stored, with their lines."""
        if not keys:
            return
        import pyarrow as pa

        tbl = pa.table({"experiment_id": [k[0] for k in keys],
                        "trajectory_id": [k[1] for k in keys],
                        "line": [k[2] for k in keys]})
        self.con.register("_fast_keys", tbl)
        try:
            self.con.execute(f"INSERT INTO _fast_seen SELECT {key_hash()}, "
                             "line FROM _fast_keys")
        finally:
            self.con.unregister("_fast_keys")
