"""The shape pass: keys and JSON types of every line of a chunk, by DuckDB.

Why: msgspec (:mod:`.checker`) vouches for most chunks cheaply, but cannot say which
field is wrong or pick out experiment records in a mixed file. For a chunk it did not
vouch for, ``json_keys`` and ``json_type`` of every line on a private DuckDB instance
(deep input can invalidate one), grouped (a file has a handful of distinct shapes),
are checked here against :mod:`.contract`: the first offending field is named, and
experiment records and measurements are picked out so they go through the exact path
while the chunk's episodes keep the fast path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

import evalatlas.store.fast_jsonl.contract as c
from evalatlas.store.fast_jsonl.sql import sql_list
from evalatlas.store.fast_jsonl.state import NotClean


def keys_types_problem(keys: list[list[str]], types: list[str | None],
                       paths: list[str] | None = None) -> str | None:
    """Why an episode line with these keys (top and nested closed objects) and these JSON
    types (of ``paths``, by default :data:`~.contract.TYPE_PATHS`) needs the exact path,
    or None."""
    scopes = ("top", *c.NESTED_SPEC)
    for scope, names in zip(scopes, keys, strict=True):
        allowed = c.EPISODE_SPEC if scope == "top" else c.NESTED_SPEC[scope]
        for name in names or ():
            if name not in allowed and not (scope in c.OPEN and name != "_type"):
                where = "" if scope == "top" else f" in {scope}"
                return f"key {name!r}{where} is not part of the fast path's contract"
    if "task_id" not in (keys[0] or ()):
        return "missing required field: task_id"
    for path, t in zip(paths or c.TYPE_PATHS, types, strict=True):
        field_ = path[2:]
        if t is None:
            if field_ in c.REQUIRED:
                return f"missing required field: {field_}"
            continue
        scope, _, leaf = field_.partition(".")
        want = c.NESTED_SPEC[scope][leaf] if leaf else c.EPISODE_SPEC[field_]
        if t not in want:
            return f"{field_} is {t}"
    return None


def shape_sql(src: str, max_object: int, paths: list[str]) -> str:
    """One parse per line: the key lists of the closed objects and the JSON type of
    ``paths``, grouped; line numbers only for lines that may be experiment records or
    measurements (an ``agent`` or ``benchmark`` key, see
    :func:`~.contract.is_other_record`)."""
    return f"""
    SELECT k, t, count(*) AS n,
           list(ordinality) FILTER (WHERE list_contains(k[1], 'agent')
                                    OR list_contains(k[1], 'benchmark')) AS lines
    FROM (SELECT ordinality, json_keys(json, {sql_list(c.KEY_PATHS)}) AS k,
                 json_type(json, {sql_list(paths)}) AS t
          FROM read_json_objects({src}, format='newline_delimited',
                                 maximum_object_size={max_object}) WITH ORDINALITY)
    GROUP BY ALL
    """


@dataclass
class Shapes:
    """What the shape pass found: how many JSON objects, and which lines (1-based in the
    chunk) are not episodes."""

    n_objects: int = 0
    other_lines: list[int] = field(default_factory=list)


def check_shapes(scratch: duckdb.DuckDBPyConnection, src: str, max_object: int,
                 paths: list[str] | None = None) -> Shapes:
    """Run the shape pass; raise NotClean with the first reason, else note which lines
    are experiment records or measurements (told apart as the exact path does)."""
    paths = paths or c.TYPE_PATHS
    rows = scratch.execute(shape_sql(src, max_object, paths)).fetchall()
    out = Shapes()
    for keys, types, n, other in rows:
        out.n_objects += n
        if c.is_other_record(set(keys[0] or ())):
            out.other_lines.extend(other or [])
            continue
        problem = keys_types_problem(keys, types, paths)
        if problem:
            raise NotClean(problem)
    return out
