"""DuckDB-native ingest of large, clean JSONL files of episode records.

Why: validating one pydantic model per line runs at ~10k records/s, while DuckDB's own
``read_json`` parses ~300k/s. For a file that is entirely clean, the checks the record
contract makes can be expressed in SQL over DuckDB's typed parse, so the file goes
straight from disk to the store. The moment anything is not provably clean the fast path
gives up and the exact per-record path (:mod:`evalatlas.adapters.jsonl`) ingests the
file instead, with its precise, located errors. Both paths store the same rows; the
tests check this on the same input.

Give-up conditions (any one): a key outside the record contract at the top level or in
``usage`` / ``judge_usage`` / ``verifier`` (this also catches cube's EEE-aligned alias
names, ``_type`` keys, and experiment or measurement lines, all of which the exact path
handles); malformed JSON or a value DuckDB cannot cast to the contract's type; blank
lines; a missing required field or a null reward (the exact path tells an unknown outcome
from a missing key); NaN or infinity; a negative count; an unsafe
trajectory id; an unknown status; ``success`` contradicting ``reward > 0``; a duplicate
key within the file.

DuckDB's JSON reader is not a pydantic validator: it casts a JSON number to a string
column ("5" for ``tool_names: [5]``) where pydantic would refuse; that is the one known
leniency of this path.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import duckdb

from evalatlas.records.models import FORMAT_VERSION
from evalatlas.store.costs import complete_batch
from evalatlas.store.db import Store
from evalatlas.store.redaction import redact_batch_in_place

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
    "tool_names": "VARCHAR[]", "success": "BOOLEAN", "reward": "DOUBLE",
    "error_type": "VARCHAR", "n_steps": "BIGINT", "n_agent_steps": "BIGINT",
    "n_env_steps": "BIGINT", "wall_time_s": "DOUBLE", "usage": _USAGE_STRUCT,
    "trajectory_id": "VARCHAR", "timestamp": "DOUBLE", "verifier": "JSON",
    "findings": "JSON", "attempt": "BIGINT", "status": "VARCHAR", "error_message": "VARCHAR",
    "scores": "MAP(VARCHAR, DOUBLE)", "input_text": "VARCHAR", "output_text": "VARCHAR",
    "expected_text": "VARCHAR", "retrieved_sources": "VARCHAR[]",
    "expected_sources": "VARCHAR[]", "judge_usage": _USAGE_STRUCT,
    "investigation_metadata": "JSON", "extra": "JSON", "format_version": "BIGINT",
}
_VERIFIER_KEYS = {"ref", "source"}
_STATUSES = ("completed", "error", "timeout", "max_steps", "cancelled", "incomplete",
             "skipped")


class NotClean(Exception):
    """The file is not provably clean; use the exact path."""


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _count_lines(path: Path) -> int:
    """Number of lines (a last line without a newline counts). Blank or whitespace-only
    lines show up later as fewer JSON objects than lines, which declines the fast path."""
    if path.stat().st_size == 0:
        return 0
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        n = mm[:].count(b"\n") if len(mm) < (1 << 20) else _count_newlines(mm)
        return n if mm[-1:] == b"\n" else n + 1


def _count_newlines(mm: mmap.mmap, chunk: int = 64 * 1024 * 1024) -> int:
    n = 0
    for start in range(0, len(mm), chunk):
        n += mm[start:start + chunk].count(b"\n")
    return n


_NESTED = ("usage", "judge_usage", "verifier")
_COST_SOURCE = "'(reported|computed)(: .*)?'"
"""RE2 full match of a valid ``cost_source`` (the record contract's pattern)."""


def _check_keys(con: duckdb.DuckDBPyConnection, src: str) -> None:
    """One scan collecting every key at the levels the contract closes (top, usage,
    judge_usage, verifier); any key outside it declines the fast path.

    The nested objects are extracted with one ``json_extract`` (one parse per line) and
    their key lists unnested side by side, so DISTINCT sees a few dozen rows.
    """
    paths = ", ".join(f"'$.{f}'" for f in _NESTED)
    keys = ", ".join(f"unnest(json_keys(n[{i + 1}])) AS {f}" for i, f in enumerate(_NESTED))
    rows = con.execute(f"""
        SELECT DISTINCT unnest(json_keys(json)) AS top, {keys}
        FROM (SELECT json, json_extract(json, [{paths}]) AS n
              FROM read_json_objects({src}, format='newline_delimited'))
    """).fetchall()
    allowed = {"top": set(_EPISODE_FIELDS), "usage": set(_USAGE_FIELDS),
               "judge_usage": set(_USAGE_FIELDS), "verifier": _VERIFIER_KEYS}
    scopes = ("top", *_NESTED)
    for row in rows:
        for scope, key in zip(scopes, row, strict=True):
            if key is not None and key not in allowed[scope]:
                raise NotClean(f"key {key!r} in {scope} is not part of the fast path's "
                               "contract")


_CHECKS = f"""
    SELECT
      count(*) FILTER (WHERE experiment_id IS NULL OR task_id IS NULL OR reward IS NULL
                       OR trajectory_id IS NULL) AS missing_required,
      count(*) FILTER (WHERE isnan(reward) OR isinf(reward) OR isnan(wall_time_s)
                       OR isinf(wall_time_s) OR isnan(timestamp) OR isinf(timestamp)
                       OR isnan(usage.total_cost_usd) OR isinf(usage.total_cost_usd)
                       OR list_bool_or(list_transform(map_values(scores),
                                                      lambda x: isnan(x) OR isinf(x))))
        AS non_finite,
      count(*) FILTER (WHERE n_steps < 0 OR n_agent_steps < 0 OR n_env_steps < 0
                       OR wall_time_s < 0 OR attempt < 0 OR usage.prompt_tokens < 0
                       OR usage.completion_tokens < 0 OR usage.total_tokens < 0
                       OR usage.cached_tokens < 0 OR usage.cache_creation_tokens < 0
                       OR usage.reasoning_tokens < 0 OR usage.total_cost_usd < 0
                       OR usage.n_llm_calls < 0 OR judge_usage.total_cost_usd < 0
                       OR judge_usage.prompt_tokens < 0 OR judge_usage.completion_tokens < 0)
        AS negative,
      count(*) FILTER (WHERE trajectory_id = '' OR trajectory_id = '.'
                       OR contains(trajectory_id, '..')
                       OR regexp_matches(trajectory_id, '[/\\\\\\x00-\\x1f\\x7f]')
                       OR regexp_matches(trajectory_id, '^[A-Za-z]:')
                       OR contains(trajectory_id, '.archived_')
                       OR octet_length(encode(trajectory_id)) > 255) AS unsafe_id,
      count(*) FILTER (WHERE status IS NOT NULL AND status NOT IN
                       ({", ".join(_sql_str(s) for s in _STATUSES)})) AS bad_status,
      count(*) FILTER (WHERE success IS NOT NULL AND success <> (reward > 0))
        AS success_mismatch,
      count(*) FILTER (WHERE (usage.cost_source IS NOT NULL
                              AND NOT regexp_full_match(usage.cost_source, {_COST_SOURCE}))
                          OR (judge_usage.cost_source IS NOT NULL
                              AND NOT regexp_full_match(judge_usage.cost_source, {_COST_SOURCE})))
        AS bad_cost_source,
      count(*) - count(DISTINCT (experiment_id, trajectory_id)) AS duplicates,
      count(*) FILTER (WHERE format_version < 1 OR format_version > {FORMAT_VERSION})
        AS bad_format_version
    FROM _fast_stage
"""


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


def _select_rows(source: str, batch_id: int) -> str:
    """The episodes-table row for each staged record (mirrors store.rows.episode_row)."""
    return f"""
    SELECT s.experiment_id, s.trajectory_id, s.task_id, s.task_version_hash,
      CAST(s.attempt AS INTEGER), s.seed, s.split, s.task_description,
      coalesce(s.tool_names, []::VARCHAR[]), s.reward > 0, s.reward,
      coalesce(s.status, 'completed'), s.error_type, s.error_message, s.n_steps,
      s.n_agent_steps, s.n_env_steps, s.wall_time_s, s.timestamp,
      s.usage.prompt_tokens, s.usage.completion_tokens,
      coalesce(s.usage.total_tokens, s.usage.prompt_tokens + s.usage.completion_tokens),
      s.usage.cached_tokens, s.usage.cache_creation_tokens, s.usage.reasoning_tokens,
      s.usage.total_cost_usd,
      CASE WHEN s.usage.total_cost_usd IS NOT NULL
           THEN coalesce(s.usage.cost_source, 'reported') END,
      s.usage.n_llm_calls, s.usage.model, coalesce(s.usage.model, x.llm_model),
      {_usage_json("s.judge_usage")},
      to_json(coalesce(s.scores, MAP {{}}::MAP(VARCHAR, DOUBLE))),
      s.input_text, s.output_text, s.expected_text, s.retrieved_sources,
      s.expected_sources, s.verifier, s.findings, s.investigation_metadata,
      coalesce(s.extra, '{{}}'::JSON), {_sql_str(source)}, {int(batch_id)},
      CAST(coalesce(s.format_version, {FORMAT_VERSION}) AS INTEGER),
      CASE WHEN s.reward IS NOT NULL THEN 'harness' END
    FROM _fast_stage s LEFT JOIN experiments x USING (experiment_id)
    """


def try_fast_ingest(store: Store, path: Path, batch_id: int) -> int:
    """Ingest ``path`` as one batch if it is provably clean; return the episode count.

    Raises :class:`NotClean` (nothing written) when the exact path must be used.
    """
    con = store.con
    src = _sql_str(str(path))
    n_lines = _count_lines(path)
    if n_lines == 0:
        raise NotClean("empty file")
    try:
        _check_keys(con, src)
        columns = "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(t)}"
                                  for k, t in _EPISODE_FIELDS.items()) + "}"
        con.execute("DROP TABLE IF EXISTS _fast_stage")
        con.execute(f"""CREATE TEMP TABLE _fast_stage AS SELECT * FROM read_json({src},
            format='newline_delimited', columns={columns}, maximum_object_size=16777216)""")
        checks = con.execute(_CHECKS).fetchone()
        names = ("missing required field", "non-finite number", "negative value",
                 "unsafe trajectory_id", "unknown status", "success contradicts reward",
                 "unknown cost_source", "duplicate trajectory_id",
                 "unknown format_version")
        bad = [f"{name}: {n}" for name, n in zip(names, checks, strict=True) if n]
        if bad:
            raise NotClean("; ".join(bad))
        n = int(con.execute("SELECT count(*) FROM _fast_stage").fetchone()[0])
        if n != n_lines:
            raise NotClean(f"{n_lines} lines but {n} JSON objects (blank lines?)")
        con.execute("BEGIN TRANSACTION")
        try:
            store.clear_quarantine([str(path)])
            con.execute("DELETE FROM episodes WHERE (experiment_id, trajectory_id) IN "
                        "(SELECT (experiment_id, trajectory_id) FROM _fast_stage)")
            con.execute(f"INSERT INTO episodes {_select_rows(str(path), batch_id)}")
            redact_batch_in_place(con, "episodes", batch_id)
            complete_batch(store, batch_id, [])
            con.execute(
                "INSERT INTO ingest_batches VALUES (?, now(), now(), 0, ?, 0, 0, ?)",
                [batch_id, n, [str(path)]])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return n
    except duckdb.Error as exc:
        raise NotClean(f"DuckDB could not read it as clean records: {exc}") from exc
    finally:
        con.execute("DROP TABLE IF EXISTS _fast_stage")
