"""Benchmark: everyday CLI commands, end to end from the shell (wall time, CPU time, RSS).

Each command runs as its own process, ``--repeats`` times; reported are the median wall
time, the median CPU time (user + system of the child, which a loaded machine inflates
less than wall time), the peak RSS, and ratios against ``python -c pass`` measured in the
same run (the baseline: interpreter start-up). Commands:

- ``evalatlas --version`` and ``--help`` (start-up: lazy command registration);
- ``evalatlas ingest`` of 50 small experiment files (and whether pandas was imported);
- ``evalatlas summary -f json`` over 1M and 3M stored episodes (50 agents x 2,000 or
  6,000 tasks x 10 attempts, with tokens, cost, wall time and errors);
- ``evalatlas compare`` of two agents on 5,000 shared tasks (3 attempts each).

Stores are written straight into DuckDB (ingest has its own benchmark) under a temporary
folder. Run: ``.venv/bin/python benchmarks/bench_cli.py [--repeats 5] [--skip-3m]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
EVALATLAS = str(BIN / "evalatlas")


def build_store(path: Path, agents: int, tasks: int, attempts: int) -> None:
    """Synthetic episodes; P(success) = sigmoid(ability - difficulty), deterministic."""
    from evalatlas.store.db import StoreConnection

    with StoreConnection(path) as store:
        con = store.con
        con.execute(f"""
            INSERT INTO experiments (experiment_id, experiment_name, agent_id, agent_name,
                                     llm_model, benchmark_name, labels, extra)
            SELECT printf('exp%04d', a), printf('exp%04d', a), printf('agent%04d', a),
                   printf('agent-%02d', a), 'gpt-4o', 'synthetic', '{{}}', '{{}}'
            FROM range({agents}) r(a)
        """)
        con.execute(f"""
            INSERT INTO episodes (experiment_id, trajectory_id, task_id, attempt, success,
                                  reward, status, error_type, wall_time_s, prompt_tokens,
                                  completion_tokens, total_tokens, cost_usd, cost_source,
                                  llm_model)
            SELECT printf('exp%04d', a), printf('t%05d_ep%d', t, k), printf('task-%05d', t),
                   k, ok, CASE WHEN ok THEN 1.0 ELSE 0.0 END,
                   CASE WHEN h % 50 = 0 THEN 'error' ELSE 'completed' END,
                   CASE WHEN h % 50 = 0 THEN 'TimeoutError' END,
                   (h % 600) / 2.0, 1000 + h % 90000, 100 + h % 9000,
                   1100 + h % 90000 + h % 9000, (h % 1000) / 1e4, 'reported', 'gpt-4o'
            FROM (
              SELECT a, t, k, hash(a, t, k) % 1000003 AS h,
                     (hash(a, t, k) % 1000000) / 1e6
                       < 1 / (1 + exp(-((a / {agents} * 3 - 1.5)
                                        - ((hash(t) % 1000) / 1000.0 * 4 - 2)))) AS ok
              FROM range({agents}) ra(a), range({tasks}) rt(t), range({attempts}) rk(k)
            )
        """)
        con.execute("CHECKPOINT")


def write_small_inputs(folder: Path, n: int = 50) -> None:
    """``n`` JSONL files, one experiment of 4 episodes each (the seed's record format)."""
    folder.mkdir(parents=True, exist_ok=True)
    for e in range(n):
        exp = {"experiment_id": f"exp{e:03d}", "experiment_name": f"run {e}",
               "benchmark_name": "toy", "agent": {"name": f"agent-{e}", "llm_model": "gpt-4o"},
               "benchmark_subset": {"name": "all", "n_tasks": 4}}
        lines = [json.dumps(exp)] + [
            json.dumps({"experiment_id": exp["experiment_id"], "task_id": f"t{t}",
                        "trajectory_id": f"e{e}t{t}", "reward": float(t % 2)})
            for t in range(4)]
        (folder / f"exp{e:03d}.jsonl").write_text("\n".join(lines) + "\n")


def measure(name: str, cmd: list[str], repeats: int, *, setup=None,
            env: dict[str, str] | None = None) -> dict:
    """Median wall and CPU over ``repeats`` runs (CPU from the children's rusage deltas)."""
    walls, cpus = [], []
    for _ in range(repeats):
        if setup is not None:
            setup()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, env={**os.environ, **(env or {})})
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-2000:]}")
        walls.append(wall)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    if setup is not None:
        setup()
    return {"name": name, "wall": statistics.median(walls), "cpu": statistics.median(cpus),
            "rss_mb": rss_of(cmd, env), "runs": repeats}


