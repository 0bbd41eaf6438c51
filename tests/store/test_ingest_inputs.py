"""Ingest of compressed files and stdin, limits, unchanged-file skips, store faults, --wait."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.errors import StoreError
from evalatlas.records.limits import ReadLimits
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

GOOD = {"experiment_id": "e1", "task_id": "t", "reward": 1.0}
runner = CliRunner()


def lines(*ids: str) -> bytes:
    return "".join(json.dumps({**GOOD, "trajectory_id": i}) + "\n" for i in ids).encode()


def stored(store: StoreConnection) -> set[str]:
    return {r["trajectory_id"] for r in store.query("SELECT trajectory_id FROM episodes")}


def test_gzip_and_zstd_jsonl_in_a_tree(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(lines("g1", "g2")))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines("z1")))
    (tmp_path / "c.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00broken")  # corrupt gzip
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [tmp_path])
        assert stored(store) == {"g1", "g2", "z1"}
    assert [p.reason.startswith("cannot read (stopped here)") for p in rep.problems] == [True]


def test_stdin_plain_and_gzip(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "ingest", "-"], input=lines("s1", "s2"))
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["--db", str(db), "ingest", "-"], input=gzip.compress(lines("s3")))
    assert r.exit_code == 0, r.output
    with StoreConnection(db) as store:
        assert stored(store) == {"s1", "s2", "s3"}
        assert {r["source_file"] for r in store.query("SELECT source_file FROM episodes")} == {
            "<stdin>"}


def test_utf8_bom_keeps_the_first_record(tmp_path: Path) -> None:
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + lines("first", "second"))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [tmp_path / "bom.jsonl"])
        assert stored(store) == {"first", "second"} and rep.rejected == 0


@pytest.mark.parametrize("fast", [False, True])
def test_line_limit_is_measured_while_streaming(tmp_path: Path, fast: bool) -> None:
    big = json.dumps({**GOOD, "trajectory_id": "big", "output_text": "x" * 5000}) + "\n"
    p = tmp_path / "x.jsonl"
    p.write_bytes(lines("a") + big.encode() + lines("b"))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [p], fast=fast, limits=ReadLimits(max_line_bytes=1000))
        assert stored(store) == {"a", "b"}
    assert rep.problems[0].line == 2
    assert rep.problems[0].reason.startswith(f"line is {len(big) - 1:,} bytes, over the 1,000")


def test_file_and_record_limits(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(lines("a", "b"))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [p], limits=ReadLimits(max_file_bytes=10))
        assert store.count("episodes") == 0
    assert "over the 10-byte limit (raise it with --max-file-bytes)" in rep.problems[0].reason


def test_unchanged_files_are_skipped_and_the_store_does_not_grow(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(lines(*[f"t{i}" for i in range(2000)]))
    db = tmp_path / "s.duckdb"
    with StoreConnection(db) as store:
        ingest_paths(store, [p])
    size = db.stat().st_size
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [p])
        assert rep.unchanged == [str(p)] and rep.episodes == 0 and rep.batches == 0
    assert db.stat().st_size == size
    os.utime(p, ns=(time.time_ns(), time.time_ns()))  # touched, same bytes: still skipped
    with StoreConnection(db) as store:
        assert ingest_paths(store, [p]).unchanged == [str(p)]
        p.write_bytes(lines("new"))  # changed: read again
        rep = ingest_paths(store, [p])
        assert rep.unchanged == [] and rep.episodes == 1
        assert ingest_paths(store, [p], force=True).episodes == 1


def test_a_file_adapters_digest_from_the_thread_beside_the_read(tmp_path: Path,
                                                                monkeypatch) -> None:
    """A large file read by a file adapter (an Inspect log) is hashed in a thread while
    it is read: the stored digest is the file's SHA-256, and a touched file with the same
    bytes is still skipped by it; a small file is hashed in the ingest's own thread."""
    import hashlib
    import shutil

    from evalatlas.store.ingest import Sha256Beside

    big, small = tmp_path / "big.bin", tmp_path / "small.bin"
    big.write_bytes(os.urandom(Sha256Beside.THREAD_MIN_BYTES + 5))
    small.write_bytes(b"x" * 100)
    assert Sha256Beside(small).thread is None
    beside = Sha256Beside(big)
    assert beside.thread is not None
    assert beside.result() == hashlib.sha256(big.read_bytes()).hexdigest()
    assert Sha256Beside(small).result() == hashlib.sha256(b"x" * 100).hexdigest()

    log = tmp_path / "log.eval"
    shutil.copyfile(Path(__file__).resolve().parents[1] / "adapters" / "data"
                    / "mockllm_toy_zstd.eval", log)
    monkeypatch.setattr(Sha256Beside, "THREAD_MIN_BYTES", 1)  # this small log too
    with StoreConnection(tmp_path / "s.duckdb") as store:
        assert ingest_paths(store, [log]).episodes > 0
        (digest,) = store.con.execute("SELECT sha256 FROM files").fetchone()
        assert digest == hashlib.sha256(log.read_bytes()).hexdigest()
        os.utime(log, ns=(time.time_ns(), time.time_ns()))  # touched, same bytes: skipped
        assert ingest_paths(store, [log]).unchanged == [str(log)]


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_damaged_store_is_a_clean_error(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "s.duckdb"
    if damage == "garbage":
        db.write_bytes(os.urandom(5000))
    else:
        with StoreConnection(db) as store:
            ingest_paths(store, [])
        data = db.read_bytes()
        db.write_bytes(data[:8192])  # header kept, every block cut off
    with pytest.raises(StoreError) as err:
        StoreConnection(db)
    assert str(db) in str(err.value) and "mv " in str(err.value)
    r = runner.invoke(app, ["--db", str(db), "summary"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "damaged or not an evalatlas store" in r.output.replace("\n", " ")


def test_wait_retries_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    StoreConnection(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('locked', flush=True); time.sleep(1.5); c.close()", str(db)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match=r"in use by another process.*--wait SECONDS"):
            StoreConnection(db)
        t0 = time.monotonic()
        p = tmp_path / "x.jsonl"
        p.write_bytes(lines("w"))
        r = runner.invoke(app, ["--db", str(db), "ingest", str(p), "--wait", "20"])
        assert r.exit_code == 0, r.output
        assert time.monotonic() - t0 < 20
    finally:
        holder.wait(10)
    with StoreConnection(db) as store:
        assert stored(store) == {"w"}


def test_a_file_named_twice_in_one_ingest_is_read_once(tmp_path: Path) -> None:
    """A file read to its end is remembered in the transaction of the ingest's next
    write (not a commit of its own); until then a second mention of it in the same
    ingest is still found unchanged."""
    p = tmp_path / "x.jsonl"
    p.write_bytes(lines("a", "b"))
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [p, p])
        assert rep.unchanged == [str(p)] and rep.episodes == 2 and rep.batches == 1
        assert store.query("SELECT path, size FROM files") == [
            {"path": str(p.resolve()), "size": p.stat().st_size}]
        assert store.count("ingest_batches") == 1


@pytest.mark.parametrize("name", ["e.jsonl", "e.jsonl.gz"])
def test_a_jsonl_files_digest_is_of_its_bytes_on_disk(tmp_path: Path, name: str) -> None:
    """The stored digest of a JSONL input, plain or compressed, is that of its bytes on
    disk, which the next ingest compares a touched file with: it is skipped (a
    compressed file's was of its decompressed text, so a touched one was read again)."""
    import gzip
    import hashlib

    lines = b"".join(
        b'{"experiment_id": "e1", "task_id": "t%d", "trajectory_id": "r%d", "reward": 1}\n'
        % (i, i) for i in range(50))
    path = tmp_path / name
    path.write_bytes(gzip.compress(lines) if name.endswith(".gz") else lines)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        assert ingest_paths(store, [path]).episodes == 50
        (digest,) = store.con.execute("SELECT sha256 FROM files").fetchone()
        assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
        os.utime(path, ns=(time.time_ns(), time.time_ns()))  # touched, same bytes: skipped
        assert ingest_paths(store, [path]).unchanged == [str(path)]
