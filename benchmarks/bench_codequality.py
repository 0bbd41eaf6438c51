"""Code quality over a large real tree: evalatlas vs the radon CLI, in one run.

The radon CLI needs four commands for the metrics evalatlas computes in one pass
(``radon cc -j``, ``radon mi -j``, ``radon raw -j``, ``radon hal -j``); each parses every
file again in one process. evalatlas parses each file once and spreads files over worker
processes. Both read the same files (the installed standard library without
site-packages and the tests by default) and the same number of repetitions is taken of each; the
figure is the median wall time and the ratio evalatlas / radon.

    .venv/bin/python benchmarks/bench_codequality.py [--root PATH] [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from evalatlas.codequality import analyse_path

RADON = Path(sys.executable).with_name("radon")
EXCLUDE = [
    "*/site-packages/*", "*/test/*", "*/tests/*", "*/idle_test/*",
    # radon.raw.analyze is quadratic on very long logical lines: html/entities.py alone
    # takes 31 s in it (radon's own CLI calls it twice: raw and mi). Left out of *both*
    # sides so that one run fits in a few minutes; with them evalatlas gains more.
    "*/html/entities.py", "*/pydoc_data/topics.py", "*/_sysconfigdata_*.py",
    "*/pickletools.py",
]


def time_radon(root: str) -> float:
    t = time.perf_counter()
    for cmd in ("cc", "mi", "raw", "hal"):
        subprocess.run([str(RADON), cmd, "-j", "-e", ",".join(EXCLUDE), root], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def time_evalatlas(root: str, workers: int) -> tuple[float, int, int]:
    t = time.perf_counter()
    r = analyse_path(root, workers=workers, exclude=EXCLUDE)
    return time.perf_counter() - t, len(r.files), len(r.problems)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    ev, rd = [], []
    files = problems = 0
    for _ in range(args.repeat):  # interleaved so drift hits both alike
        e, files, problems = time_evalatlas(args.root, args.workers)
        ev.append(e)
        rd.append(time_radon(args.root))
    e_med, r_med = statistics.median(ev), statistics.median(rd)
    print(f"tree: {args.root} ({files} files analysed, {problems} skipped), "
          f"cores: {os.cpu_count()}, repeat: {args.repeat}")
    print(f"evalatlas codequality ({args.workers} workers): median {e_med:.2f} s "
          f"{[round(x, 2) for x in ev]}")
    print(f"radon cc+mi+raw+hal -j:              median {r_med:.2f} s "
          f"{[round(x, 2) for x in rd]}")
    print(f"ratio evalatlas / radon: {e_med / r_med:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
