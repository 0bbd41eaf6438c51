"""Store benchmark: JSONL ingest at 1M, 3M and 10M episodes against DuckDB's own reader.

For each input size, in the same run, on the same file (interleaved, so load drifts hit
both alike):

- ``duckdb read_json``: DuckDB's own ``CREATE TABLE AS SELECT * FROM read_json(...)``
  into a file database: the practical ceiling;
- ``evalatlas ingest``: :func:`evalatlas.store.ingest.ingest_paths` into a fresh store
  (its fast path for clean JSONL: the whole file in one statement when every line is
  clean, else chunk by chunk, one transaction per group of chunks that fills whole
  DuckDB row groups; either checks every record against the contract and quarantines
  exactly what the exact path would).

Reported per size: median wall seconds of each, the ratio (DuckDB's seconds / evalatlas'
seconds, i.e. evalatlas' rate as a fraction of DuckDB's), the ingest's peak RSS (each
measurement runs in a fresh subprocess that reports its own ``ru_maxrss``), its CPU
seconds and the store file size. Inputs are synthetic episodes (``synth.py``, ~900
bytes each) written under ``--data-dir`` and deleted at the end unless ``--keep``.

``--extras`` adds, on the smallest size: ``summary`` over the ingested store, 10,000
EvalLog episode directories through ``ingest_paths``, and the naive pydantic loader
(one ``model_validate_json`` per line plus ``executemany``, on ``--naive-n`` lines).

``--mixed`` ingests the mixed file instead (:func:`mixed_file`: an experiment record
before every 20,000 episodes); ``n`` then counts episodes and experiment records.

``--baseline-src OLD/src`` adds a third measurement, interleaved: the ingest of another
checkout (an earlier commit), imported from that tree by the same interpreter.

Usage::

    .venv/bin/python benchmarks/bench_ingest.py --sizes 1000000,3000000,10000000 \\
        --repeats 3 --max-repeated 3000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = f"import sys; sys.path.insert(0, {str(HERE)!r})\n" + r"""
import json, resource, sys, time
from pathlib import Path
from measure import peak_kb
kind, src, db = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
n_limit = int(sys.argv[4])
t0 = time.perf_counter()
n = 0
extra = {}
if kind == "duckdb":
    import duckdb
    con = duckdb.connect(db)
    con.execute("SET enable_progress_bar = false")
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{src}', format='newline_delimited')")
    n = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
    con.close()
elif kind == "evalatlas":
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.ingest import ingest_paths
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [src])
    n = rep.episodes + rep.experiments
    extra = {"fast_chunks": rep.fast_path_chunks, "declined": len(rep.fast_path_declined),
             "rejected": rep.rejected}
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
    from evalatlas.store.db import StoreConnection
    from evalatlas.api import summary
    with StoreConnection(db, read_only=True) as store:
        t0 = time.perf_counter()
        rows = summary(store).rows  # what `evalatlas summary` runs
    n = sum(r["episodes"] for r in rows)
secs = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"n": n, "seconds": secs, "rss_mb": peak_kb() / 1024,
                  "cpu": use.ru_utime + use.ru_stime, **extra}))
"""


PYCACHE: list[Path] = []
"""Where the children keep compiled bytecode (set by :func:`main`)."""

WARM_UP = ("import duckdb, msgspec, numpy, pandas, pyarrow.compute, pyarrow.dataset; "
           "import evalatlas.store.db, evalatlas.store.ingest, evalatlas.cli.main")
"""What :func:`warm_up` imports, compiling it into :data:`PYCACHE`."""


def child_env(code: Path | None = None) -> dict[str, str]:
    """The environment of a measurement: bytecode cached in :data:`PYCACHE` (an installed
    package's modules are compiled once, at install; where ``PYTHONDONTWRITEBYTECODE``
    is set, as in the sandbox this ran in, every evalatlas module was compiled again in
    every run: ~0.09 s of a 1M ingest's ~6.6, measured by helper boot, session 21, while
    DuckDB's side imported its installed bytecode); ``code``: another tree's ``src``
    folder to import evalatlas from (``--baseline-src``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE[0])
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def warm_up(code: Path | None = None) -> None:
    """Compile the modules a measurement imports into :data:`PYCACHE` (not measured)."""
    subprocess.run([sys.executable, "-c", WARM_UP], check=True, env=child_env(code))


def run_child(kind: str, src: Path, db: Path, limit: int = 0,
              code: Path | None = None) -> dict:
    """One measurement in a fresh interpreter (:func:`child_env`)."""
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(src), str(db), str(limit)],
                         capture_output=True, text=True, check=True, env=child_env(code))
    start = out.stdout.rfind('{"n"')  # DuckDB's own progress bar may precede it
    if start < 0:
        raise RuntimeError(f"{kind} printed no result: {out.stdout[-500:]!r}")
    result = json.loads(out.stdout[start:].strip())
    result["db_mb"] = db.stat().st_size / 1e6 if db.exists() else None
    return result


