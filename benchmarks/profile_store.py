"""Where a command's time goes on one store, statement by statement (issue 23: where a
lake, and a PostgreSQL-catalog lake in particular, costs more than a DuckDB file).

One process: open the store (timed), then run ``ea.summary(store)`` or
``atlas.fit(store, model="1pl", save=True)`` (what ``evalatlas summary`` and
``evalatlas atlas fit --model 1pl`` compute, without rendering) with the store's
connection wrapped so that every ``execute`` is timed: wall seconds and the process's CPU
seconds (user + system, all threads: DuckDB's included) spent inside it, i.e. running
the statement to its materialised result. Statements are named by the ``evalatlas.store``
function that ran them and their first words. The rest of the command's time (fetching
results into numpy/Arrow, the Python analysis, imports done lazily) is printed as
"outside SQL". Run it on the stores to compare in turn, same machine, same load::

    .venv/bin/python benchmarks/profile_store.py --case summary \\
        --store /work/scale/pg100m/100m.duckdb \\
        --store ducklake:/work/scale/pg100m/100m.ducklake \\
        --store "ducklake:postgres:dbname=atlas100m host=127.0.0.1 port=PORT user=postgres"

``atlas-fit-1pl`` saves a fit into the store (as the CLI does): use a copy of shared data.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from typing import Any


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _caller() -> str:
    """The innermost ``evalatlas/store`` frame's function (else the innermost evalatlas
    one) that issued the statement."""
    frames = traceback.extract_stack()[:-2]  # without this function and execute
    for part in ("evalatlas/store/", "evalatlas/"):
        for f in reversed(frames):
            if part in f.filename.replace(os.sep, "/"):
                mod = f.filename.replace(os.sep, "/").split("evalatlas/", 1)[1]
                return f"{mod.removesuffix('.py').replace('/', '.')}.{f.name}"
    return "?"


class TimedConnection:
    """Forwards everything to ``con``; ``execute`` is timed and recorded in ``log``."""

    def __init__(self, con: Any, log: list[dict[str, Any]]) -> None:
        self._con = con
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def execute(self, sql: str, parameters: Any = None) -> Any:
        w0, c0 = time.perf_counter(), _cpu()
        try:
            return self._con.execute(sql, parameters) if parameters is not None \
                else self._con.execute(sql)
        finally:
            self._log.append({"where": _caller(),
                              "sql": re.sub(r"\s+", " ", sql.strip())[:70],
                              "wall_s": time.perf_counter() - w0, "cpu_s": _cpu() - c0})


def profile(store_location: str, case: str) -> dict[str, Any]:
    import evalatlas as ea

    log: list[dict[str, Any]] = []
    w0, c0 = time.perf_counter(), _cpu()
    store = ea.open(store_location, read_only=(case == "summary"))
    opened = {"wall_s": time.perf_counter() - w0, "cpu_s": _cpu() - c0}
    store.con = TimedConnection(store.con, log)
    w1, c1 = time.perf_counter(), _cpu()
    if case == "summary":
        ea.summary(store)
    else:
        from evalatlas import atlas

        atlas.fit(store, model="1pl", save=True)
    total = {"wall_s": time.perf_counter() - w1, "cpu_s": _cpu() - c1}
    store.con = store.con._con
    store.close()
    sql_wall = sum(r["wall_s"] for r in log)
    sql_cpu = sum(r["cpu_s"] for r in log)
    return {"store": store_location, "case": case, "open": opened, "run": total,
            "statements": log, "sql": {"wall_s": sql_wall, "cpu_s": sql_cpu,
                                       "count": len(log)},
            "outside_sql": {"wall_s": total["wall_s"] - sql_wall,
                            "cpu_s": total["cpu_s"] - sql_cpu},
            "load_1min": os.getloadavg()[0]}


def _print(p: dict[str, Any], top: int) -> None:
    print(f"\n== {p['store']}  {p['case']}  (load {p['load_1min']:.1f})")
    print(f"{'open':<60} {p['open']['wall_s']:>8.2f} {p['open']['cpu_s']:>8.2f}")
    rows = sorted(p["statements"], key=lambda r: -r["wall_s"])
    for r in rows[:top]:
        print(f"{r['where'][:34]:<34} {r['sql'][:25]:<25} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f}")
    rest = rows[top:]
    if rest:
        print(f"{f'{len(rest)} more statements':<60} {sum(r['wall_s'] for r in rest):>8.2f} "
              f"{sum(r['cpu_s'] for r in rest):>8.2f}")
    print(f"{'all SQL (' + str(p['sql']['count']) + ' statements)':<60} "
          f"{p['sql']['wall_s']:>8.2f} {p['sql']['cpu_s']:>8.2f}")
    print(f"{'outside SQL (fetch, Python)':<60} {p['outside_sql']['wall_s']:>8.2f} "
          f"{p['outside_sql']['cpu_s']:>8.2f}")
    print(f"{'run (after open)':<60} {p['run']['wall_s']:>8.2f} {p['run']['cpu_s']:>8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", action="append", required=True,
                    help="a .duckdb file or a ducklake: location (repeatable: run in turn)")
    ap.add_argument("--case", choices=["summary", "atlas-fit-1pl"], default="summary")
    ap.add_argument("--top", type=int, default=12, help="statements listed (slowest first)")
    ap.add_argument("--json", help="also write every statement's timing here")
    args = ap.parse_args()
    print(f"{'':<60} {'wall s':>8} {'CPU s':>8}", file=sys.stderr)
    out = []
    for location in args.store:
        p = profile(location, args.case)
        _print(p, args.top)
        out.append(p)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
