"""A throwaway PostgreSQL server for the lake tests (issue 23).

``initdb`` into a temporary folder, a free port on 127.0.0.1, the unix socket in that
folder, stopped and removed at the end: no system service is needed. PostgreSQL refuses
to run as root, so under root (CI) the cluster runs as ``nobody`` (``runuser``). Without
the binaries the tests that need the server are skipped with one reason; with ``CI=true``
they fail (CI installs Debian's ``postgresql``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def in_ci() -> bool:
    """As tests/conftest.py's: ``CI`` set to a true value."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def postgres_bin() -> Path | None:
    """The folder of ``initdb``/``pg_ctl``: on PATH, else Debian's newest
    /usr/lib/postgresql/<major>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    for d in reversed(dirs):
        if Path(d, "initdb").exists() and Path(d, "pg_ctl").exists():
            return Path(d)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One PostgreSQL server of the tests' own: ``conninfo(db)`` for libpq strings."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="evalatlas-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, "nobody")
            self.as_user = ["runuser", "-u", "nobody", "--"]
        self._run([str(bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                   "--auth=trust", "-E", "UTF8", "--no-sync"])
        self.start()

    def _run(self, cmd: list[str]) -> None:
        out = subprocess.run([*self.as_user, *cmd], capture_output=True, text=True,
                             timeout=120, check=False)
        if out.returncode:
            raise RuntimeError(f"{cmd[0]} failed: {out.stderr or out.stdout}")

    def start(self) -> None:
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l",
                   str(self.root / "log"), "-w", "-o",
                   f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=200", "start"])

    def stop(self) -> None:
        self._run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                   "-w", "stop"])

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"dbname={dbname} host=127.0.0.1 port={self.port} user=postgres"

    def create_database(self, name: str) -> str:
        """A new empty database; returns its libpq string."""
        psql = self.bindir / "psql"
        cmd = [str(psql) if psql.exists() else "psql", "-h", "127.0.0.1", "-p",
               str(self.port), "-U", "postgres", "-d", "postgres", "-c",
               f'CREATE DATABASE "{name}"']
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        if out.returncode:
            raise RuntimeError(f"CREATE DATABASE {name} failed: {out.stderr}")
        return self.conninfo(name)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _need_postgres() -> Path:
    bindir = postgres_bin()
    if bindir is None:
        if in_ci():
            pytest.fail("PostgreSQL binaries (initdb, pg_ctl) not found; CI installs Debian's "
                        "postgresql package (.ci/run)")
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found (apt-get install "
                    "postgresql); with CI=true this is an error")
    return bindir


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgCluster]:
    """A PostgreSQL server for the whole session (skipped without the binaries)."""
    cluster = PgCluster(_need_postgres())
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def own_postgres() -> Iterator[PgCluster]:
    """A PostgreSQL server of one test's own (it may stop it)."""
    cluster = PgCluster(_need_postgres())
    try:
        yield cluster
    finally:
        cluster.close()


_counter = [0]


@pytest.fixture
def pg_lake(postgres: PgCluster, tmp_path: Path) -> tuple[str, Path]:
    """A fresh lake location on the session's server (its own database) and a data path:
    ``("ducklake:postgres:dbname=... host=... port=...", data_dir)``."""
    _counter[0] += 1
    conninfo = postgres.create_database(f"lake_{os.getpid()}_{_counter[0]}")
    data = tmp_path / "lake-data"
    data.mkdir()
    return f"ducklake:postgres:{conninfo}", data


@pytest.fixture
def chunked_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast JSONL path chunk by chunk, its whole-file try
    (``store/fast_jsonl/whole.py``) off: for tests of the chunked path's own mechanics
    (groups, budgets, chunk counts), which the whole-file try would otherwise skip."""
    from evalatlas.store.fast_jsonl import whole

    monkeypatch.setattr(whole, "eligible", lambda *args: False)