def fresh_db(tmp: Path, name: str) -> Path:
    p = tmp / name
    for suffix in ("", ".wal"):
        Path(str(p) + suffix).unlink(missing_ok=True)
    return p


def episodes_file(data: Path, n: int) -> Path:
    """The synthetic input of ``n`` episodes (written once, reused across runs)."""
    sys.path.insert(0, str(HERE))
    from synth import write_jsonl

    path = data / f"episodes_{n}.jsonl"
    if not path.exists():
        part = path.with_suffix(".part")
        write_jsonl(part, n)
        part.rename(path)
    return path


def mixed_file(data: Path, n: int, every: int = 20_000) -> Path:
    """The mixed input: the ``n`` episodes of :func:`episodes_file` with an experiment
    record before every ``every`` episodes (one of the 50 agents' experiments in turn),
    as a concatenation of per-experiment files has them: most chunks of the fast path
    hold one or more experiment records."""
    path = data / f"mixed_{n}.jsonl"
    if path.exists():
        return path
    part = path.with_suffix(".part")
    with episodes_file(data, n).open("rb") as src, part.open("wb") as out:
        for i, line in enumerate(src):
            if i % every == 0:
                a = (i // every) % 50
                out.write(json.dumps({
                    "experiment_id": f"exp{a:04d}", "experiment_name": f"agent-{a}",
                    "benchmark_name": "synthetic",
                    "benchmark_subset": {"name": "synthetic", "n_tasks": 2000},
                    "agent": {"name": f"agent-{a}", "llm_model": "claude-sonnet-4",
                              "config": {"agent": a}}}).encode() + b"\n")
            out.write(line)
    part.rename(path)
    return path


def extras_inputs(data: Path) -> tuple[Path, Path]:
    """50 experiment records, and 10 EvalLog directories of 1,000 episodes each."""
    from evalatlas.records import (
        AgentInfo,
        BenchmarkSubset,
        EpisodeRecord,
        EvalLog,
        ExperimentRecord,
    )
    from synth import episode_dict

    experiments = data / "experiments_50.jsonl"
    with experiments.open("w") as fh:
        for a in range(50):
            fh.write(json.dumps({
                "experiment_id": f"exp{a:04d}", "experiment_name": f"agent-{a}",
                "benchmark_name": "synthetic",
                "benchmark_subset": {"name": "synthetic", "n_tasks": 2000},
                "agent": {"name": f"agent-{a}", "llm_model": "claude-sonnet-4",
                          "config": {"agent": a}}}) + "\n")
    dirs = data / "evallog_10k"
    if not dirs.exists():
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
    return experiments, dirs


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000000,3000000,10000000",
                    help="episode counts, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-repeated", type=int, default=3_000_000,
                    help="sizes above this run once (a 10M run takes minutes)")
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/bench-ingest/data"))
    ap.add_argument("--keep", action="store_true", help="keep the generated inputs")
    ap.add_argument("--extras", action="store_true",
                    help="also summary, EvalLog directories and the naive loader")
    ap.add_argument("--naive-n", type=int, default=5_000)
    ap.add_argument("--mixed", action="store_true",
                    help="ingest the mixed file (an experiment record before every 20,000 "
                         "episodes) instead of episodes only")
    ap.add_argument("--baseline-src", type=Path, default=None,
                    help="the src/ folder of another checkout (e.g. `git worktree add "
                         "/tmp/base <commit>`): its ingest runs interleaved as a third "
                         "measurement, 'baseline'")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    data: Path = args.data_dir
    data.mkdir(parents=True, exist_ok=True)
    work = data / "stores"
    work.mkdir(exist_ok=True)
    PYCACHE.append(work / "pycache")  # removed with the stores
    warm_up()
    if args.baseline_src:
        warm_up(args.baseline_src.resolve())
    print(f"{os.cpu_count()} cores; load average {load()} at start "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", flush=True)
    rows = []
    try:
        for n in sizes:
            src = mixed_file(data, n) if args.mixed else episodes_file(data, n)
            runs: dict[str, list[dict]] = {"duckdb": [], "evalatlas": [], "baseline": []}
            kinds = ["duckdb", "evalatlas"] + (["baseline"] if args.baseline_src else [])
            for _ in range(args.repeats if n <= args.max_repeated else 1):
                for kind in kinds:
                    db = fresh_db(work, f"{kind}.duckdb")
                    if kind == "baseline":
                        runs[kind].append(run_child("evalatlas", src, db,
                                                    code=args.baseline_src.resolve()))
                    else:
                        runs[kind].append(run_child(kind, src, db))
                    print(f"  {n:,} {kind}: {runs[kind][-1]} load {load()}", flush=True)
            if runs["baseline"]:
                base = statistics.median(r["seconds"] for r in runs["baseline"])
                print(f"  {n:,} baseline ({args.baseline_src}): median {base:.2f} s, "
                      f"{statistics.median(r['seconds'] for r in runs['duckdb']) / base:.2f}x "
                      f"DuckDB's rate; current is "
                      f"{base / statistics.median(r['seconds'] for r in runs['evalatlas']):.2f}x "
                      "faster", flush=True)
            duck = statistics.median(r["seconds"] for r in runs["duckdb"])
            ours = statistics.median(r["seconds"] for r in runs["evalatlas"])
            rows.append((n, src.stat().st_size / 1e9, len(runs["duckdb"]), duck, ours,
                         max(r["rss_mb"] for r in runs["evalatlas"]),
                         statistics.median(r["cpu"] for r in runs["evalatlas"]),
                         statistics.median(r["cpu"] for r in runs["duckdb"]),
                         runs["evalatlas"][-1]["db_mb"], runs["duckdb"][-1]["db_mb"],
                         runs["evalatlas"][-1]["fast_chunks"],
                         runs["evalatlas"][-1]["declined"]))
            if args.extras and n == min(sizes):
                experiments, dirs = extras_inputs(data)
                db = fresh_db(work, "ea.duckdb")
                run_child("evalatlas", experiments, db)
                run_child("evalatlas", src, db)
                for name, result in (
                        ("summary", run_child("summary", src, db)),
                        ("10k EvalLog dirs", run_child("evalatlas", dirs,
                                                       fresh_db(work, "dirs.duckdb"))),
                        ("naive loader", run_child("naive", src,
                                                   fresh_db(work, "naive.duckdb"),
                                                   args.naive_n))):
                    print(f"  extra {name}: {result}", flush=True)
            if not args.keep:
                src.unlink()
                (data / f"episodes_{n}.jsonl").unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep:
            for p in [*data.glob("episodes_*"), *data.glob("mixed_*")]:
                p.unlink()
            (data / "experiments_50.jsonl").unlink(missing_ok=True)
            shutil.rmtree(data / "evallog_10k", ignore_errors=True)
    print(f"load average {load()} at end\n")
    print("| episodes | input GB | runs | DuckDB read_json s | evalatlas ingest s | "
          "ratio (evalatlas rate / DuckDB rate) | ingest peak RSS MB | ingest CPU s | "
          "DuckDB CPU s | store MB (DuckDB table MB) | chunks (declined) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (n, gb, k, duck, ours, rss, cpu, dcpu, db_mb, duck_mb, chunks, declined) in rows:
        print(f"| {n:,} | {gb:.2f} | {k} | {duck:.2f} | {ours:.2f} | {duck / ours:.2f} | "
              f"{rss:,.0f} | {cpu:.1f} | {dcpu:.1f} | {db_mb:.1f} ({duck_mb:.1f}) | "
              f"{chunks} ({declined}) |")


if __name__ == "__main__":
    main()
