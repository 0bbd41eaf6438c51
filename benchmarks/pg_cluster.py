"""A PostgreSQL server for benchmarks that outlives one process (issue 23's lakes).

The tests and ``bench_lake.py`` start a throwaway cluster that lives as long as the test
session (``tests/store/conftest.py: PgCluster``: a temporary folder, removed at the end).
A 100M-episode lake's catalog has to survive between runs, so that the same lake can be
measured again later on a quiet machine: this keeps the cluster in a folder of your
choice and starts and stops it there, the same way (Debian's ``initdb``/``pg_ctl``,
``--auth=trust``, ``fsync=off``, listening on 127.0.0.1 only, the Unix socket in the
folder; under root it runs as ``nobody``, since PostgreSQL refuses root).

- ``start DIR [--port P]``: ``initdb`` into ``DIR/data`` the first time, then start it on
  ``P`` (default: the port used last time, kept in ``DIR/port``, else a free one).
  Prints the libpq string of the ``postgres`` database.
- ``stop DIR``: a fast shutdown (``pg_ctl -m fast``: the catalog is kept).
- ``status DIR``: running or not, and the port.
- ``createdb DIR NAME``: a new database; prints its libpq string (the lake's location is
  ``ducklake:postgres:<that string>``).

Example (the 100M PostgreSQL-catalog lake of BENCHMARKS.md)::

    .venv/bin/python benchmarks/pg_cluster.py start /work/scale/pg100m/pg
    .venv/bin/python benchmarks/pg_cluster.py createdb /work/scale/pg100m/pg atlas100m
    ...
    .venv/bin/python benchmarks/pg_cluster.py stop /work/scale/pg100m/pg
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tests_pg_helpers():  # the tests' cluster helpers (postgres_bin, PgCluster, free port),
    # loaded by path (tests/ is not a package); bench_lake.py uses them too
    spec = importlib.util.spec_from_file_location("pg_conftest",
                                                  REPO / "tests" / "store" / "conftest.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Cluster:
    """The PostgreSQL cluster kept in ``root`` (``root/data``, ``root/port``, ``root/log``)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.data = self.root / "data"
        mod = tests_pg_helpers()
        bindir = mod.postgres_bin()
        if bindir is None:
            raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install "
                             "postgresql")
        self.bindir: Path = bindir
        self._free_port = mod._free_port
        self.as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([*self.as_user, *cmd], capture_output=True, text=True,
                             timeout=600, check=False)
        if check and out.returncode:
            raise SystemExit(f"{Path(cmd[0]).name} failed: {(out.stderr or out.stdout).strip()}")
        return out

    @property
    def port(self) -> int | None:
        f = self.root / "port"
        return int(f.read_text()) if f.exists() else None

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"dbname={dbname} host=127.0.0.1 port={self.port} user=postgres"

    def running(self) -> bool:
        if not self.data.exists():
            return False
        return self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "status",
                         check=False).returncode == 0

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.as_user:
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, "nobody")
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "-E", "UTF8", "--no-sync")

    def start(self, port: int | None = None) -> None:
        if not self.data.exists():
            self.init()
        if self.running():
            print(f"already running on port {self.port}")
            return
        port = port or self.port or self._free_port()
        (self.root / "port").write_text(str(port))
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l",
                  str(self.root / "log"), "-w", "-o",
                  f"-p {port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c max_connections=200", "start")

    def stop(self) -> None:
        if not self.running():
            print("not running")
            return
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                  "stop")

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        psql = self.bindir / "psql"
        out = subprocess.run([str(psql) if psql.exists() else "psql", "-h", "127.0.0.1", "-p",
                              str(self.port), "-U", "postgres", "-d", dbname, "-Atc", sql],
                             capture_output=True, text=True, timeout=600, check=False)
        if out.returncode:
            raise SystemExit(f"psql failed: {out.stderr.strip()}")
        return out.stdout

    def createdb(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.conninfo(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="See the module docstring for an example.")
    ap.add_argument("action", choices=["start", "stop", "status", "createdb"])
    ap.add_argument("dir", type=Path, help="the cluster's folder (DIR/data, DIR/port)")
    ap.add_argument("name", nargs="?", help="createdb: the database's name")
    ap.add_argument("--port", type=int, help="start: this port (default: the last one)")
    args = ap.parse_args()
    if args.action == "createdb" and not args.name:
        ap.error("createdb needs a database NAME")
    cluster = Cluster(args.dir)
    if args.action == "start":
        cluster.start(args.port)
        print(cluster.conninfo())
    elif args.action == "stop":
        cluster.stop()
    elif args.action == "status":
        up = cluster.running()
        print(f"{'running' if up else 'stopped'}; port {cluster.port}")
        sys.exit(0 if up else 3)
    else:
        print(cluster.createdb(args.name))


if __name__ == "__main__":
    main()