def rss_of(cmd: list[str], env: dict[str, str] | None = None) -> int:
    """Peak RSS (MB) of one more run, measured by GNU time when present, else -1."""
    if not shutil.which("/usr/bin/time"):
        return -1
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True,
                          env={**os.environ, **(env or {})})
    try:
        return int(proc.stderr.decode().strip().splitlines()[-1]) // 1024
    except (ValueError, IndexError):
        return -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-3m", action="store_true", help="Skip the 3M-episode store.")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_cli_"))
    try:
        print(f"load average: {os.getloadavg()}", flush=True)
        stores = {"1M": (50, 2000, 10)}
        if not args.skip_3m:
            stores["3M"] = (50, 6000, 10)
        for name, shape in stores.items():
            t0 = time.perf_counter()
            build_store(tmp / f"{name}.duckdb", *shape)
            print(f"built {name} store in {time.perf_counter() - t0:.1f} s", flush=True)
        build_store(tmp / "cmp.duckdb", 2, 5000, 3)
        inputs = tmp / "inputs"
        write_small_inputs(inputs)
        ingest_db = tmp / "ingest.duckdb"

        def fresh_ingest_db() -> None:
            ingest_db.unlink(missing_ok=True)

        py = sys.executable
        rows = [measure("python -c pass (baseline)", [py, "-c", "pass"], args.repeats)]
        rows.append(measure("evalatlas --version", [EVALATLAS, "--version"], args.repeats))
        rows.append(measure("evalatlas --help", [EVALATLAS, "--help"], args.repeats,
                            env={"COLUMNS": "100"}))
        rows.append(measure("evalatlas ingest (50 experiment files)",
                            [EVALATLAS, "--db", str(ingest_db), "ingest", str(inputs)],
                            args.repeats, setup=fresh_ingest_db))
        pandas = subprocess.run(
            [py, "-c", "import sys\nfrom evalatlas.cli.main import main\n"
             f"sys.argv = ['evalatlas', '--db', {str(tmp / 'i2.duckdb')!r}, 'ingest', "
             f"{str(inputs)!r}]\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('pandas imported:', 'pandas' in sys.modules)"],
            capture_output=True, text=True).stdout.strip().splitlines()[-1]
        for name in stores:
            db = str(tmp / f"{name}.duckdb")
            cmd = [EVALATLAS, "--db", db, "summary", "-f", "json"]
            rows.append(measure(f"evalatlas summary -f json ({name} episodes)", cmd,
                                args.repeats))
        cmd = [EVALATLAS, "--db", str(tmp / "cmp.duckdb"), "compare", "agent-00", "agent-01",
               "-f", "json"]
        rows.append(measure("evalatlas compare (2 agents, 5,000 tasks x 3)", cmd,
                            args.repeats))
        base = rows[0]
        print(f"\n{pandas}")
        print("\n| command | median wall s | median CPU s | CPU vs baseline | peak RSS MB |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['name']} | {r['wall']:.3f} | {r['cpu']:.3f} | "
                  f"{r['cpu'] / base['cpu']:.1f}x | {r['rss_mb'] if r['rss_mb'] >= 0 else '-'} |")
        print(f"\nload average after: {os.getloadavg()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
