"""``--wait SECONDS`` (issue #28 point 5): before or after the subcommand, honoured by
every command that opens the store, reading or writing. Readers retry while another
process holds the lock; they do not read a copy."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.store.db import set_default_wait

runner = CliRunner()

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])          # the write lock, as an ingest holds it
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    runs = tmp_path / "runs.jsonl"
    lines = [{"experiment_id": "e1", "experiment_name": "x", "benchmark_name": "b",
              "benchmark_subset": {"name": "all", "n_tasks": 3}, "agent": {"name": "a"}}]
    lines += [{"experiment_id": "e1", "task_id": f"t{i}", "trajectory_id": f"r{i}",
               "reward": float(i % 2)} for i in range(3)]
    runs.write_text("".join(json.dumps(x) + "\n" for x in lines))
    db = tmp_path / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "ingest", str(runs)])
    assert r.exit_code == 0, r.output
    return db


def _hold(db: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalatlas.cli.main", *args],
                          capture_output=True, text=True, timeout=300)


def test_without_wait_a_held_store_fails_at_once_and_says_how_to_wait(store: Path) -> None:
    holder = _hold(store, 30)
    try:
        started = time.monotonic()
        out = _cli("--db", str(store), "summary")
        assert out.returncode == 2
        assert out.stderr.startswith(f"error: store {store} is in use by another process; "
                                     "retry later or pass --wait SECONDS")
        assert time.monotonic() - started < 20
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("args", [
    ["--wait", "60", "summary", "--format", "json"],        # a reader, --wait first
    ["summary", "--format", "json", "--wait", "60"],        # a reader, --wait after
    ["atlas", "abilities", "--format", "json", "--wait=60"],  # through the Python API
    ["export", "jsonl", "-", "--wait", "60"],                # a subcommand of a group
    ["quarantine", "--clear", "--wait", "60"],              # a writer
], ids=["before", "after", "atlas", "export", "writer"])
def test_wait_retries_until_the_lock_is_released(store: Path, args: list[str]) -> None:
    holder = _hold(store, 3)
    try:
        out = _cli("--db", str(store), *args)
        assert out.returncode == 0, out.stderr
        assert holder.poll() is not None  # it really had to wait for the holder
    finally:
        holder.kill()
        holder.wait()


def test_wait_gives_up_after_the_seconds_given(store: Path) -> None:
    holder = _hold(store, 60)
    try:
        started = time.monotonic()
        out = _cli("--db", str(store), "summary", "--wait", "2")
        took = time.monotonic() - started
        assert out.returncode == 2
        assert "is in use by another process (waited 2 s)" in out.stderr
        assert took >= 2
    finally:
        holder.kill()
        holder.wait()


def test_the_python_api_default_wait(store: Path) -> None:
    import evalatlas as ea

    holder = _hold(store, 2)
    try:
        ea.set_default_wait(30)
        with ea.open(store, read_only=True) as s:
            assert s.count("episodes") == 3
    finally:
        set_default_wait(0)
        holder.kill()
        holder.wait()
    with pytest.raises(ea.ArgumentError, match="seconds must be a number >= 0"):
        ea.set_default_wait(-1)
