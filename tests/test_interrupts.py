"""Ctrl-C and SIGTERM during ingest (fast and exact path), export and report (issue #28
point 4): a short "interrupted" line, exit 130 / 143, the store holding whole batches,
no temporary file or chunk folder left, and a re-run that completes without duplicates.

Each case runs the real command in a subprocess and signals it once it is provably in
the middle of its work (a batch committed, a chunk folder or a temporary file present).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evalatlas.safe_write import TEMP_SUFFIX
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

N = 60_000
N_EXACT = 30_000
N_WHOLE = 240_000


def _runs(path: Path, n: int = N, experiment: bool = True) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        if experiment:  # a mixed file: the fast path takes it chunk by chunk
                fh.write(json.dumps({"experiment_id": "e1", "experiment_name": "x",
                                 "benchmark_name": "b", "benchmark_subset": {
                                     "name": "all", "n_tasks": n},
                                 "agent": {"name": "a"}}) + "\n")
        for t in range(n):
            fh.write(json.dumps({"experiment_id": "e1", "task_id": f"t{t}",
                                 "trajectory_id": f"tr-{t}", "reward": float(t % 3 == 0),
                                 "output_text": f"{t} " + "y" * 120}) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Over the fast path's 8 MB threshold."""
    return _runs(tmp_path_factory.mktemp("runs") / "runs.jsonl")


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Episodes only, 4x as many: the fast path's whole-file try takes it in one
    statement of about a second."""
    return _runs(tmp_path_factory.mktemp("runs") / "episodes.jsonl", N_WHOLE,
                 experiment=False)


@pytest.fixture(scope="module")
def small_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Under the fast path's threshold: the exact path, about 4 s of work."""
    return _runs(tmp_path_factory.mktemp("runs") / "small.jsonl", N_EXACT)


@pytest.fixture(scope="module")
def full_store(tmp_path_factory: pytest.TempPathFactory, runs: Path) -> Path:
    db = tmp_path_factory.mktemp("store") / "s.duckdb"
    with StoreConnection(db) as s:
        ingest_paths(s, [runs])
    return db


CHUNKED_CLI = ("import evalatlas.store.fast_jsonl.whole as w; w.eligible = lambda *a: False; "
               "from evalatlas.cli.main import main; main()")
"""The CLI with the fast JSONL path chunk by chunk (its whole-file try off, as
``tests/store/conftest.chunked_only``)."""


def _cli(db: Path, *args: str, env: dict[str, str] | None = None,
         chunked: bool = False) -> subprocess.Popen[str]:
    cli = ["-c", CHUNKED_CLI] if chunked else ["-m", "evalatlas.cli.main"]
    return subprocess.Popen([sys.executable, *cli, "--db", str(db),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def _signal_when(proc: subprocess.Popen[str], ready: Callable[[], bool], sig: int,
                 timeout: float = 120.0) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"finished before it could be interrupted: {proc.returncode}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("never reached the point to interrupt")
        time.sleep(0.005)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def _opened(pid: int, path: Path) -> int:
    """How many of the process's file descriptors have ``path`` open (Linux)."""
    n = 0
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                n += os.readlink(fd) == str(path)
    return n


def _interrupted(code: int, err: str, sig: int) -> None:
    assert code == 128 + sig, err
    assert "Traceback" not in err and "Exception" not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines[-1].startswith("interrupted ("), err


def _consistent(db: Path) -> int:
    """Stored episodes of an ingest into an empty store, checked to be whole recorded
    batches."""
    with StoreConnection(db, read_only=True) as s:
        stored = s.count("episodes")
        recorded = s.query("SELECT coalesce(sum(n_episodes), 0) AS n FROM ingest_batches")
    assert stored == int(recorded[0]["n"])
    return stored


def _batches(db: Path) -> Callable[[], bool]:
    """True once batches are being written (the log, or row groups in the file, grow)."""
    wal = Path(f"{db}.wal")
    return lambda: ((wal.exists() and wal.stat().st_size > 300_000)
                    or (db.exists() and db.stat().st_size > 3_000_000))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("path", ["exact", "fast", "chunked"])
def test_ingest_interrupted_then_completed(tmp_path: Path, runs: Path, small_runs: Path,
                                           episodes: Path, sig: int, path: str) -> None:
    """``fast``: the fast path's whole-file try (one statement, interrupted while it
    writes row groups: nothing stored); ``chunked``: the fast path chunk by chunk."""
    db = tmp_path / "s.duckdb"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    source, n = {"exact": (small_runs, N_EXACT), "fast": (episodes, N_WHOLE),
                 "chunked": (runs, N)}[path]
    args = ["ingest", str(source), "--batch-size", "2000"]
    env = {"TMPDIR": str(tmp)}
    proc = _cli(db, *args, env=env, chunked=path == "chunked")
    if path == "exact":
        ready = _batches(db)
    elif path == "fast":
        def ready() -> bool:  # DuckDB's statement and the checking thread read the file
            return _opened(proc.pid, source) >= 2
    else:
        def ready() -> bool:  # chunks being staged and checked (the file is one group)
            return any(p.name.startswith("evalatlas-chunk-") for p in tmp.iterdir())
    code, err = _signal_when(proc, ready, sig)
    _interrupted(code, err, sig)
    stored = _consistent(db)
    if path == "fast":
        assert stored == 0  # one transaction: all or nothing
    else:
        assert stored < n if path == "chunked" else 0 < stored < n
    assert list(tmp.iterdir()) == []  # no chunk folder left
    done = subprocess.run([sys.executable, "-m", "evalatlas.cli.main", "--db", str(db),
                           "ingest", str(source)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)
    assert done.returncode == 0, done.stderr
    with StoreConnection(db, read_only=True) as st:  # every episode once (re-written ones replaced)
        assert st.query("SELECT count(*) AS n, count(DISTINCT trajectory_id) AS d "
                        "FROM episodes") == [{"n": n, "d": n}]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_export_interrupted_leaves_nothing(tmp_path: Path, full_store: Path,
                                           sig: int) -> None:
    out = tmp_path / "out"
    out.mkdir()

    def writing() -> bool:
        return any(p.name.endswith(TEMP_SUFFIX) and p.stat().st_size > 0
                   for p in out.iterdir())

    code, err = _signal_when(_cli(full_store, "export", "jsonl", str(out / "x.jsonl")),
                             writing, sig)
    _interrupted(code, err, sig)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_report_interrupted_leaves_nothing(tmp_path: Path, full_store: Path,
                                           sig: int) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A report leaves no trace while it computes, so "in the middle" is a time: half of
    # an uninterrupted run of the same command on this machine now (a fixed 2 s was
    # after the end on an idle machine, where the whole report takes under 2 s). On a
    # machine whose speed changes between the two runs, half of the first can come after
    # the second's end: a run that finished whole (the signal came too late, not what
    # this test is about) is tried again with the signal at half that time, four times.
    started = time.monotonic()
    whole = _cli(full_store, "report", "-o", str(tmp_path / "whole.html"))
    assert whole.wait(timeout=300) == 0, whole.communicate()[1]
    at = (time.monotonic() - started) / 2
    (tmp_path / "whole.html").unlink()
    for _ in range(4):
        due = time.monotonic() + at
        code, err = _signal_when(_cli(full_store, "report", "-o", str(out / "r.html")),
                                 lambda due=due: time.monotonic() > due, sig)
        if code != 0:
            break
        assert (out / "r.html").is_file(), err  # finished whole before the signal
        (out / "r.html").unlink()
        at /= 2
    _interrupted(code, err, sig)
    assert list(out.iterdir()) == []
