"""Benchmark: ``summary`` and ``atlas fit --model 1pl`` over 10M-100M episodes (issue 23).

The episodes come from :mod:`gen_episodes_parquet` (500 agents, 20,000 tasks, 1-10
attempts; see its docstring for exactly what is synthetic). For each store given, each
case runs in a fresh process, ``--repeats`` times:

- ``cli-summary``: ``evalatlas --db STORE summary --format json`` (output to /dev/null);
- ``api-summary``: ``ea.summary(ea.open(STORE))`` in a Python process;
- ``atlas-fit-1pl``: ``evalatlas --db STORE atlas fit --model 1pl --format json``.

Wall time is the process's, start to exit (imports included). Peak memory is the
process's own ``VmHWM`` (``/proc/self/status``), read by an ``atexit`` hook inside the
measured process just before it exits: the peak resident set of that process alone
(``ru_maxrss`` of a child is not used: Linux counts the forked parent's pages in it),
and its CPU seconds (user + system, all its threads: DuckDB's included), which say more
than wall time when other engineers' jobs share the 2 cores.
The machine's load average is printed beside each figure (2 cores, shared).
``--baseline SRC`` runs every case a second time, alternating with the current one (same
load), with another evalatlas source tree first on ``PYTHONPATH`` (the code before the
change: ``git archive <rev> src | tar -x -C DIR`` gives ``DIR/src``).

A store is a ``.duckdb`` file or a lake URL (``ducklake:PATH.ducklake``,
``ducklake:postgres:<libpq string>``), as ``--db`` takes it. ``--make-lake PARQUET LAKE
DATA`` first makes a lake from the generator's Parquet files (registered in place with
``ducklake_add_data_files``): ``LAKE`` is a DuckDB-file catalog (``PATH.ducklake``) or a
PostgreSQL catalog (``ducklake:postgres:...``, an empty database of a server such as
``pg_cluster.py``'s).

Run::

    .venv/bin/python benchmarks/gen_episodes_parquet.py --episodes 10000000 \\
        --out /work/scale/10m --duckdb /work/scale/10m.duckdb
    .venv/bin/python benchmarks/bench_scale.py \\
        --make-lake /work/scale/10m /work/scale/10m.ducklake /work/scale/10m-lake-data
    .venv/bin/python benchmarks/bench_scale.py --repeats 3 --store /work/scale/10m.duckdb \\
        --store ducklake:/work/scale/10m.ducklake
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRELUDE = """
import atexit, os, sys
def _peak():
    t = os.times()
    with open({out!r}, "w") as fh:
        fh.write(open("/proc/self/status").read())
        fh.write(f"CPU: {{t.user + t.system}}\\n")
atexit.register(_peak)
"""

CASES = {
    "cli-summary": """
sys.argv = ["evalatlas", "--db", {store!r}, "summary", "--format", "json"]
from evalatlas.cli.main import main
main()
""",
    "api-summary": """
import evalatlas as ea
store = ea.open({store!r}, read_only=True)
result = ea.summary(store)
print(len(result.rows), "rows")
""",
    "atlas-fit-1pl": """
sys.argv = ["evalatlas", "--db", {store!r}, "atlas", "fit", "--model", "1pl",
            "--format", "json"]
