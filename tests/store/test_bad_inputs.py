"""The bad-input corpus: each case gets its exact, located error; the rest is ingested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.errors import Problem
from evalatlas.store.db import Store
from evalatlas.store.ingest import ingest_paths

GOOD = {"experiment_id": "e1", "task_id": "t", "reward": 1.0}


def rec(**kw: object) -> str:
    return json.dumps({**GOOD, **kw})


# name -> (file content, expected (line, record, field, reason), good episodes in the file)
CASES: dict[str, tuple[bytes, tuple[int | None, str | None, str | None, str], int]] = {
    "truncated.jsonl": (
        (rec(trajectory_id="ok") + "\n" + '{"experiment_id": "e1", "task_id"').encode(),
        (2, None, None, "invalid JSON: Expecting ':' delimiter (column 34)"), 1),
    "wrong_type.jsonl": (
        (rec(trajectory_id="a", n_steps="many") + "\n").encode(),
        (1, "a", "n_steps",
         "n_steps: Input should be a valid integer, unable to parse string as an integer"), 0),
    "nan.jsonl": (
        b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":NaN}\n',
        (1, None, "reward", "non-finite number NaN in field 'reward' is not valid JSON"), 0),
    "infinity.jsonl": (
        b'{"experiment_id":"e1","task_id":"t","trajectory_id":"a","reward":1,'
        b'"usage":{"total_cost_usd":-Infinity}}\n',
        (1, None, "usage.total_cost_usd",
         "non-finite number -Infinity in field 'usage.total_cost_usd' is not valid JSON"), 0),
    "negative_tokens.jsonl": (
        (rec(trajectory_id="a", usage={"completion_tokens": -5}) + "\n").encode(),
        (1, "a", "usage.completion_tokens",
         "usage.completion_tokens: Input should be greater than or equal to 0"), 0),
    "missing_field.jsonl": (
        (json.dumps({"experiment_id": "e1", "trajectory_id": "a", "reward": 1}) + "\n").encode(),
        (1, "a", "task_id", "task_id: required field is missing"), 0),
    "unknown_field.jsonl": (
        (rec(trajectory_id="a", rewrad=1) + "\n").encode(),
        (1, "a", "rewrad", "rewrad: unknown field (not part of the record contract)"), 0),
    "duplicate_ids.jsonl": (
        (rec(trajectory_id="a") + "\n" + rec(trajectory_id="a", reward=0.0) + "\n").encode(),
        (2, "a", "trajectory_id",
         "duplicate trajectory_id within this file (first at line 1); this line was not "
         "ingested"), 1),
    "path_escape.jsonl": (
        (rec(trajectory_id="../../etc/passwd") + "\n").encode(),
        (1, "../../etc/passwd", "trajectory_id",
         "trajectory_id: Value error, trajectory_id '../../etc/passwd' contains '..' or is "
         "'.', which could escape"), 0),
    "non_utf8.jsonl": (
        rec(trajectory_id="a").encode()[:-2] + b'\xff"}\n'
        + (rec(trajectory_id="b") + "\n").encode(),
        (1, None, None, "not UTF-8: byte 0xff at offset 74"), 1),
    "empty.jsonl": (b"", (None, None, None, "empty file"), 0),
    "zero_byte_line.jsonl": (
        (rec(trajectory_id="a") + "\n\n" + rec(trajectory_id="b") + "\n").encode(),
        (2, None, None, "empty line (0-byte record)"), 2),
    "not_an_object.jsonl": (b"[1, 2, 3]\n", (1, None, None, "expected a JSON object, got list"), 0),
}


def _only(problems: list[Problem], name: str) -> Problem:
    mine = [p for p in problems if Path(p.file or "").name == name]
    assert len(mine) == 1, mine
    return mine[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Problem], Store]:
    d = tmp_path_factory.mktemp("bad")
    for name, (content, _, _) in CASES.items():
        (d / name).write_bytes(content)
    (d / "directory.jsonl").mkdir()
    huge = rec(trajectory_id="huge", output_text="x" * (50 * 1024 * 1024))
    (d / "huge_line.jsonl").write_text(huge + "\n" + rec(trajectory_id="after") + "\n")
    store = Store(d / "store.duckdb")
    paths = sorted(p for p in d.iterdir() if p.suffix == ".jsonl")
    report = ingest_paths(store, paths)
    report.max_problems = 1000
    problems = [Problem(r["source_file"], r["reason"], r["field"], r["line"], r["record"])
                for r in store.query("SELECT * FROM quarantine")]
    return d, problems, store, report


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_input_has_its_exact_error(corpus: tuple, name: str) -> None:
    problems = corpus[1]
    p = _only(problems, name)
    assert (p.line, p.record, p.field, p.reason) == CASES[name][1]


def test_directory_named_like_a_file(corpus: tuple) -> None:
    p = _only(corpus[1], "directory.jsonl")
    assert p.reason == "is a directory, expected a .jsonl file"


def test_fifty_megabyte_line(corpus: tuple) -> None:
    p = _only(corpus[1], "huge_line.jsonl")
    assert p.line == 1
    assert p.reason.endswith("bytes, over the 16,777,216-byte limit for one record (raise it "
                             "with --max-line-bytes)")


def test_the_rest_of_the_input_is_ingested(corpus: tuple) -> None:
    _, problems, store, report = corpus
    expected = sum(n for _, _, n in CASES.values()) + 1  # + "after" in the huge-line file
    assert report.episodes == expected
    assert report.rejected == len(problems) == len(CASES) + 2
    # Files share experiment "e1", so equal trajectory ids are one stored episode.
    got = {r["trajectory_id"] for r in store.query("SELECT trajectory_id FROM episodes")}
    assert got == {"ok", "a", "b", "after"}
