"""Generator: N synthetic episodes written straight to Parquet by DuckDB (issue 23, scale).

What it writes under ``OUT`` (``--out``)::

    OUT/episodes/data_*.parquet   N rows, exactly the store's ``episodes`` columns and types
    OUT/experiments.parquet       one row per (agent, benchmark, run) that has episodes
    OUT/ingest_batches.parquet    the one batch every row claims (``ingest_batch = 1``)

and, with ``--duckdb FILE``, a file store made by :class:`evalatlas.store.db.Store` (the
store's own DDL) filled with ``INSERT ... SELECT * FROM read_parquet(...)``.

The shape (the issue's "realistic widths"):

- **500 agents x 20,000 tasks**: 4 benchmarks (``bench-0`` .. ``bench-3``) of 5,000 tasks;
  an agent x task *cell* holds **1 to 10 attempts** (``attempt`` 0..9; the counts cycle
  through a fixed permutation of 1..10, 5.5 attempts per cell on average).
- Cells are visited in a scrambled order (``pair = c * 3,141,593 mod 10^7``, a bijection
  of the 10^7 agent x task pairs), so even 1M episodes touch every agent and every task.
  500 x 20,000 cells of 5.5 attempts hold 55M episodes; beyond that the cells are visited
  again as a second *run* (``r1``): one experiment per (agent, benchmark, run), i.e. 2,000
  experiments up to 55M episodes and 4,000 at 100M (a re-run is what a real atlas of
  this size would hold).
- Outcomes follow a Rasch model, P(success) = sigmoid(ability - difficulty), abilities
  evenly spread over [-2, 2] by agent, difficulties uniform on [-3, 3] by task; 1% of
  episodes are harness errors (``status = 'error'``, ``TimeoutError``, a failure) and
  0.2% have no outcome (success and reward NULL). Tokens, cost (``reported``), wall time,
  steps and LLM calls are filled from hashes; free texts, JSON columns and lists are NULL
  (they cost disk and load time, and nothing in ``summary`` or ``atlas fit`` reads them).

Deterministic: every value is a function of the episode number and ``--seed`` (DuckDB's
``hash``), so the same arguments write the same rows on any machine running the pinned
DuckDB.

Run::

    .venv/bin/python benchmarks/gen_episodes_parquet.py --episodes 10000000 \\
        --out /work/scale/10m --duckdb /work/scale/10m.duckdb
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import duckdb

from evalatlas.records.models import FORMAT_VERSION
from evalatlas.store.schema import EXPERIMENT_COLUMNS, declared_types

N_AGENTS = 500
N_BENCHMARKS = 4
TASKS_PER_BENCHMARK = 5_000
N_TASKS = N_BENCHMARKS * TASKS_PER_BENCHMARK
PAIRS = N_AGENTS * N_TASKS  # 10^7 agent x task cells per run
SCRAMBLE = 3_141_593  # coprime with 10^7: c -> c * SCRAMBLE mod 10^7 is a bijection
ATTEMPTS = (3, 7, 1, 10, 5, 8, 2, 6, 9, 4)  # attempts of the 10 cells of a block
BLOCK = sum(ATTEMPTS)  # 55 episodes per block of 10 cells

EXPERIMENT_TYPES = {  # read off the DDL like declared_types does for episodes
    "experiment_id": "VARCHAR", "experiment_name": "VARCHAR", "timestamp": "DOUBLE",
    "framework_name": "VARCHAR", "framework_version": "VARCHAR", "agent_id": "VARCHAR",
    "agent_name": "VARCHAR", "agent_config_type": "VARCHAR", "llm_model": "VARCHAR",
    "agent": "JSON", "benchmark_name": "VARCHAR", "benchmark_version": "VARCHAR",
    "subset_name": "VARCHAR", "subset_n_tasks": "BIGINT", "subset_filter": "VARCHAR",
    "investigator_llm_config": "JSON", "labels": "JSON", "extra": "JSON",
    "source_file": "VARCHAR", "ingest_batch": "BIGINT", "published_metrics": "JSON",
    "format_version": "INTEGER",
}


def _lists() -> tuple[str, str]:
    """Two constant SQL lists indexed by ``i % 55 + 1``: the cell within the block and
    the attempt within the cell."""
    cell, attempt = [], []
    for j, a in enumerate(ATTEMPTS):
        cell += [j] * a
        attempt += list(range(a))
    return (f"[{', '.join(map(str, cell))}]", f"[{', '.join(map(str, attempt))}]")


def _u(expr: str, seed: int, salt: int) -> str:
    """SQL for a uniform [0, 1) value hashed from ``expr`` (deterministic)."""
    return f"(hash({expr}, {seed * 1000 + salt})::DOUBLE / 18446744073709551616.0)"


def episodes_sql(n: int, seed: int) -> str:
    """The SELECT of ``n`` episodes, every column of the store's ``episodes`` in order and
    cast to its store type (:func:`evalatlas.store.schema.declared_types`)."""
    cells, attempts = _lists()
    base = f"""
        SELECT i, c, att, c // {PAIRS} AS run,
               (c % {PAIRS}) * {SCRAMBLE} % {PAIRS} AS pair
        FROM (SELECT range AS i, (range // {BLOCK}) * 10 + {cells}[range % {BLOCK} + 1] AS c,
                     {attempts}[range % {BLOCK} + 1] AS att
              FROM range({int(n)}))"""
    shaped = f"""
        SELECT *, pair % {N_AGENTS} AS agent, pair // {N_AGENTS} AS task,
               (pair // {N_AGENTS}) // {TASKS_PER_BENCHMARK} AS bench,
               {_u('i', seed, 1)} AS u_out, {_u('i', seed, 2)} AS u_err,
               {_u('i', seed, 3)} AS u_tok
        FROM ({base})"""
    ability = f"(-2.0 + 4.0 * agent / {N_AGENTS - 1})"
    difficulty = f"(-3.0 + 6.0 * {_u('task', seed, 4)})"
    p = f"(1.0 / (1.0 + exp(-({ability} - {difficulty}))))"
    shaped = f"""
        SELECT *, CASE WHEN u_err < 0.002 THEN NULL WHEN u_err < 0.012 THEN false
                       ELSE u_out < {p} END AS ok
        FROM ({shaped})"""
    success = "ok"
    prompt = "(2000 + (u_tok * 60000)::BIGINT)"
    completion = "(200 + (u_out * 4000)::BIGINT)"
    exprs = {
        "experiment_id": "printf('exp-b%d-a%03d-r%d', bench, agent, run)",
        "trajectory_id": "printf('ep-%010d', i)",
        "task_id": "printf('task-%05d', task)",
        "task_version_hash": f"printf('%08x', hash(task, {seed}) % 4294967296)",
        "attempt": "att", "seed": "att", "split": "'test'",
        "success": success,
        "reward": f"CASE WHEN ({success}) THEN 1.0 WHEN NOT ({success}) THEN 0.0 END",
        "status": "CASE WHEN u_err >= 0.002 AND u_err < 0.012 THEN 'error' "
                  "ELSE 'completed' END",
        "error_type": "CASE WHEN u_err >= 0.002 AND u_err < 0.012 THEN 'TimeoutError' END",
        "n_steps": "(2 + (u_tok * 40)::BIGINT)",
        "n_agent_steps": "(1 + (u_tok * 20)::BIGINT)",
        "n_env_steps": "(1 + (u_tok * 20)::BIGINT)",
        "wall_time_s": "(5.0 + u_tok * 600.0)",
        "timestamp": "(1.7e9 + i)",
        "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": f"({prompt} + {completion})",
        "cached_tokens": "0", "cache_creation_tokens": "0", "reasoning_tokens": "0",
        "cost_usd": f"({prompt} * 2.5e-6 + {completion} * 1.0e-5)",
        "cost_source": "'reported'",
        "n_llm_calls": "(1 + (u_tok * 30)::BIGINT)",
        "llm_model": "printf('model-%02d', agent % 40)",
        "source_file": "printf('gen/exp-b%d-a%03d-r%d.jsonl', bench, agent, run)",
        "ingest_batch": "1", "format_version": str(FORMAT_VERSION),
        "outcome_source": f"CASE WHEN ({success}) IS NOT NULL THEN 'harness' END",
    }
    cols = ", ".join(f"CAST({exprs.get(c, 'NULL')} AS {t}) AS {c}"
                     for c, t in declared_types("episodes").items())
    return f"SELECT {cols} FROM ({shaped})"


def runs_of(n: int) -> int:
    """How many runs (passes over the 10^7 agent x task cells) ``n`` episodes reach: the
    run of the last episode's cell, plus one."""
    cell_of = [j for j, a in enumerate(ATTEMPTS) for _ in range(a)]
    last = max(0, n - 1)
    return ((last // BLOCK) * 10 + cell_of[last % BLOCK]) // PAIRS + 1


def experiments_sql(n: int, seed: int) -> str:
    """One experiment per (agent, benchmark, run) that ``n`` episodes reach."""
    exprs = {
        "experiment_id": "printf('exp-b%d-a%03d-r%d', bench, agent, run)",
        "experiment_name": "printf('agent-%03d on bench-%d (run %d)', agent, bench, run)",
        "timestamp": "1.7e9", "framework_name": "'synthetic'", "framework_version": "'1'",
        "agent_id": "printf('agent-%03d', agent)",
        "agent_name": "printf('Agent %03d', agent)",
        "llm_model": "printf('model-%02d', agent % 40)",
        "agent": "json_object('agent_id', printf('agent-%03d', agent), 'name', "
                 "printf('Agent %03d', agent), 'description', "
                 "printf('synthetic agent %d of the scale benchmark', agent))",
        "benchmark_name": "printf('bench-%d', bench)", "benchmark_version": "'1'",
        "subset_n_tasks": str(TASKS_PER_BENCHMARK),
        "source_file": "printf('gen/exp-b%d-a%03d-r%d.jsonl', bench, agent, run)",
        "ingest_batch": "1", "format_version": str(FORMAT_VERSION),
    }
    cols = ", ".join(f"CAST({exprs.get(c, 'NULL')} AS {EXPERIMENT_TYPES[c]}) AS {c}"
                     for c in EXPERIMENT_COLUMNS)
    return (f"SELECT {cols} FROM range({N_AGENTS}) a(agent), range({N_BENCHMARKS}) b(bench), "
            f"range({runs_of(n)}) r(run) ORDER BY run, bench, agent")


BATCH_SQL = """SELECT 1::BIGINT AS batch_id, TIMESTAMP '2026-01-01' AS started_at,
    TIMESTAMP '2026-01-01' AS committed_at, {n_exp}::BIGINT AS n_experiments,
    {n}::BIGINT AS n_episodes, 0::BIGINT AS n_measurements, 0::BIGINT AS n_rejected,
    ['gen_episodes_parquet.py']::VARCHAR[] AS sources"""


def write_parquet(n: int, out: Path, *, seed: int = 0, threads: int = 2,
                  memory_limit: str = "2GB") -> dict[str, float]:
    """Write the three Parquet outputs under ``out`` (which must not hold episodes yet);
    returns seconds per part."""
    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}; SET memory_limit = '{memory_limit}'; "
                "SET preserve_insertion_order = false")
    times = {}
    t0 = time.perf_counter()
    con.execute(f"COPY ({episodes_sql(n, seed)}) TO '{out / 'episodes'}' "
                "(FORMAT parquet, COMPRESSION zstd, FILE_SIZE_BYTES '256MB', "
                "FILENAME_PATTERN 'data_{i}')")
    times["episodes_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.execute(f"COPY ({experiments_sql(n, seed)}) TO '{out / 'experiments.parquet'}' "
                "(FORMAT parquet)")
    n_exp = con.execute(f"SELECT count(*) FROM '{out / 'experiments.parquet'}'").fetchone()[0]
    con.execute(f"COPY ({BATCH_SQL.format(n=int(n), n_exp=n_exp)}) TO "
                f"'{out / 'ingest_batches.parquet'}' (FORMAT parquet)")
    times["experiments_s"] = time.perf_counter() - t0
    con.close()
    return times


def load_file_store(parquet: Path, db: Path) -> float:
    """A file store at ``db`` (created by :class:`~evalatlas.store.db.Store`, so the
    store's own DDL) holding the Parquet rows; returns the load seconds."""
    from evalatlas.store.db import StoreConnection

    t0 = time.perf_counter()
    with StoreConnection(db) as store:
        store.con.execute("BEGIN TRANSACTION")
        for table, src in (("episodes", parquet / "episodes" / "*.parquet"),
                           ("experiments", parquet / "experiments.parquet"),
                           ("ingest_batches", parquet / "ingest_batches.parquet")):
            store.con.execute(f"INSERT INTO {table} SELECT * FROM read_parquet('{src}')")
        store.con.execute("COMMIT")
        store.con.execute("CHECKPOINT")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True, help="folder for the Parquet files")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duckdb", type=Path, help="also load the rows into this file store")
    args = ap.parse_args()
    if (args.out / "episodes").exists():
        raise SystemExit(f"{args.out / 'episodes'} exists; remove it or pick another --out")
    times = write_parquet(args.episodes, args.out, seed=args.seed, threads=args.threads)
    print(f"parquet: {args.episodes:,} episodes in {times['episodes_s']:.1f} s")
    if args.duckdb:
        print(f"file store {args.duckdb}: loaded in {load_file_store(args.out, args.duckdb):.1f} s")


if __name__ == "__main__":
    main()
