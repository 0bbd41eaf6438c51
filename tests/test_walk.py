"""The safe tree walk: no symlink out of the tree or twice, nothing but regular files."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.walk import TreeWalk, walk_files

GOOD = {"experiment_id": "e1", "task_id": "t", "reward": 1.0}


def _jsonl(path: Path, *ids: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**GOOD, "trajectory_id": i}) + "\n" for i in ids))
    return path


@pytest.fixture
def hostile_tree(tmp_path: Path) -> Path:
    """A tree with one good file per directory and every kind of walk hazard."""
    root = tmp_path / "tree"
    outside = tmp_path / "outside"
    _jsonl(root / "a" / "good.jsonl", "a1", "a2")
    _jsonl(root / "b" / "good.jsonl", "b1")
    _jsonl(outside / "secret.jsonl", "leak")
    os.symlink(root, root / "a" / "loop")                      # loop back to the root
    os.symlink(root / "a", root / "b" / "again")               # a second name of a/
    os.symlink(outside, root / "out_dir")                      # directory outside
    os.symlink(outside / "secret.jsonl", root / "out.jsonl")   # file outside
    os.symlink("/dev/zero", root / "zero.jsonl")               # device outside
    os.symlink(root / "missing.jsonl", root / "broken.jsonl")  # dangling
    os.symlink(root / "a" / "good.jsonl", root / "twice.jsonl")  # same file again
    os.mkfifo(root / "pipe.jsonl")                             # would block a read
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "s.jsonl"))
    except OSError:  # path too long for AF_UNIX on some systems
        pass
    finally:
        sock.close()
    return root


def _reasons(skipped: list) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in skipped}


def test_walk_files_rules(hostile_tree: Path) -> None:
    w = TreeWalk(hostile_tree)
    files = list(walk_files(hostile_tree, walk=w))
    rel = sorted(str(p.relative_to(hostile_tree)) for p in files)
    # a/good.jsonl is reached by two names (a/ and twice.jsonl): read once.
    assert len(rel) == 2
    assert "b/good.jsonl" in rel
    reasons = _reasons(w.skipped)
    assert "same directory" in reasons["loop"]
    assert "same directory" in reasons["again"]
    assert reasons["out_dir"].startswith("symlink leaves the tree")
    assert reasons["out.jsonl"].startswith("symlink leaves the tree")
    assert reasons["zero.jsonl"] == "symlink leaves the tree (-> /dev/zero)"
    assert reasons["broken.jsonl"].startswith("broken symlink")
    assert reasons["pipe.jsonl"] == "a FIFO (named pipe), not a regular file"
    if (hostile_tree / "s.jsonl").exists():
        assert reasons["s.jsonl"] == "a socket, not a regular file"


def test_walk_files_keep_filter_reports_only_candidates(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "p.py")
    os.mkfifo(tmp_path / "p.log")
    w = TreeWalk(tmp_path)
    got = list(walk_files(tmp_path, keep=lambda p: p.suffix == ".py", walk=w))
    assert got == [tmp_path / "x.py"]
    assert [Path(s.path).name for s in w.skipped] == ["p.py"]


def test_explicit_symlinked_root_is_followed(tmp_path: Path) -> None:
    real = _jsonl(tmp_path / "real" / "r.jsonl", "r")
    os.symlink(real.parent, tmp_path / "link")
    assert list(walk_files(tmp_path / "link")) == [tmp_path / "link" / "r.jsonl"]


@pytest.mark.timeout(20)
def test_ingest_of_a_hostile_tree_stores_the_good_and_names_the_skipped(
    hostile_tree: Path, tmp_path: Path
) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        report = ingest_paths(store, [hostile_tree])
        ids = {r["trajectory_id"] for r in store.query("SELECT trajectory_id FROM episodes")}
    assert ids == {"a1", "a2", "b1"}  # nothing from outside, nothing twice
    assert report.episodes == 3
    reasons = _reasons(report.skipped)
    for name in ("loop", "again", "out_dir", "out.jsonl", "zero.jsonl", "broken.jsonl",
                 "pipe.jsonl"):
        assert name in reasons, (name, reasons)
    assert report.to_dict()["skipped"]


@pytest.mark.timeout(20)
def test_explicit_fifo_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    _jsonl(tmp_path / "ok.jsonl", "ok")
    os.mkfifo(tmp_path / "p.jsonl")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        report = ingest_paths(store, [tmp_path / "p.jsonl", tmp_path / "ok.jsonl"])
        assert store.count("episodes") == 1
    assert report.problems[0].reason.startswith("a FIFO (named pipe), not a regular file")
    assert "ingest - <" in report.problems[0].reason
