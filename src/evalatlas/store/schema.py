"""DuckDB schema of the store. Column names are the record contract's, flattened.

Public: users query these tables directly (``duckdb evalatlas.duckdb``) and other
modules write SQL against them, so changes here are schema migrations
(bump :data:`SCHEMA_VERSION`).

- ``experiments``: one row per ExperimentRecord; ``labels``/``extra`` are JSON.
- ``episodes``: one row per EpisodeRecord; usage is flattened (``prompt_tokens`` ...
  ``cost_usd``, ``cost_source``); ``llm_model`` is the usage model, else the agent's;
  ``scores``/``extra`` are JSON objects (``(scores->>'$.correctness')``).
- ``measurements``: one row per benchmark per episode.
- ``quarantine``: rejected input, with file, line, record, field and reason.
- ``ingest_batches``: one row per committed batch.
- every record table has ``format_version`` (the record contract's version, see
  :data:`evalatlas.records.models.FORMAT_VERSION`); ``experiments.published_metrics``
  holds the source's own reported numbers (JSON list of ``PublishedMetric``).
- ``files``: one row per input file ingested (resolved path, size, mtime, SHA-256), so
  an unchanged file is skipped on re-ingest.

Keys (see :data:`KEYS`) are unique by construction: every write deletes the rows with
the incoming keys, then inserts, in one transaction.
"""

from __future__ import annotations

SCHEMA_VERSION = 2

KEYS: dict[str, tuple[str, ...]] = {
    "experiments": ("experiment_id",),
    "episodes": ("experiment_id", "trajectory_id"),
    "measurements": ("experiment_id", "trajectory_id", "benchmark"),
    "quarantine": ("problem_key",),
}
"""Logical keys. Not declared as PRIMARY KEY: DuckDB's ART indexes made 1M-row upserts
~5x slower and tripled memory; the store upserts by delete-then-insert on these keys
inside the batch transaction instead (measured, see BENCHMARKS.md)."""

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR
);

CREATE TABLE IF NOT EXISTS experiments (
    experiment_id VARCHAR,
    experiment_name VARCHAR,
    timestamp DOUBLE,
    framework_name VARCHAR,
    framework_version VARCHAR,
    agent_id VARCHAR,
    agent_name VARCHAR,
    agent_config_type VARCHAR,
    llm_model VARCHAR,
    agent JSON,
    benchmark_name VARCHAR,
    benchmark_version VARCHAR,
    subset_name VARCHAR,
    subset_n_tasks BIGINT,
    subset_filter VARCHAR,
    investigator_llm_config JSON,
    labels JSON,
    extra JSON,
    source_file VARCHAR,
    ingest_batch BIGINT,
    published_metrics JSON,
    format_version INTEGER
);

CREATE TABLE IF NOT EXISTS episodes (
    experiment_id VARCHAR,
    trajectory_id VARCHAR,
    task_id VARCHAR,
    task_version_hash VARCHAR,
    attempt INTEGER,
    seed BIGINT,
    split VARCHAR,
    task_description VARCHAR,
    tool_names VARCHAR[],
    success BOOLEAN,
    reward DOUBLE,
    status VARCHAR,
    error_type VARCHAR,
    error_message VARCHAR,
    n_steps BIGINT,
    n_agent_steps BIGINT,
    n_env_steps BIGINT,
    wall_time_s DOUBLE,
    timestamp DOUBLE,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    total_tokens BIGINT,
    cached_tokens BIGINT,
    cache_creation_tokens BIGINT,
    reasoning_tokens BIGINT,
    cost_usd DOUBLE,
    cost_source VARCHAR,
    n_llm_calls BIGINT,
    usage_model VARCHAR,
    llm_model VARCHAR,
    judge_usage JSON,
    scores JSON,
    input_text VARCHAR,
    output_text VARCHAR,
    expected_text VARCHAR,
    retrieved_sources VARCHAR[],
    expected_sources VARCHAR[],
    verifier JSON,
    findings JSON,
    investigation_metadata JSON,
    extra JSON,
    source_file VARCHAR,
    ingest_batch BIGINT,
    format_version INTEGER,
    outcome_source VARCHAR
);

CREATE TABLE IF NOT EXISTS measurements (
    experiment_id VARCHAR,
    trajectory_id VARCHAR,
    benchmark VARCHAR,
    module VARCHAR,
    class_name VARCHAR,
    function VARCHAR,
    params VARCHAR,
    unit VARCHAR,
    baseline_samples DOUBLE[],
    agent_samples DOUBLE[],
    oracle_samples DOUBLE[],
    baseline_time DOUBLE,
    agent_time DOUBLE,
    oracle_time DOUBLE,
    speedup_agent DOUBLE,
    speedup_oracle DOUBLE,
    advantage DOUBLE,
    valid BOOLEAN,
    fallback_to_baseline BOOLEAN,
    extra JSON,
    source_file VARCHAR,
    ingest_batch BIGINT,
    format_version INTEGER
);

