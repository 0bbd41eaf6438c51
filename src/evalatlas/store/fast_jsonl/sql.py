"""The fast path's SQL, generated from its view of the contract (:mod:`.contract`).

- :data:`PLAIN_COLUMNS` / :data:`READ_COLUMNS`: the ``columns`` of DuckDB's typed
  ``read_json`` of a chunk msgspec vouched for, or of one it did not (then every scalar
  is read as JSON text and its JSON type checked from the text, :func:`scalar`);
- :func:`select_rows`: a staged chunk's episodes rows (mirrors
  :func:`evalatlas.store.rows.episode_row`, with the models' derivations) and per row
  the first problem (:data:`PROBLEMS`) that sends the chunk to the exact path;
- :func:`free_flags` / :func:`stage_flags`: cheap upper bounds for depth and overflow,
  and the list and score item checks of the slow staging;
- :func:`key_hash`: the 64-bit hash of an episode key.
"""

from __future__ import annotations

import evalatlas.store.fast_jsonl.contract as c


def sql_str(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def sql_list(items: list[str]) -> str:
    """A SQL list of string literals."""
    return "[" + ", ".join(sql_str(x) for x in items) + "]"


def key_hash(prefix: str = "") -> str:
    """SQL for a 64-bit hash of an episode key ``(experiment_id, trajectory_id)``: DuckDB's
    ``hash`` of the key's MD5 in hex.

    Why not DuckDB's ``hash(a, b)`` alone: its 64-bit string hash (xor and multiply per
    8-byte block, so a change spreads only to higher bits) collides heavily on short,
    regular ids (1M keys like ``task-00896_c0ep4`` give 864,000 distinct values), and a
    collision sends the chunk through the exact path (correct, but ~30x slower). Over
    the hex MD5 every 8-byte block is uniformly random (32 bits each), so the result
    behaves like a random 64-bit value (a chance collision among 10M keys: ~3 in a
    million; none among 10M ids of four regular shapes, measured). Why not
    ``md5_number_lower``, 64 bits of the same MD5 (used until jsonl5): DuckDB computes
    it at ~2.5x the cost of the hex digest (29 vs 12 ms per 61,440 keys, duckdb 1.5.5;
    ``hash`` adds 4). 64 bits take 8 bytes less per key than all 128 (80 MB at 10M
    episodes); a collision is still only a slow path, never a wrong row, because
    :meth:`~evalatlas.store.fast_jsonl.commit.Committer.earlier_lines` checks the stored
    keys.
    """
    return f"hash(md5({prefix}experiment_id || chr(0) || {prefix}trajectory_id))"


def scalar(raw: str, kind: str) -> tuple[str, str]:
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


RECAST = (*c.STRING_LISTS, *c.FINITE_MAPS)
"""Containers the slow staging casts itself (lists of strings, the scores map)."""


def _typed_columns() -> tuple[str, str, str]:
    """For the typed read: (the ``columns`` argument, the inner select of converted
    values, the outer select of the stage's typed columns plus ``_types_ok``)."""
    cols: dict[str, str] = {}
    inner: list[str] = []
    outer: list[str] = []
    oks: list[str] = []

    def convert(raw: str, name: str, kind: str) -> str:
        value, ok = scalar(raw, kind)
        inner.append(f'{value} AS "{name}"')
        oks.append(f'({raw} IS NULL OR coalesce({ok.format(v=chr(34) + name + chr(34))}, '
                   'false))')
        return f'"{name}"'

    for key, sql_type in c.EPISODE_FIELDS.items():
        if key in c.TOP_SCALARS:
            cols[key] = "JSON"
            outer.append(f"{convert(key, f'_v_{key}', c.TOP_SCALARS[key])} AS {key}")
        elif key in c.STRUCTS:
            cols[key] = "STRUCT(" + ", ".join(f"{k} JSON" for k in c.USAGE_FIELDS) + ")"
            parts = ", ".join(f"{k} := {convert(f'{key}.{k}', f'_v_{key}_{k}', kind)}"
                              for k, kind in c.USAGE_SCALARS.items())
            outer.append(f"CASE WHEN {key} IS NULL THEN NULL "
                         f"ELSE struct_pack({parts}) END AS {key}")
        else:
            cols[key] = sql_type
            if key not in RECAST:
                outer.append(key)
    outer.append("(" + " AND ".join(oks) + ") AS _types_ok")
    columns = "{" + ", ".join(f"{sql_str(k)}: {sql_str(t)}" for k, t in cols.items()) + "}"
    return columns, ", ".join(inner), ", ".join(outer)


READ_COLUMNS, CONVERTED, TYPED = _typed_columns()
"""The slow staging's typed read: every scalar as JSON text (see :func:`scalar`)."""
_PLAIN_TYPES = {**c.EPISODE_FIELDS, **{k: "VARCHAR[]" for k in c.STRING_LISTS},
                **{k: "MAP(VARCHAR, DOUBLE)" for k in c.FINITE_MAPS}}
PLAIN_COLUMNS = "{" + ", ".join(f"{sql_str(k)}: {sql_str(t)}"
                                for k, t in _PLAIN_TYPES.items()) + "}"
"""The typed read of a chunk msgspec checked (its coercions can no longer hide anything,
and lists of strings and the scores map are read as such, not re-parsed from text)."""


def _any(conds: list[str]) -> str:
    return " OR ".join(conds)


def _not_finite(path: str) -> str:
    return f"isnan({path}) OR isinf({path})"


def _map_not_finite(col: str) -> str:
    return f"list_bool_or(list_transform(map_values({col}), lambda x: isnan(x) OR isinf(x)))"


WRONG_TYPE = "a value of the wrong JSON type"
DUPLICATES = "duplicate trajectory_id"
PROBLEMS: list[tuple[str, str]] = [
    (WRONG_TYPE, "NOT _types_ok"),
    ("missing required field", _any([f"{k} IS NULL" for k in c.REQUIRED])),
    ("non-finite number", _any([_not_finite(p) for p in c.FINITE]
                               + [_map_not_finite(m) for m in c.FINITE_MAPS])),
    ("negative value", _any([f"{p} < 0" for p in c.NON_NEGATIVE])),
    ("unsafe trajectory_id", """trajectory_id = '' OR trajectory_id = '.'
        OR regexp_matches(trajectory_id,
                          '[/\\\\\\x00-\\x1f\\x7f]|^[A-Za-z]:|\\.\\.|\\.archived_')
        OR strlen(trajectory_id) > 255"""),
    ("unknown status", "status IS NOT NULL AND status NOT IN ("
                       + ", ".join(sql_str(s) for s in c.STATUSES) + ")"),
    ("success contradicts reward", "success IS NOT NULL AND success <> (reward > 0)"),
    ("unknown cost_source", _any([
        f"({s}.cost_source IS NOT NULL AND NOT regexp_full_match({s}.cost_source, "
        f"{c.COST_SOURCE}))" for s in c.STRUCTS])),
    ("reward outside [0, 1]", "reward < 0 OR reward > 1"),
    ("attempt too large", "attempt > 2147483647"),
    ("a list with a non-string item", "_bad_list"),
    ("a score that is not a number", "_bad_scores"),
    ("maybe nested too deep", "_maybe_deep"),
    ("maybe a number too large for a double", "_maybe_huge"),
    ("unknown format_version",
     f"format_version < 1 OR format_version > {c.FORMAT_VERSION}"),
]
"""Why a staged record needs the exact path (name, SQL over the typed read's columns).
Each row gets the first that holds (:data:`PROBLEM`), computed in the same query that
builds its episodes row, so a chunk is materialised once. The required keys, finite
numbers, bounds, statuses and the ``cost_source`` pattern come from the contract; the
rest are the models' validators (safe ids, ``success = reward > 0``) and the store's
limits (the ``attempt`` column is an INTEGER, depth and overflow bounds)."""

PROBLEM = ("CASE " + " ".join(f"WHEN ({cond}) THEN {sql_str(name)}"
                              for name, cond in PROBLEMS) + " END AS _problem")


def usage_json(col: str) -> str:
    """A usage STRUCT as the JSON the exact path stores, with UsageSummary's
    derivations: total = prompt + completion when absent; a reported cost."""
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


SET_AT_COMMIT = ("llm_model", "source_file", "ingest_batch")
"""Episode columns the commit fills (the experiment's model; the source and batch)."""


def select_rows(source: str) -> str:
    """The episodes-table row for each record of ``source`` (a typed read, see
    :meth:`~evalatlas.store.fast_jsonl.prepare.Preparer.prepare`; mirrors
    :func:`evalatlas.store.rows.episode_row`), by column name, without
    :data:`SET_AT_COMMIT`; ``_line`` kept for duplicates, ``_problem`` for the checks."""
    return f"""
    SELECT s.experiment_id, s.trajectory_id, s.task_id, s.task_version_hash,
      TRY_CAST(s.attempt AS INTEGER) AS attempt, s.seed, s.split, s.task_description,
      coalesce(s.tool_names, []::VARCHAR[]) AS tool_names, s.reward > 0 AS success,
      s.reward, coalesce(s.status, {sql_str(c.DEFAULTS["status"])}) AS status,
      s.error_type, s.error_message,
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
      {usage_json("s.judge_usage")} AS judge_usage,
      to_json(coalesce(s.scores, MAP {{}}::MAP(VARCHAR, DOUBLE))) AS scores,
      s.input_text, s.output_text, s.expected_text, s.retrieved_sources,
      s.expected_sources, s.verifier, s.findings, s.investigation_metadata,
      coalesce(s.extra, '{{}}'::JSON) AS extra,
      TRY_CAST(coalesce(s.format_version, {c.FORMAT_VERSION}) AS INTEGER) AS format_version,
      CASE WHEN s.reward IS NOT NULL THEN 'harness' END AS outcome_source,
      s._line, {PROBLEM}
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


def free_flags(max_depth: int, huge_in: tuple[str, ...] = c.FREE) -> str:
    """Cheap upper bounds for depth and overflow in the free-form JSON (the exact path
    decides when a bound is hit). Openers are only counted in rows whose free-form text
    is longer than ``max_depth`` (shorter text cannot nest deeper): counting them in
    every row cost a fifth of the chunk's read. A ``CASE``, not an ``AND``: DuckDB
    evaluates both sides of an ``AND`` in a select list for every row (measured: the
    count then cost ~30 ms of a 61,440-line chunk whose text is short; ~0 with the
    ``CASE``, duckdb 1.5.5). ``huge_in``: the columns whose text may hold a number no
    double holds (msgspec has ruled it out in the others)."""
    deep = " + ".join(_openers(col) for col in c.FREE)
    size = " + ".join(f"coalesce(strlen({col}::VARCHAR), 0)" for col in c.FREE)
    text = " || ".join(f"coalesce({col}::VARCHAR, '')" for col in huge_in)
    return f"""CASE WHEN ({size}) > {max_depth} THEN ({deep}) > {max_depth} ELSE false END
        AS _maybe_deep,
      regexp_matches({text}, '{_HUGE}') AS _maybe_huge"""


def stage_flags(max_depth: int) -> str:
    """Per-row flags computed from the JSON text DuckDB kept: lists of strings only,
    scores numbers or null, and :func:`free_flags`."""
    lists = " OR ".join(f"NOT coalesce(regexp_full_match({col}::VARCHAR, '{_STRINGS}'), true)"
                        for col in c.STRING_LISTS)
    scores = " OR ".join(f"NOT coalesce(regexp_full_match({col}::VARCHAR, '{_SCORES}'), true)"
                         for col in c.FINITE_MAPS)
    return f"""({lists}) AS _bad_list,
      ({scores}) AS _bad_scores,
      {free_flags(max_depth)}"""
