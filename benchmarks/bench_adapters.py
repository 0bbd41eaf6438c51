"""Ingest through the adapters (the columnar write path) against the earlier code and
against the baselines issue 27 names, interleaved run by run in the same session.

Inputs (each measured as ``evalatlas ingest`` does it, :func:`ingest_paths` into a fresh
store, in a fresh interpreter after one warm-up ingest, so interpreter start-up and
imports are excluded; CPU is the process's, all threads):

- ``swebench``: the SWE-bench Verified fixture folder (20 systems x 500 instances);
- ``terminal-bench``: the Terminal-Bench fixture folder (10 x 80 x 5);
- ``inspect``: an Inspect ``mockllm`` log of ``--samples`` x ``--epochs`` x 2 scorers
  (made by ``bench_inspect.generate``; needs the ``bench`` extra), against
  ``inspect_ai.analysis.samples_df()`` on the same log; the stored per-sample scores and
  tokens are checked equal to ``samples_df``'s first;
- ``evallog``: 10,000 EvalLog episode directories (10 experiments x 1,000, made by
  ``bench_ingest.extras_inputs``) against a bare loop that only reads and ``json.loads``
  every file of them.

``--floor`` adds the write path alone: the same ingest with the records read and
validated before the clock starts (what no adapter change can go below); an adapter
that hands over rows (``Adapter.rows``) is read as the ingest reads it, inside
``handing_over_rows``.

``--baseline-src OLD/src`` adds the same ingest with evalatlas imported from another tree
(the code before the columnar path); the stored rows of both are checked equal (every
column but the batch number). Medians of ``--runs``.

Usage::

    .venv/bin/python benchmarks/bench_adapters.py --runs 5 --baseline-src /tmp/base/src
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent.parent / "shared" / "fixtures"

CHILD = r"""
import json, os, sys, time
kind, src, db = sys.argv[1], sys.argv[2], sys.argv[3]
def ingest(path, db):
    try:
        from evalatlas.store.db import StoreConnection
    except ImportError:  # a baseline tree from before the rename (3e3e56d: Store)
        from evalatlas.store.db import Store as StoreConnection
    from evalatlas.store.ingest import ingest_paths
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [path])
    return rep.episodes
def samples_df(path, db):
    from inspect_ai.analysis import samples_df
    return len(samples_df(path, quiet=True))
def bare(path, db):
    n = 0
    for root, _, files in os.walk(path):
        for name in files:
            if name.endswith(".json"):
                with open(os.path.join(root, name), "rb") as fh:
                    json.loads(fh.read())
                n += 1
    return n
def floor(path):
    # the write path's floor: ingest whose adapter hands over the records it read and
    # validated before the clock started (flattening, Arrow, DuckDB insert, commit,
    # opening and closing the store: what no adapter change can remove)
    import contextlib, dataclasses
    from pathlib import Path
    import evalatlas.store.ingest as ing
    from evalatlas.adapters import registry
    try:  # adapters that hand over rows read as the ingest reads them
        from evalatlas.records.strict import handing_over_rows
    except ImportError:
        handing_over_rows = None
    def read_all(p, a):
        rows = getattr(a, "rows", False) and handing_over_rows is not None
        with handing_over_rows() if rows else contextlib.nullcontext():
            return list(a.read(p))
    read = {str(p): read_all(p, a) for p, a in (
        s for s in registry.plan([Path(path)], None, []) if isinstance(s, tuple))}
    def plan(paths, fmt, skipped):
        for p, a in registry.plan(paths, fmt, skipped):
            items = read[str(p)]
            yield p, dataclasses.replace(a, read=lambda _, items=items: iter(items))
    ing.plan = plan
    return ingest
fn = floor(src) if kind == "floor" else {"ingest": ingest, "samples_df": samples_df,
                                         "bare": bare}[kind]