CREATE TABLE IF NOT EXISTS quarantine (
    problem_key VARCHAR,
    source_file VARCHAR,
    line BIGINT,
    record VARCHAR,
    field VARCHAR,
    reason VARCHAR,
    ingest_batch BIGINT,
    rejected_at TIMESTAMP
);

CREATE TABLE IF NOT EXISTS ingest_batches (
    batch_id BIGINT PRIMARY KEY,
    started_at TIMESTAMP,
    committed_at TIMESTAMP,
    n_experiments BIGINT,
    n_episodes BIGINT,
    n_measurements BIGINT,
    n_rejected BIGINT,
    sources VARCHAR[]
);

CREATE TABLE IF NOT EXISTS files (
    path VARCHAR PRIMARY KEY,
    size BIGINT,
    mtime_ns BIGINT,
    sha256 VARCHAR,
    ingested_at TIMESTAMP
);
"""

DICTIONARY_COLUMNS: dict[str, tuple[str, ...] | None] = {
    "meta": None,
    "experiments": None,
    "files": None,
    "episodes": ("experiment_id", "split", "status", "error_type", "cost_source",
                 "usage_model", "llm_model", "source_file", "outcome_source"),
    "measurements": ("experiment_id", "benchmark", "module", "class_name", "unit",
                     "source_file"),
    "quarantine": ("source_file", "field"),
}
"""Text columns a file store declares ``USING COMPRESSION dictionary`` (None: every text
column of the table), :func:`file_store_ddl`: a run's id, its file, a status, a
category or a model name, which repeat across rows by construction, and the text of the
small tables (one row per experiment, per input file; ``meta``).

