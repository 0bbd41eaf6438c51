"""Upper bound of a JSONL pipeline without Arrow staging (issue 27, session 21): a
prototype, not evalatlas' ingest.

Each preparing thread inserts a whole row group of the file (a ~128 MB chunk) straight
from DuckDB's typed ``read_json`` into ``episodes`` in a transaction of its own (the same
staging query as the fast path, a row with a problem stopping the statement), while
msgspec checks the chunk beside it; the main thread commits the transactions in file
order. Left out, so that this bounds what such a design could gain: the redaction gate,
the duplicate check across chunks, the batch rows, costs priced at commit, mixed files,
replacing stored rows and every fallback (a chunk msgspec does not vouch for stops it).

``PROTO_MEMORY_LIMIT`` (DuckDB's budget, default 512MB), ``PROTO_SLOTS`` (row groups in
flight, default 3) and ``PROTO_COMMIT=own`` (each preparing thread commits its own
transaction as soon as its chunk is checked, in any order, so that no transaction stays
open holding an uncompressed row group) vary it, per ``--variant``. Interleaved with the
real ingest (``ingest_paths``), each in a fresh process::

    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/proto_direct_insert.py \\
        DATA/episodes_1000000.jsonl --repeats 3 \\
        --variant 'own384:PROTO_COMMIT=own;PROTO_MEMORY_LIMIT=384MB;PROTO_SLOTS=2'
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROTOTYPE = r"""
import hashlib, json, os, resource, sys, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
t0 = time.perf_counter()
from evalatlas.adapters.jsonl import iter_file_chunks
from evalatlas.store.db import StoreConnection
from evalatlas.store.fast_jsonl import sql
from evalatlas.store.fast_jsonl.checker import vouch
src, db = sys.argv[1], sys.argv[2]
store = StoreConnection(db)
con = store.con
budget = os.environ.get("PROTO_MEMORY_LIMIT", "512MB")
con.execute(f"SET threads = 1; SET memory_limit = '{budget}'; SET checkpoint_threshold = '128MB'")
tmpdir = tempfile.mkdtemp()
OWN = os.environ.get("PROTO_COMMIT") == "own"  # each thread commits its own, in any order
check = vouch()
shape = ThreadPoolExecutor(1)

def prepare(chunk, seq):
    tmp = os.path.join(tmpdir, f"c{seq}.jsonl")
    Path(tmp).write_bytes(chunk.view)
    vouched = shape.submit(check, chunk.data, chunk.n_lines, chunk.size)
    cur = con.cursor()
    cur.execute("SET enable_progress_bar = false")
    typed = f'''(SELECT * EXCLUDE (ordinality), ordinality + {chunk.first_line - 1} AS _line,
        true AS _types_ok, false AS _bad_list, false AS _bad_scores,
        {sql.free_flags(100, huge_in=("findings",))}
        FROM read_json('{tmp}', format='newline_delimited', columns={sql.PLAIN_COLUMNS},
                       maximum_object_size=2000000) WITH ORDINALITY)'''
    cur.execute("BEGIN")
    hashes = cur.execute(f'''INSERT INTO episodes BY NAME
        SELECT * EXCLUDE (_line, _problem), usage_model AS llm_model,
          {sql.sql_str(src)} AS source_file, {seq} AS ingest_batch
        FROM ({sql.select_rows(typed)})
        WHERE CASE WHEN _problem IS NULL THEN true ELSE error(_problem) END
        RETURNING {sql.key_hash()} AS h''').fetchnumpy()["h"]
    os.unlink(tmp)
    if vouched.result() != []:
        raise SystemExit("a chunk msgspec does not vouch for: the prototype stops")
    if OWN:
        cur.execute("COMMIT")
    return cur, len(hashes)

pool = ThreadPoolExecutor(2)
slots = threading.Semaphore(int(os.environ.get("PROTO_SLOTS", "3")))
jobs = []

def feed():
    chunks = iter_file_chunks(src, src, chunk_bytes=128 << 20, hasher=hashlib.sha256())
    for seq, chunk in enumerate(chunks):
        slots.acquire()
        jobs.append(pool.submit(prepare, chunk, seq))
    jobs.append(None)

feeder = threading.Thread(target=feed)
feeder.start()
i = n = 0
while True:
    while len(jobs) <= i:
        time.sleep(0.001)
    if jobs[i] is None:
        break
    cur, k = jobs[i].result()
    if not OWN:
        cur.execute("COMMIT")
    cur.close()
    n, i = n + k, i + 1
    slots.release()
feeder.join()
store.close()
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": u.ru_utime + u.ru_stime,
                  "rss": u.ru_maxrss / 1024, "n": n}))
"""

INGEST = r"""
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
with StoreConnection(sys.argv[2]) as store:
    n = ingest_paths(store, [Path(sys.argv[1])]).episodes
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": u.ru_utime + u.ru_stime,
                  "rss": u.ru_maxrss / 1024, "n": n}))
"""


WARM_UP = ("import duckdb, msgspec, numpy, pandas, pyarrow.compute, pyarrow.dataset; "
           "import evalatlas.store.ingest, evalatlas.store.fast_jsonl.checker")
"""Imported once before the runs, compiling their bytecode (not measured)."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", type=Path, help="a JSONL file of episodes only")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:ENV=VALUE;ENV=VALUE, a prototype run with those settings "
                         "(repeatable; default: one with the defaults)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="proto-direct-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # as bench_ingest (child_env)
    subprocess.run([sys.executable, "-c", WARM_UP], check=True, env=env)
    variants = [("ingest", INGEST, {})]
    for v in args.variant or ["prototype:"]:
        name, _, envs = v.partition(":")
        variants.append((name, PROTOTYPE, dict(e.split("=") for e in envs.split(";") if e)))
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    for _ in range(args.repeats):
        for name, code, extra in variants:
            db = work / f"{name}.duckdb"
            for suffix in ("", ".wal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            out = subprocess.run([sys.executable, "-c", code, str(args.src), str(db)],
                                 capture_output=True, text=True, check=True,
                                 env={**env, **extra})
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(name, {k: round(v, 2) for k, v in runs[name][-1].items()}, flush=True)
    for name, rs in runs.items():
        print(f"median {name}:", {k: round(statistics.median(r[k] for r in rs), 2)
                                  for k in ("wall", "cpu", "rss")})


if __name__ == "__main__":
    main()
