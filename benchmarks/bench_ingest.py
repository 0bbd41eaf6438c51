"""Store benchmark: JSONL ingest, EvalLog directories, summary (issue: the spine, section 7).

Compared in one run, on the same file and machine:

- ``duckdb read_json``: DuckDB's own ``CREATE TABLE AS SELECT * FROM read_json(...)``
  into a file database: the practical ceiling;
- ``evalatlas ingest``: :func:`evalatlas.store.ingest.ingest_paths` (its fast path for
  clean JSONL, which still validates every record);
- ``naive pydantic loader``: one ``EpisodeRecord.model_validate_json`` per line plus
  ``executemany`` inserts, what users write by hand (run on a prefix of the file; its
  rate is per record);
- 10,000 EvalLog episode directories through ``ingest_paths``;
- ``summary`` as the command computes it (one row per agent: Wilson interval, task-
  clustered interval, pass@k) over the ingested store.

Each measurement runs in a fresh subprocess, so peak RSS (``ru_maxrss``) is its own.
Repeats give medians. Usage::

    .venv/bin/python benchmarks/bench_ingest.py [--n 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "_data"

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
kind, src, db = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
n_limit = int(sys.argv[4])
t0 = time.perf_counter()
n = 0
if kind == "duckdb":
    import duckdb
    con = duckdb.connect(db)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{src}', format='newline_delimited')")
    n = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
    con.close()
elif kind == "evalatlas":
    from evalatlas.store.db import Store
    from evalatlas.store.ingest import ingest_paths
    with Store(db) as store:
        rep = ingest_paths(store, [src])
    n = rep.episodes + rep.experiments
elif kind == "naive":
    import duckdb
    from evalatlas.records import EpisodeRecord
    con = duckdb.connect(db)
    con.execute("CREATE TABLE episodes (experiment_id VARCHAR, trajectory_id VARCHAR, "
                "task_id VARCHAR, reward DOUBLE, success BOOLEAN, prompt_tokens BIGINT, "
                "completion_tokens BIGINT, cost_usd DOUBLE, wall_time_s DOUBLE)")
    rows = []
    with src.open() as fh:
        for line in fh:
            if n >= n_limit:
                break
            e = EpisodeRecord.model_validate_json(line)
            rows.append((e.experiment_id, e.trajectory_id, e.task_id, e.reward, e.success,
                         e.usage.prompt_tokens, e.usage.completion_tokens,
                         e.usage.total_cost_usd, e.wall_time_s))
            n += 1
            if len(rows) == 1000:
                con.executemany("INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,?)", rows)
                rows = []
    if rows:
        con.executemany("INSERT INTO episodes VALUES (?,?,?,?,?,?,?,?,?)", rows)
    con.close()
elif kind == "summary":
    from evalatlas.store.db import Store
    from evalatlas.api import summary
    with Store(db, read_only=True) as store:
        t0 = time.perf_counter()
        rows = summary(store).rows  # what `evalatlas summary` runs
    n = sum(r["episodes"] for r in rows)
secs = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"n": n, "seconds": secs, "rss_mb": rss}))
"""


def run_child(kind: str, src: Path, db: Path, limit: int = 0) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(src), str(db), str(limit)],
                         capture_output=True, text=True, check=True)
    start = out.stdout.rfind('{"n"')  # DuckDB's own progress bar may precede it
    if start < 0:
        raise RuntimeError(f"{kind} printed no result: {out.stdout[-500:]!r}")
    return json.loads(out.stdout[start:].strip())


def fresh_db(tmp: Path, name: str) -> Path:
    p = tmp / name
    for suffix in ("", ".wal"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    return p


def make_inputs(n: int) -> tuple[Path, Path, Path]:
    sys.path.insert(0, str(HERE))
    from synth import write_jsonl

    DATA.mkdir(exist_ok=True)
    episodes = DATA / f"episodes_{n}.jsonl"
    if not episodes.exists():
        write_jsonl(episodes, n)
    experiments = DATA / "experiments_50.jsonl"
    if not experiments.exists():
        with experiments.open("w") as fh:
            for a in range(50):
                fh.write(json.dumps({
                    "experiment_id": f"exp{a:04d}", "experiment_name": f"agent-{a}",
                    "benchmark_name": "synthetic",
                    "benchmark_subset": {"name": "synthetic", "n_tasks": 2000},
                    "agent": {"name": f"agent-{a}", "llm_model": "claude-sonnet-4",
                              "config": {"agent": a}}}) + "\n")
    dirs = DATA / "evallog_10k"
    if not dirs.exists():
        from evalatlas.records import (
            AgentInfo,
            BenchmarkSubset,
            EpisodeRecord,
            EvalLog,
            ExperimentRecord,
        )
        from synth import episode_dict

        rng = random.Random(1)
        for a in range(10):
            eid = f"direxp{a:02d}"
            exp = ExperimentRecord(experiment_id=eid, experiment_name=eid,
                                   agent=AgentInfo(name=eid, config={"a": a}),
                                   benchmark_name="synthetic",
                                   benchmark_subset=BenchmarkSubset(name="synthetic",
                                                                    n_tasks=1000))
            eps = []
            for t in range(1000):
                d = episode_dict(t, rng, n_agents=1, n_tasks=1000)
                d["experiment_id"] = eid
                eps.append(EpisodeRecord.model_validate(d))
            EvalLog(experiment=exp, episodes=eps).save(dirs / eid)
    return episodes, experiments, dirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--naive-n", type=int, default=50_000)
    args = ap.parse_args()
    episodes, experiments, dirs = make_inputs(args.n)
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp_:
        tmp = Path(tmp_)
        for _ in range(args.repeats):
            results.setdefault("duckdb read_json", []).append(
                run_child("duckdb", episodes, fresh_db(tmp, "duck.duckdb")))
            db = fresh_db(tmp, "ea.duckdb")
            run_child("evalatlas", experiments, db)
            results.setdefault("evalatlas ingest (JSONL)", []).append(
                run_child("evalatlas", episodes, db))
            results.setdefault("evalatlas summary", []).append(run_child("summary", episodes, db))
            results.setdefault("evalatlas ingest (10k EvalLog dirs)", []).append(
                run_child("evalatlas", dirs, fresh_db(tmp, "dirs.duckdb")))
        results["naive pydantic loader"] = [
            run_child("naive", episodes, fresh_db(tmp, "naive.duckdb"), args.naive_n)]
    base = statistics.median(r["n"] / r["seconds"] for r in results["duckdb read_json"])
    print("| measurement | records | median s | records/s | vs duckdb read_json | "
          "peak RSS MB |\n|---|---|---|---|---|---|")
    for name, runs in results.items():
        secs = statistics.median(r["seconds"] for r in runs)
        n = runs[0]["n"]
        rate = n / secs
        rss = statistics.median(r["rss_mb"] for r in runs)
        print(f"| {name} | {n:,} | {secs:.2f} | {rate:,.0f} | {rate / base:.2f}x | {rss:,.0f} |")


if __name__ == "__main__":
    main()