Why: at each checkpoint DuckDB estimates every compression method for every column
segment and keeps the smallest. FSST's estimate costs ~0.5 ms a column even for one row
(it builds a symbol table), and it never wins where values repeat: a dictionary stores
each distinct value once (duckdb 1.5.5: 10 text columns of 4,000 rows of 7 values
committed in 11.7 ms with the estimates, 6.2 ms declared dictionary, the same store
bytes; an Inspect log's ingest 166 -> 156 ms, most of it this commit). Columns of
free text or ids that are distinct by construction (``trajectory_id``, ``task_id``,
``input_text``, ``extra``) keep DuckDB's choice, where FSST does win. A value too long
for a dictionary segment is stored uncompressed (DuckDB falls back; tested). A lake
writes Parquet and keeps :data:`DDL`; a store created before this keeps its tables."""


def file_store_ddl() -> str:
    """:data:`DDL` as a file store runs it: the columns of :data:`DICTIONARY_COLUMNS`
    declared ``name TYPE USING COMPRESSION dictionary``; the same tables, columns and
    types (:func:`declared_types` reads :data:`DDL`)."""
    out: list[str] = []
    table: str | None = None
    for line in DDL.splitlines():
        if line.startswith("CREATE TABLE IF NOT EXISTS "):
            table = line.split()[5]
        parts = line.strip().rstrip(",").split(None, 2)
        if table in DICTIONARY_COLUMNS and len(parts) >= 2 and parts[1] in ("VARCHAR", "JSON"):
            names = DICTIONARY_COLUMNS[table]
            if names is None or parts[0] in names:
                indent = line[:len(line) - len(line.lstrip())]
                rest = line.strip()[len(parts[0]) + 1 + len(parts[1]):]
                line = f"{indent}{parts[0]} {parts[1]} USING COMPRESSION dictionary{rest}"
        out.append(line)
    return "\n".join(out)


EXPERIMENT_COLUMNS = [
    "experiment_id", "experiment_name", "timestamp", "framework_name", "framework_version",
    "agent_id", "agent_name", "agent_config_type", "llm_model", "agent", "benchmark_name",
    "benchmark_version", "subset_name", "subset_n_tasks", "subset_filter",
    "investigator_llm_config", "labels", "extra", "source_file", "ingest_batch",
    "published_metrics", "format_version",
]

EPISODE_COLUMNS = [
    "experiment_id", "trajectory_id", "task_id", "task_version_hash", "attempt", "seed",
    "split", "task_description", "tool_names", "success", "reward", "status", "error_type",
    "error_message", "n_steps", "n_agent_steps", "n_env_steps", "wall_time_s", "timestamp",
    "prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
    "cache_creation_tokens", "reasoning_tokens", "cost_usd", "cost_source", "n_llm_calls",
    "usage_model", "llm_model", "judge_usage", "scores", "input_text", "output_text",
    "expected_text", "retrieved_sources", "expected_sources", "verifier", "findings",
    "investigation_metadata", "extra", "source_file", "ingest_batch", "format_version",
    "outcome_source",
]

MEASUREMENT_COLUMNS = [
    "experiment_id", "trajectory_id", "benchmark", "module", "class_name", "function",
    "params", "unit", "baseline_samples", "agent_samples", "oracle_samples", "baseline_time",
    "agent_time", "oracle_time", "speedup_agent", "speedup_oracle", "advantage", "valid",
    "fallback_to_baseline", "extra", "source_file", "ingest_batch", "format_version",
]

MIGRATIONS = """
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS published_metrics JSON;
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS format_version INTEGER;
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS format_version INTEGER;
ALTER TABLE measurements ADD COLUMN IF NOT EXISTS format_version INTEGER;
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS outcome_source VARCHAR;
"""
"""Columns added after a table was first created, appended at its end (the column lists
above end the same way, so old and new stores have one column order). Idempotent.
``published_metrics``: the source's own reported numbers (a JSON list of
PublishedMetric); ``format_version``: the record contract version of each row;
``episodes.outcome_source`` (issue 10): 'harness', 'judge' or 'judge:<model>', NULL
in rows of older stores, where a NULL beside a known reward means 'harness'."""

FLATTENED: dict[str, dict[str, str]] = {
    "experiments": {
        "agent.agent_id": "agent_id", "agent.name": "agent_name",
        "agent.config_type": "agent_config_type", "agent.llm_model": "llm_model",
        "benchmark_subset.name": "subset_name", "benchmark_subset.n_tasks": "subset_n_tasks",
        "benchmark_subset.filter": "subset_filter",
    },
    "episodes": {
        "usage.prompt_tokens": "prompt_tokens", "usage.completion_tokens": "completion_tokens",
        "usage.total_tokens": "total_tokens", "usage.cached_tokens": "cached_tokens",
        "usage.cache_creation_tokens": "cache_creation_tokens",
        "usage.reasoning_tokens": "reasoning_tokens", "usage.total_cost_usd": "cost_usd",
        "usage.cost_source": "cost_source", "usage.n_llm_calls": "n_llm_calls",
        "usage.model": "usage_model",
    },
    "measurements": {},
}
"""Record fields (``parent.field`` for a nested record's) stored in a column of another
name. Every other field of the record contract (:mod:`evalatlas.records.spec`) is
stored in the column of its own name, a nested record or an array of them as JSON; a
nested record with every field flattened here (``usage``) has no column of its own.
``agent_name`` holds the agent's display name (``AgentInfo.display_name``), which
falls back to ``agent.name``'s defaults. ``tests/store/test_contract.py`` checks the
tables against the contract through this map."""

STORE_COLUMNS: dict[str, tuple[str, ...]] = {
    "experiments": ("source_file", "ingest_batch"),
    "episodes": ("llm_model", "source_file", "ingest_batch"),
    "measurements": ("source_file", "ingest_batch"),
}
"""Columns the store fills, not a record field: the input file, the batch and, for
episodes, the model (the usage model, else the experiment agent's)."""


def declared_types(table: str) -> dict[str, str]:
    """Each column of ``table`` with its DuckDB type, in column order, read off
    :data:`DDL` and :data:`MIGRATIONS` (no database needed)."""
    cols = {"experiments": EXPERIMENT_COLUMNS, "episodes": EPISODE_COLUMNS,
            "measurements": MEASUREMENT_COLUMNS, "quarantine": QUARANTINE_COLUMNS}[table]
    body = DDL.split(f"CREATE TABLE IF NOT EXISTS {table} (", 1)[1].split(");", 1)[0]
    types = {}
    for line in body.splitlines():
        parts = line.strip().rstrip(",").split(None, 1)
        if len(parts) == 2:
            types[parts[0]] = parts[1]
    marker = f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS "
    for line in MIGRATIONS.splitlines():
        if line.startswith(marker):
            name, typ = line[len(marker):].rstrip(";").split(None, 1)
            types[name] = typ
    return {c: types[c] for c in cols}


QUARANTINE_COLUMNS = [
    "problem_key", "source_file", "line", "record", "field", "reason", "ingest_batch",
    "rejected_at",
]
