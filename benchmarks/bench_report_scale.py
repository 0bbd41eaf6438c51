"""Benchmark: the report and ``compare`` on stores shaped to break them (issue #28, 6).

- ``compare`` of 2 agents on 50,000 shared tasks, 1 attempt (McNemar's exact test on
  ~25,000 discordant pairs); target <= 2 s. Baseline in the same run: ``evalatlas
  summary`` on the same store.
- ``report`` over 10,000 experiments (10,000 agents x 3 tasks) and over 20 agents x
  50,000 tasks (1,000,000 episodes); target <= 60 s and < 1.5 GB peak RSS each.
- ``report`` with one 1 MB agent name and one 1 MB task name among 5 agents x 20 tasks:
  the file stays bounded (each long name stored once, shortened for display).

Every case runs the CLI in a fresh process under ``/usr/bin/time`` (wall seconds, peak
RSS). Stores are written straight into DuckDB by :func:`bench_report.build_store`.

Run: ``.venv/bin/python benchmarks/bench_report_scale.py [--repeats 3] [--only NAME]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_report import build_store  # noqa: E402
from evalatlas.store.db import StoreConnection  # noqa: E402

EVALATLAS = str(Path(sys.executable).with_name("evalatlas"))


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one run of ``cmd`` (``env``: its environment)."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True,
                       text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{cmd} failed: {r.stderr[-2000:]}")
    wall, rss = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss) / 1024


def long_names_store(path: Path) -> None:
    build_store(path, 5, 20)
    with StoreConnection(path) as store:
        big = "x" * 1_000_000
        store.con.execute("UPDATE experiments SET agent_name = ? || 'agent' "
                          "WHERE agent_id = 'agent0000'", [big])
        store.con.execute("UPDATE episodes SET task_id = ? || 'task' "
                          "WHERE task_id = 'task-00000'", [big])
        store.con.execute("CHECKPOINT")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cases = {
            "compare-50k": (lambda p: build_store(p, 2, 50_000),
                            ["compare", "agent-000-with-a-longish-name",
                             "agent-001-with-a-longish-name", "-f", "json"]),
            "report-10k-agents": (lambda p: build_store(p, 10_000, 3),
                                  ["report", "-o", str(d / "r.html")]),
            "report-20x50k": (lambda p: build_store(p, 20, 50_000),
                              ["report", "-o", str(d / "r.html")]),
            "report-1MB-names": (long_names_store, ["report", "-o", str(d / "r.html")]),
        }
        print("| case | command | median wall s | peak RSS MB | baseline `summary` wall s "
              "| file bytes |")
        print("|---|---|---|---|---|---|")
        for name, (build, cmd) in cases.items():
            if args.only and args.only != name:
                continue
            db = d / f"{name}.duckdb"
            build(db)
            base = [timed([EVALATLAS, "--db", str(db), "summary", "-f", "json"])[0]
                    for _ in range(args.repeats)]
            runs = [timed([EVALATLAS, "--db", str(db), *cmd]) for _ in range(args.repeats)]
            size = (d / "r.html").stat().st_size if cmd[0] == "report" else None
            print(f"| {name} | evalatlas {' '.join(cmd[:1])} | "
                  f"{statistics.median(w for w, _ in runs):.2f} "
                  f"({', '.join(f'{w:.2f}' for w, _ in runs)}) | "
                  f"{max(r for _, r in runs):.0f} | {statistics.median(base):.2f} | "
                  f"{'-' if size is None else f'{size:,}'} |", flush=True)
            db.unlink()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
