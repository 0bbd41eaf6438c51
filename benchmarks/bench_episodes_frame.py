"""``ea.summary(store.episodes())`` on a large store: peak RSS and time (issue 28.6).

Builds a store of ``--n`` synthetic episodes (``synth.py``: ~900 bytes each, 50 agents x
2,000 tasks x attempts; written as JSONL and ingested by evalatlas), then measures, each in
a fresh subprocess that reports its own peak RSS (``VmHWM``, :func:`measure.peak_kb`) and
wall seconds:

- ``store``: ``ea.summary(store)`` (the baseline: the same numbers without a frame);
- ``frame``: ``store.episodes()`` then ``ea.summary(frame)``, also the frame's own seconds;
- with ``--baseline-src OLD/src``: ``frame`` again with the code of another checkout
  (e.g. the commit before the change), imported from that tree by the same interpreter.

Each ``frame`` run's rows are checked equal to the ``store`` rows (floats to 1e-9).
Medians over ``--repeats``, the kinds interleaved.

Usage::

    .venv/bin/python benchmarks/bench_episodes_frame.py --n 2000000 --repeats 3 \\
        --baseline-src /tmp/wt-base/src
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from measure import same

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

CHILD = f"import sys; sys.path.insert(0, {str(HERE)!r})\n" + r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import evalatlas as ea
from measure import peak_kb
kind, db = sys.argv[2], sys.argv[3]
with ea.open(db, read_only=True) as store:
    t0 = time.perf_counter()
    frame_s = None
    if kind == "store":
        rows = ea.summary(store).rows
    else:
        frame = store.episodes()
        frame_s = time.perf_counter() - t0
        rows = ea.summary(frame).rows
    wall = time.perf_counter() - t0
print(json.dumps({"seconds": wall, "frame_seconds": frame_s, "rows": rows,
                  "peak_mb": peak_kb() / 1024,
                  "evalatlas": ea.__file__}))
"""


def build(n: int, data_dir: Path) -> Path:
    """The store of ``n`` synthetic episodes (reused when it is there)."""
    db = data_dir / f"frame-{n}.duckdb"
    if db.exists():
        return db
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(SRC))
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.ingest import ingest_paths
    from synth import write_jsonl

    src = write_jsonl(data_dir / f"frame-{n}.jsonl", n)
    t0 = time.perf_counter()
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [src])
    print(f"ingested {rep.episodes:,} episodes in {time.perf_counter() - t0:.1f} s",
          flush=True)
    src.unlink()
    return db


def run(src: Path, kind: str, db: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), kind, str(db)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/evalatlas-bench-frame"))
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the store for another run")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    db = build(args.n, args.data_dir)
    kinds = [("store", SRC, "store"), ("frame", SRC, "frame")]
    if args.baseline_src:
        kinds.append(("frame (baseline code)", args.baseline_src, "frame"))
    results: dict[str, list[dict[str, Any]]] = {k[0]: [] for k in kinds}
    for _ in range(args.repeats):
        for label, src, kind in kinds:
            results[label].append(run(src, kind, db))
    want = results["store"][0]["rows"]
    print(f"\n{args.n:,} episodes, medians of {args.repeats}\n")
    print("| measurement | wall s | of which store.episodes() s | peak RSS MB | "
          "rows equal to ea.summary(store) |")
    print("|---|---|---|---|---|")
    for label, runs in results.items():
        frame_s = [r["frame_seconds"] for r in runs if r["frame_seconds"] is not None]
        print(f"| {label} | {statistics.median(r['seconds'] for r in runs):.1f} | "
              f"{statistics.median(frame_s):.1f} | " if frame_s else
              f"| {label} | {statistics.median(r['seconds'] for r in runs):.1f} | - | ",
              end="")
        print(f"{statistics.median(r['peak_mb'] for r in runs):,.0f} | "
              f"{all(same(r['rows'], want) for r in runs)} |")
    if not args.keep:
        shutil.rmtree(args.data_dir)


if __name__ == "__main__":
    main()
