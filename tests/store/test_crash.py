"""A SIGKILLed ingest leaves whole batches only; re-running ends with exact counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from evalatlas.store.db import StoreConnection

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
N = 20_000
BATCH = 2_000

SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.ingest import ingest_paths

    def progress(source, n):
        print(n, flush=True)

    with StoreConnection(sys.argv[1]) as store:
        ingest_paths(store, [Path(sys.argv[2])], batch_size=int(sys.argv[3]),
                     on_progress=progress, fast=sys.argv[4] == "fast")
    print("done", flush=True)
""")


@pytest.fixture(scope="module")
def big_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(BENCH))
    from synth import write_jsonl

    return write_jsonl(tmp_path_factory.mktemp("crash") / "big.jsonl", N, n_agents=5,
                       n_tasks=4000)


def _run(db: Path, src: Path, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(db), str(src), str(BATCH), mode],
                            stdout=subprocess.PIPE, text=True)


def _kill_after(proc: subprocess.Popen, stored: int) -> None:
    """SIGKILL the ingest once it reports at least ``stored`` episodes; fail if it
    finished first (then the test would check nothing)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip().isdigit() and int(line) >= stored:
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "ingest finished before it could be killed"


def test_sigkill_mid_ingest_keeps_whole_batches(tmp_path: Path, big_jsonl: Path) -> None:
    db = tmp_path / "s.duckdb"
    proc = _run(db, big_jsonl, "exact")
    _kill_after(proc, 3 * BATCH + 500)
    with StoreConnection(db) as store:
        n = store.count("episodes")
        committed = store.query("SELECT coalesce(sum(n_episodes), 0) AS n FROM ingest_batches")
        assert n == committed[0]["n"]
        assert n % BATCH == 0 and 0 < n < N
    proc = _run(db, big_jsonl, "exact")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "done" in out
    with StoreConnection(db) as store:
        assert store.count("episodes") == N
        assert store.count("quarantine") == 0
        dup = store.query("SELECT count(*) - count(DISTINCT (experiment_id, trajectory_id)) "
                          "AS d FROM episodes")
        assert dup[0]["d"] == 0


def test_sigkill_during_fast_path_is_all_or_nothing(tmp_path: Path, big_jsonl: Path) -> None:
    db = tmp_path / "s.duckdb"
    proc = _run(db, big_jsonl, "fast")
    assert proc.stdout is not None
    proc.stdout.readline()  # the ingest has started
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    with StoreConnection(db) as store:
        assert store.count("episodes") in (0, N)
    proc = _run(db, big_jsonl, "fast")
    proc.communicate(timeout=300)
    with StoreConnection(db) as store:
        assert store.count("episodes") == N


CHUNKED = textwrap.dedent("""
    import sys
    from pathlib import Path
    from evalatlas.adapters import jsonl_stream
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.fast_jsonl import whole
    from evalatlas.store.ingest import ingest_paths

    jsonl_stream.ROW_GROUP_LINES = int(sys.argv[4])
    whole.eligible = lambda *args: False  # the chunked path (see conftest.chunked_only)

    def progress(source, n):
        print(n, flush=True)

    with StoreConnection(sys.argv[1]) as store:
        ingest_paths(store, [Path(sys.argv[2])], on_progress=progress, fast=True,
                     chunk_bytes=int(sys.argv[3]))
    print("done", flush=True)
""")


@pytest.mark.parametrize("group_lines", [122_880, 4096])
def test_sigkill_between_fast_chunks_keeps_whole_groups(
        tmp_path: Path, big_jsonl: Path, monkeypatch: pytest.MonkeyPatch,
        group_lines: int) -> None:
    """The pipelined fast path (chunks prepared while earlier ones commit) commits one
    group of chunks per transaction: a kill leaves a prefix of whole groups, and a rerun
    completes. Chunks of 1 MiB are too few lines to fill 122,880-row groups, so each
    commits alone; with 4,096-row groups, four chunks commit together."""
    from evalatlas.adapters import jsonl_stream
    from evalatlas.adapters.jsonl import iter_file_chunks

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", group_lines)
    chunk_bytes = 1 << 20
    sizes, open_ = [], 0
    for c in iter_file_chunks(big_jsonl, "x", chunk_bytes=chunk_bytes):
        open_ += c.n_lines
        if c.closes:
            sizes.append(open_)
            open_ = 0
    prefixes = {sum(sizes[:i]) for i in range(len(sizes) + 1)}
    assert len(sizes) >= 4
    if group_lines == 4096:
        assert set(sizes[:-1]) == {4096}
    db = tmp_path / "s.duckdb"
    cmd = [sys.executable, "-c", CHUNKED, str(db), str(big_jsonl), str(chunk_bytes),
           str(group_lines)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    _kill_after(proc, sizes[0])
    left = list(Path(tempfile.gettempdir()).glob(f"evalatlas-chunk-{proc.pid}-*"))
    with StoreConnection(db) as store:
        n = store.count("episodes")
        batches = store.query("SELECT n_episodes FROM ingest_batches ORDER BY batch_id")
    assert n in prefixes and 0 < n < N
    assert [b["n_episodes"] for b in batches] == sizes[:len(batches)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-2000:]
    assert left and not any(d.exists() for d in left)  # the rerun removed its chunk files
    with StoreConnection(db) as store:
        assert store.count("episodes") == N
        dup = store.query("SELECT count(*) - count(DISTINCT (experiment_id, trajectory_id)) "
                          "AS d FROM episodes")
        assert dup[0]["d"] == 0
