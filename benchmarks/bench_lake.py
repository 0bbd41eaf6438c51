"""Lake benchmark (issue 23): W concurrent writers into one PostgreSQL-catalog DuckLake
against one writer of the same episodes into a DuckDB file, in the same run.

- ``file``: one ``evalatlas ingest`` of all W files (W x N episodes) into a fresh
  ``.duckdb`` store: today's single-writer path;
- ``lake``: W ``evalatlas ingest`` processes started together, each with its own
  N-episode JSONL, into one fresh lake on a local PostgreSQL (a throwaway cluster,
  started here the way the tests start theirs: tests/store/conftest.py).

The two are interleaved ``--repeats`` times (load drifts hit both alike); reported:
median wall seconds of each, the ratio, and the lake's episode count and distinct keys
after every run (every episode exactly once), with the CPU seconds of the ingest
processes (all writers together for the lake; ``RUSAGE_CHILDREN``) and the machine's load
average before and after each repeat. Inputs: ``synth.py`` episodes (~900 bytes,
distinct trajectory ids per writer), under ``--data-dir``, deleted at the end.

Usage::

    .venv/bin/python benchmarks/bench_lake.py --writers 4 --n 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from pg_cluster import tests_pg_helpers  # noqa: E402
from synth import episode_dict  # noqa: E402


def write_part(path: Path, writer: int, n: int) -> Path:
    """N synth episodes whose trajectory ids are the writer's own (no overlap)."""
    rng = random.Random(writer)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            d = episode_dict(i, rng, n_agents=50, n_tasks=20000)
            d["trajectory_id"] = f"w{writer}-{d['trajectory_id']}-{i}"
            fh.write(json.dumps(d) + "\n")
    return path


def _cmd(db: str, *args: str) -> list[str]:
    return [sys.executable, "-c", "from evalatlas.cli.main import main; main()", "--db", db,
            *args]


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children so far: the
    difference across a run is what its ``ingest`` processes used, all threads."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_file(parts: list[Path], work: Path) -> tuple[float, float]:
    """One ``ingest`` of every part into a fresh DuckDB file: (wall s, CPU s)."""
    db = work / "one.duckdb"
    db.unlink(missing_ok=True)
    c0 = _children_cpu()
    t0 = time.perf_counter()
    subprocess.run(_cmd(str(db), "ingest", *map(str, parts)), check=True,
                   capture_output=True)
    secs = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    db.unlink(missing_ok=True)
    return secs, cpu


def run_lake(parts: list[Path], cluster, work: Path, k: int
             ) -> tuple[float, float, int, int]:
    """One ``ingest`` per part, all at once, into a fresh lake: (wall s, CPU s of the
    writers together, episodes stored, distinct keys stored)."""
    conninfo = cluster.create_database(f"bench{k}")
    lake = f"ducklake:postgres:{conninfo}"
    data = work / f"lake-data-{k}"
    data.mkdir()
    import evalatlas as ea

    ea.open(lake, data_path=data).close()  # created before the clock starts
    c0 = _children_cpu()
    t0 = time.perf_counter()
    procs = [subprocess.Popen(_cmd(lake, "ingest", str(p)), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for p in parts]
    errs = [p.communicate()[1] for p in procs]
    secs = time.perf_counter() - t0
    cpu = _children_cpu() - c0
    if any(p.returncode for p in procs):
        raise SystemExit(f"a lake writer failed: {errs}")
    with ea.open(lake, read_only=True) as store:
        row = store.query("SELECT count(*) AS n, count(DISTINCT (experiment_id, "
                          "trajectory_id)) AS keys FROM episodes")[0]
    shutil.rmtree(data, ignore_errors=True)
    return secs, cpu, int(row["n"]), int(row["keys"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--n", type=int, default=1_000_000, help="episodes per writer")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    work = Path(args.data_dir or tempfile.mkdtemp(prefix="evalatlas-bench-lake-"))
    work.mkdir(parents=True, exist_ok=True)
    mod = tests_pg_helpers()
    cluster = mod.PgCluster(mod.postgres_bin())
    try:
        parts = [write_part(work / f"part{w}.jsonl", w, args.n) for w in range(args.writers)]
        files, lakes, counts, cpus, loads = [], [], [], [], []
        for k in range(args.repeats):
            load = os.getloadavg()[0]
            secs_file, cpu_file = run_file(parts, work)
            files.append(secs_file)
            secs, cpu, n, keys = run_lake(parts, cluster, work, k)
            lakes.append(secs)
            counts.append((n, keys))
            cpus.append((cpu_file, cpu))
            loads.append((load, os.getloadavg()[0]))
            print(f"repeat {k + 1}: file {secs_file:.2f} s ({cpu_file:.1f} CPU s), lake "
                  f"{secs:.2f} s ({cpu:.1f} CPU s), episodes {n:,} (distinct {keys:,}), "
                  f"load {loads[-1][0]:.1f} -> {loads[-1][1]:.1f}", flush=True)
        total = args.writers * args.n
        print(json.dumps({
            "writers": args.writers, "episodes_per_writer": args.n, "total": total,
            "file_one_writer_s": round(statistics.median(files), 2),
            "lake_writers_s": round(statistics.median(lakes), 2),
            "lake_over_file": round(statistics.median(lakes) / statistics.median(files), 2),
            "file_cpu_s": round(statistics.median(c for c, _ in cpus), 1),
            "lake_cpu_s": round(statistics.median(c for _, c in cpus), 1),
            "every_episode_once": all(n == keys == total for n, keys in counts),
            "load_1min": [[round(a, 1), round(b, 1)] for a, b in loads],
            "runs": {"file": [round(s, 2) for s in files], "lake": [round(s, 2) for s in lakes]},
        }, indent=2))
    finally:
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
