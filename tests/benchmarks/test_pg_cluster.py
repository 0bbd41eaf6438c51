"""benchmarks/pg_cluster.py: the PostgreSQL server a benchmark lake's catalog lives in,
kept in a folder between runs (started, stopped and started again with its data)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "pg_cluster.py"


def _script():
    spec = importlib.util.spec_from_file_location("_pg_cluster", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder for the cluster that ``nobody`` can reach when the tests run as root
    (pytest's tmp_path is private to root), removed at the end; skipped without the
    PostgreSQL binaries, failed with ``CI=true`` (as tests/store/conftest.py)."""
    conftest = _script().tests_pg_helpers()
    if conftest.postgres_bin() is None:
        if conftest.in_ci():
            pytest.fail("PostgreSQL binaries (initdb, pg_ctl) not found; CI installs them")
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found")
    top = Path(tempfile.mkdtemp(prefix="evalatlas-pgbench-"))
    os.chmod(top, 0o755)
    try:
        yield top / "pg"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_cluster_keeps_its_databases_across_a_stop_and_a_start(root: Path) -> None:
    try:
        started = _run("start", str(root))
        assert started.returncode == 0, started.stderr
        port = (root / "port").read_text()
        assert started.stdout.strip() == f"dbname=postgres host=127.0.0.1 port={port} user=postgres"
        made = _run("createdb", str(root), "atlas")
        assert made.returncode == 0, made.stderr
        assert made.stdout.strip() == f"dbname=atlas host=127.0.0.1 port={port} user=postgres"
        assert _run("status", str(root)).stdout.strip() == f"running; port {port}"
        assert _run("stop", str(root)).returncode == 0
        stopped = _run("status", str(root))
        assert (stopped.returncode, stopped.stdout.strip()) == (3, f"stopped; port {port}")
        assert _run("start", str(root)).returncode == 0  # same folder, same port
        names = _script().Cluster(root).psql("SELECT datname FROM pg_database ORDER BY 1")
        assert "atlas" in names.split()
    finally:
        _run("stop", str(root))


def test_createdb_without_a_name_is_refused(tmp_path: Path) -> None:
    out = _run("createdb", str(tmp_path / "pg"))
    assert out.returncode == 2 and "createdb needs a database NAME" in out.stderr
    assert not (tmp_path / "pg").exists()