from evalatlas.cli.main import main
main()
""",
}


def vm_hwm_mb(status: str) -> float:
    """``VmHWM`` of a ``/proc/<pid>/status`` text, in MB."""
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise ValueError("no VmHWM line")


def run_case(case: str, store: str, out_dir: Path, src: str | None = None
             ) -> dict[str, float | int | str]:
    """One fresh process of ``case`` on ``store``: wall seconds, peak MB, load. ``src``:
    run that evalatlas source tree instead (the baseline, on ``PYTHONPATH``)."""
    status = out_dir / f"{case}.status"
    status.unlink(missing_ok=True)
    code = PRELUDE.format(out=str(status)) + CASES[case].format(store=store)
    env = dict(os.environ, PYTHONPATH=src) if src else None
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{case} on {store} failed ({proc.returncode}): "
                         f"{proc.stderr[-2000:]}")
    text = status.read_text()
    cpu = float(text.rsplit("CPU: ", 1)[1])
    return {"case": case, "store": store, "code": "baseline" if src else "current",
            "wall_s": wall, "cpu_s": cpu, "peak_mb": vm_hwm_mb(text), "load_1min": load}


def make_lake(parquet: Path, lake: str | Path, data: Path) -> float:
    """A lake holding the generator's Parquet files (:mod:`gen_episodes_parquet`), made by
    the store's own lake code (``ea.open(location, data_path=data)`` creates the tables);
    the episode files are registered in place with DuckLake's ``ducklake_add_data_files``
    (nothing is copied), the small tables inserted. ``lake``: a catalog file
    (``PATH.ducklake``, a DuckDB-file catalog) or a location, ``ducklake:PATH`` or
    ``ducklake:postgres:<libpq string>`` (an existing, empty PostgreSQL database:
    ``pg_cluster.py createdb``). Returns the seconds it took."""
    import duckdb

    import evalatlas as ea
    from evalatlas.store.lake import ALIAS, load_extensions
    from evalatlas.store.lake_location import LakeLocation, is_lake

    location = str(lake) if is_lake(lake) else f"ducklake:{lake}"
    loc = LakeLocation.parse(location)
    t0 = time.perf_counter()
    data.mkdir(parents=True, exist_ok=True)
    ea.open(location, data_path=str(data)).close()
    con = duckdb.connect()
    load_extensions(con, loc.kind)
    con.execute(f"ATTACH '{location}' AS {ALIAS}")
    for f in sorted((parquet / "episodes").glob("*.parquet")):
        con.execute(f"CALL ducklake_add_data_files('{ALIAS}', 'episodes', '{f}')")
    for table in ("experiments", "ingest_batches"):
        con.execute(f"INSERT INTO {ALIAS}.{table} SELECT * FROM "
                    f"read_parquet('{parquet / (table + '.parquet')}')")
    con.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", action="append", default=[],
                    help="a .duckdb file, ducklake:PATH.ducklake or "
                         "ducklake:postgres:<libpq string> (repeatable)")
    ap.add_argument("--case", action="append", choices=sorted(CASES),
                    help="cases to run (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", metavar="SRC",
                    help="also run each case with this evalatlas source folder first on "
                         "PYTHONPATH (e.g. `git archive <rev> src | tar -x -C DIR`)")
    ap.add_argument("--json", type=Path, help="also write every run here")
    ap.add_argument("--make-lake", nargs=3, metavar=("PARQUET", "LAKE", "DATA"),
                    help="first make a lake from the generator's Parquet folder; LAKE: a "
                         "PATH.ducklake catalog file or a ducklake:postgres:<libpq> location")
    args = ap.parse_args()
    if args.make_lake:
        from evalatlas.records.redact import redact_text

        parquet, lake, data = args.make_lake
        secs = make_lake(Path(parquet), lake, Path(data))
        print(f"lake {redact_text(lake)}: made in {secs:.1f} s")
    cases = args.case or list(CASES)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        srcs = [None, args.baseline] if args.baseline else [None]
        for case in cases:
            for _ in range(args.repeats):
                for store in args.store:  # stores take turns: load drifts hit each alike
                    for src in srcs:  # baseline and current alternate, same load
                        r = run_case(case, store, Path(tmp), src)
                        runs.append(r)
                        print(json.dumps(r), flush=True)
    print(f"\n{'store':<34} {'code':<8} {'case':<14} {'median s':>9} {'CPU s':>7} "
          f"{'median MB':>10} {'load':>5}")
    for store in args.store:
        for case in cases:
            for code in ("current", "baseline"):
                rs = [r for r in runs if r["store"] == store and r["case"] == case
                      and r["code"] == code]
                if rs:
                    print(f"{store[-34:]:<34} {code:<8} {case:<14} "
                          f"{statistics.median(r['wall_s'] for r in rs):>9.1f} "
                          f"{statistics.median(r['cpu_s'] for r in rs):>7.1f} "
                          f"{statistics.median(r['peak_mb'] for r in rs):>10.0f} "
                          f"{statistics.median(r['load_1min'] for r in rs):>5.1f}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
