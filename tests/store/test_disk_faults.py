"""The store on a full or read-only disk, and the fast path with a full $TMPDIR (issue
#28 point 3): one-line errors, the data before the ingest plus whole batches, reading
commands still working, a re-run completing the work."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.errors import StoreError
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

runner = CliRunner()


def _runs(path: Path, n: int, start: int = 0, text: int = 200) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        if start == 0:
            fh.write(json.dumps({"experiment_id": "e1", "experiment_name": "x",
                                 "benchmark_name": "b", "benchmark_subset": {
                                     "name": "all", "n_tasks": n},
                                 "agent": {"name": "a"}}) + "\n")
        for t in range(start, start + n):
            fh.write(json.dumps({"experiment_id": "e1", "task_id": f"t{t}",
                                 "trajectory_id": f"tr-{t}", "reward": float(t % 3 == 0),
                                 "output_text": f"{t} " + "y" * text}) + "\n")
    return path


def _leave_free(disk: Path, free: int) -> Path:
    """Fill ``disk`` so that ``free`` bytes are left; the filler file, to delete later."""
    st = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - free))
    return filler


def _counts(db: Path) -> tuple[int, int]:
    """(episodes stored, episodes the batch records say were written)."""
    with StoreConnection(db, read_only=True) as s:
        return (s.count("episodes"),
                int(s.query("SELECT coalesce(sum(n_episodes), 0) AS n "
                            "FROM ingest_batches")[0]["n"]))


@pytest.mark.parametrize("fast", [False, True], ids=["exact", "fast"])
def test_a_full_disk_keeps_whole_batches_and_a_rerun_completes(
        tmp_path: Path, small_tmpfs, fast: bool) -> None:  # type: ignore[no-untyped-def]
    disk = small_tmpfs("64m")
    db = disk / "s.duckdb"
    first = _runs(tmp_path / "first.jsonl", 50)
    with StoreConnection(db) as s:
        ingest_paths(s, [first], fast=False)
    filler = _leave_free(disk, 1 << 20)  # a few batches fit, not all
    big = _runs(tmp_path / "big.jsonl", 40_000, start=50)
    with StoreConnection(db) as s, pytest.raises(StoreError) as info:
        ingest_paths(s, [big], fast=fast, fast_min_bytes=0, batch_size=4000)
    msg = str(info.value)
    assert msg.startswith(f"no space left on the device holding {disk} (writing the "
                          f"store {db})"), msg
    assert "\n" not in msg
    stored, recorded = _counts(db)
    assert stored == recorded  # every stored episode belongs to a whole, recorded batch
    assert stored >= 50 and stored < 40_050
    filler.unlink()  # room again: the same command completes the work
    with StoreConnection(db) as s:
        report = ingest_paths(s, [big], fast=fast, fast_min_bytes=0, batch_size=4000)
    assert report.rejected == 0
    assert _counts(db) == (40_050, 40_050)


def test_a_full_disk_through_the_cli(tmp_path: Path, small_tmpfs) -> None:  # type: ignore[no-untyped-def]
    disk = small_tmpfs("8m")
    _leave_free(disk, 1 << 20)
    db = disk / "s.duckdb"
    big = _runs(tmp_path / "big.jsonl", 30_000)
    r = runner.invoke(app, ["--db", str(db), "ingest", str(big)])
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert lines[-1].startswith(f"error: no space left on the device holding {disk} "
                                f"(writing the store {db})"), r.output
    assert "Traceback" not in r.output and "Exception" not in r.output


@pytest.mark.usefixtures("chunked_only")  # the whole-file try stages nothing
def test_a_full_tmpdir_sends_the_fast_path_to_the_exact_one(
        tmp_path: Path, small_tmpfs, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    tmp = small_tmpfs("64k")
    with open(tmp / "fill", "wb", buffering=0) as fh:  # full to the last byte
        try:
            while True:
                fh.write(b"x" * 512)
        except OSError:
            pass
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    runs = _runs(tmp_path / "runs.jsonl", 3000)
    with StoreConnection(tmp_path / "s.duckdb") as s:
        report = ingest_paths(s, [runs], fast=True, fast_min_bytes=0)
        assert s.count("episodes") == 3000
    assert report.episodes == 3000 and report.rejected == 0
    assert report.fast_path_declined, "the fast path could not stage: it said so"
    assert all("no space left on the device" in d or "cannot stage" in d
               for d in report.fast_path_declined), report.fast_path_declined
    assert sorted(p.name for p in tmp.iterdir()) == ["fill"]  # no chunk folder left


def test_a_read_only_file_system(tmp_path: Path, read_only_mount) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "s.duckdb"
    runs = _runs(tmp_path / "runs.jsonl", 20)
    r = runner.invoke(app, ["--db", str(db), "ingest", str(runs)])
    assert r.exit_code == 0, r.output
    read_only_mount(folder)
    r = runner.invoke(app, ["--db", str(db), "ingest", str(runs), "--force"])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == (f"error: cannot write the store {db}: read-only (read-only "
                                "file system); reading commands (summary, report, export "
                                "...) still work on it")
    r = runner.invoke(app, ["--db", str(db), "summary", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"][0]["episodes"] == 20
    r = runner.invoke(app, ["--db", str(db), "export", "jsonl", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 0, r.output


def test_a_read_only_folder_as_an_unprivileged_user(tmp_path: Path, as_nobody) -> None:  # type: ignore[no-untyped-def]
    folder, run = as_nobody
    db = folder / "s.duckdb"
    runs = _runs(folder / "runs.jsonl", 20)
    runs.chmod(0o644)
    r = runner.invoke(app, ["--db", str(db), "ingest", str(runs)])
    assert r.exit_code == 0, r.output
    db.chmod(0o644)  # root's file in root's folder: nobody may read, not write
    cli = [sys.executable, "-m", "evalatlas.cli.main", "--db", str(db)]
    out = run([*cli, "ingest", str(runs), "--force"])
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (f"error: cannot write the store {db}: read-only "
                                  "(permission denied); reading commands (summary, report, "
                                  "export ...) still work on it")
    out = run([*cli, "summary", "--format", "json"])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rows"][0]["episodes"] == 20
    new = folder / "locked"
    new.mkdir(mode=0o755)
    out = run([sys.executable, "-m", "evalatlas.cli.main", "--db", str(new / "n.duckdb"),
               "ingest", str(runs)])
    assert out.returncode == 2, out.stderr
    assert "cannot write the store" in out.stderr and "read-only" in out.stderr
    assert list(new.iterdir()) == []
