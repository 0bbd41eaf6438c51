"""Benchmark: ``compare`` (2 agents x 50,000 tasks) and ``report`` (20 agents x 50,000
tasks, 1M episodes) of this checkout against another revision, in the same run.

Each command runs in a fresh process under ``/usr/bin/time`` (wall seconds, peak RSS),
alternating between the two sources so that a change in the machine's load hits both;
the other revision's ``src/`` is taken with ``git archive`` and put first on
``PYTHONPATH``. Stores from :func:`bench_report.build_store`.

Run: ``.venv/bin/python benchmarks/bench_against_rev.py REV [--repeats 3]``.
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
from bench_report_scale import EVALATLAS, timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rev", help="the revision to compare with (e.g. main~3)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        base = d / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", args.rev, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        sources = {args.rev: str(base / "src"), "this checkout": str(HERE.parent / "src")}
        cases = {
            "compare 2 x 50,000": (2, 50_000, ["compare", "agent-000-with-a-longish-name",
                                               "agent-001-with-a-longish-name", "-f", "json"]),
            "report 20 x 50,000": (20, 50_000, ["report", "-o", str(d / "r.html")]),
        }
        print("| case | source | median wall s (runs) | peak RSS MB |")
        print("|---|---|---|---|")
        for name, (agents, tasks, cmd) in cases.items():
            db = d / "s.duckdb"
            build_store(db, agents, tasks)
            runs: dict[str, list[tuple[float, float]]] = {k: [] for k in sources}
            for _ in range(args.repeats):
                for k, src in sources.items():
                    runs[k].append(timed([EVALATLAS, "--db", str(db), *cmd],
                                         env=dict(os.environ, PYTHONPATH=src)))
            for k, rs in runs.items():
                print(f"| {name} | {k} | {statistics.median(w for w, _ in rs):.2f} "
                      f"({', '.join(f'{w:.2f}' for w, _ in rs)}) | "
                      f"{max(m for _, m in rs):.0f} |", flush=True)
            db.unlink()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