fn(src, db + ".warm")  # warm-up: imports, caches, the file in the page cache
t0, c0 = time.perf_counter(), time.process_time()
n = fn(src, db)
print(json.dumps({"n": n, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""


def child(kind: str, src: Path, db: Path, code: Path | None = None) -> dict:
    for p in (db, Path(f"{db}.warm")):
        for suffix in ("", ".wal"):
            Path(f"{p}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)} if code is not None else None
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(src), str(db)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def stored_rows(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows but the batch numbers and times, sorted, JSON cells parsed."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    out = {}
    try:
        for table in ("experiments", "episodes", "measurements", "quarantine"):
            described = [r[:2] for r in con.execute(f"DESCRIBE {table}").fetchall()
                         if r[0] not in ("ingest_batch", "batch_id", "rejected_at",
                                         "problem_key")]
            rows = con.execute(f"SELECT {', '.join(c for c, _ in described)} "
                               f"FROM {table}").fetchall()
            out[table] = sorted((tuple(json.loads(v) if t == "JSON" and v is not None
                                       else v for (_, t), v in zip(described, r, strict=True))
                                 for r in rows), key=repr)
    finally:
        con.close()
    return out


def inspect_input(data: Path, samples: int, epochs: int) -> Path:
    sys.path.insert(0, str(HERE))
    from bench_inspect import generate

    return generate(data / "inspect", samples, epochs)


def check_inspect(db: Path, log: Path) -> int:
    """The stored per-sample scores and tokens equal samples_df's; returns the count."""
    import duckdb

    sys.path.insert(0, str(HERE))
    from bench_inspect import inspect_rows

    theirs = inspect_rows(log)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT task_id, attempt, scores, prompt_tokens, completion_tokens, "
                       "total_tokens FROM episodes").fetchall()
    con.close()
    ours = {}
    for task, attempt, scores, p, c, t in rows:
        s = json.loads(scores)
        ours[(task, (attempt or 0) + 1)] = (s.get("match"), s.get("includes"), p, c, t)
    assert ours == theirs, "stored per-sample scores or tokens differ from samples_df()"
    return len(ours)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", default="swebench,terminal-bench,inspect,evallog")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--floor", action="store_true",
                    help="also time the write path alone (records read and validated "
                    "before the clock starts): the least any adapter change can reach")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="keep generated inputs here (default: a temporary folder)")
    args = ap.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-adapters-"))
    data.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-adapters-db-"))
    base = args.baseline_src.resolve() if args.baseline_src else None
    try:
        for name in args.inputs.split(","):
            if name == "swebench":
                src, other = FIXTURES / "swebench-verified", None
            elif name == "terminal-bench":
                src, other = FIXTURES / "terminal-bench", None
            elif name == "inspect":
                src, other = inspect_input(data, args.samples, args.epochs), "samples_df"
            elif name == "evallog":
                sys.path.insert(0, str(HERE))
                from bench_ingest import extras_inputs

                src, other = extras_inputs(data)[1], "bare"
            else:
                raise SystemExit(f"unknown input {name!r}")
            kinds = [("evalatlas", "ingest", None)]
            if args.floor:
                kinds.append(("floor", "floor", None))
            if base is not None:
                kinds.append(("baseline", "ingest", base))
            if other is not None:
                kinds.append((other, other, None))
            runs: dict[str, list[dict]] = {k: [] for k, _, _ in kinds}
            for _ in range(args.runs):
                for label, kind, code in kinds:
                    runs[label].append(child(kind, src, work / f"{label}.duckdb", code))
            n = runs["evalatlas"][0]["n"]
            checked = ""
            if base is not None:
                same = stored_rows(work / "evalatlas.duckdb") == stored_rows(
                    work / "baseline.duckdb")
                assert same, f"{name}: stored rows differ from the baseline's"
                checked = "; stored rows equal to the baseline's"
            if name == "inspect":
                same_n = check_inspect(work / "evalatlas.duckdb", src)
                checked += f"; stored scores and tokens of {same_n:,} samples equal samples_df()'s"
            load = os.getloadavg()
            print(f"\n{name}: {src} ({n:,} episodes), {args.runs} interleaved runs, load "
                  f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}{checked}")
            med = {k: (statistics.median(r["wall"] for r in v),
                       statistics.median(r["cpu"] for r in v)) for k, v in runs.items()}
            for label, (wall, cpu) in med.items():
                ratio = ""
                if label == "floor":
                    ratio = (f"  (the write path alone: {cpu / med['evalatlas'][1]:.0%} of "
                             "evalatlas's CPU)")
                elif label != "evalatlas":
                    ratio = (f"  evalatlas is {wall / med['evalatlas'][0]:.2f}x faster (wall), "
                             f"{cpu / med['evalatlas'][1]:.2f}x (CPU)")
                print(f"  {label:11s} median wall {wall:7.3f} s, CPU {cpu:7.3f} s{ratio}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
