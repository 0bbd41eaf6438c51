"""The bad-input corpus: each case gets its exact, located error; the rest is ingested."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.errors import Problem
from evalatlas.store.db import StoreConnection
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
        (1, "a", "n_steps", "n_steps: Value error, must be a JSON number or null, got str "
         "'many'"), 0),
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
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Problem], StoreConnection]:
    d = tmp_path_factory.mktemp("bad")
    for name, (content, _, _) in CASES.items():
        (d / name).write_bytes(content)
    (d / "directory.jsonl").mkdir()
    huge = rec(trajectory_id="huge", output_text="x" * (50 * 1024 * 1024))
    (d / "huge_line.jsonl").write_text(huge + "\n" + rec(trajectory_id="after") + "\n")
    store = StoreConnection(d / "store.duckdb")
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


# -- fast and exact paths agree on every hostile record --------------------------------
def _ep(tid: str, **kw: object) -> dict:
    return {**GOOD, "trajectory_id": tid, **kw}


def _line(d: dict) -> bytes:
    return json.dumps(d).encode()


_DEEP = '{"v": ' + "[" * 150 + "]" * 150 + "}"
_VERY_DEEP = '{"v": ' + "[" * 5000 + "]" * 5000 + "}"
_EXPERIMENT = {"experiment_id": "e1", "experiment_name": "e1", "benchmark_name": "b",
               "benchmark_subset": {"name": "b", "n_tasks": 3},
               "agent": {"name": "a", "llm_model": "gpt-4o", "config": {"m": 1}}}

# name -> (hostile line bytes, "stored" or the quarantined field (None: no field))
PARITY: dict[str, tuple[bytes, str | None]] = {
    "fractional_count": (_line(_ep("x", n_steps=2.5)), "n_steps"),
    "integral_float_count": (_line(_ep("x", n_steps=2.0)), "stored"),
    # booleans are not numbers, and our own format writes no number as a string
    "count_as_numeric_string": (_line(_ep("x", n_steps="5")), "n_steps"),
    "count_as_boolean": (_line(_ep("x", n_steps=True)), "n_steps"),
    "tokens_as_boolean": (_line(_ep("x", usage={"prompt_tokens": True})),
                          "usage.prompt_tokens"),
    "tokens_as_numeric_string": (_line(_ep("x", usage={"prompt_tokens": "91"})),
                                 "usage.prompt_tokens"),
    "cost_as_numeric_string": (_line(_ep("x", usage={"total_cost_usd": "0.5"})),
                               "usage.total_cost_usd"),
    "attempt_as_boolean": (_line(_ep("x", attempt=False)), "attempt"),
    "seed_as_numeric_string": (_line(_ep("x", seed="7")), "seed"),
    "wall_time_as_numeric_string": (_line(_ep("x", wall_time_s="3.5")), "wall_time_s"),
    "timestamp_as_boolean": (_line(_ep("x", timestamp=True)), "timestamp"),
    "score_as_boolean": (_line(_ep("x", scores={"a": True})), "scores.a"),
    "judge_tokens_as_boolean": (_line(_ep("x", judge_usage={"completion_tokens": True})),
                                "judge_usage.completion_tokens"),
    "count_as_word": (_line(_ep("x", n_steps="many")), "n_steps"),
    "boolean_reward": (_line(_ep("x", reward=True)), "reward"),
    "string_reward": (_line(_ep("x", reward="0.5")), "reward"),
    "reward_above_one": (_line(_ep("x", reward=1.5)), "reward"),
    "reward_below_zero": (_line(_ep("x", reward=-0.1)), "reward"),
    "null_reward": (_line(_ep("x", reward=None)), "stored"),
    "extra_is_a_list": (_line(_ep("x", extra=[1])), "extra"),
    "extra_is_null": (_line(_ep("x", extra=None)), "extra"),
    "extra_is_a_string": (_line(_ep("x", extra="s")), "extra"),
    "extra_1e999": (b'{"experiment_id":"e1","task_id":"t","reward":1,"trajectory_id":"x",'
                    b'"extra":{"v":1e999}}', "extra.v"),
    "reward_1e999": (b'{"experiment_id":"e1","task_id":"t","reward":1e999,'
                     b'"trajectory_id":"x"}', "reward"),
    "seed_2_63": (_line(_ep("x", seed=2**63)), "seed"),
    "seed_minus_2_63_minus_1": (_line(_ep("x", seed=-(2**63) - 1)), "seed"),
    "attempt_2_31": (_line(_ep("x", attempt=2**31)), "attempt"),
    "n_steps_2_64": (_line(_ep("x", n_steps=2**64)), "n_steps"),
    "prompt_tokens_2_63": (_line(_ep("x", usage={"prompt_tokens": 2**63})),
                           "usage.prompt_tokens"),
    "lone_high_surrogate": (b'{"experiment_id":"e1","task_id":"t","reward":1,'
                            b'"trajectory_id":"x","output_text":"a\\ud800b"}', "output_text"),
    "lone_low_surrogate_in_extra": (b'{"experiment_id":"e1","task_id":"t","reward":1,'
                                    b'"trajectory_id":"x","extra":{"k":"\\udc00"}}', "extra"),
    "escaped_surrogate_pair": (b'{"experiment_id":"e1","task_id":"t","reward":1,'
                               b'"trajectory_id":"x","output_text":"\\ud83d\\ude00"}', "stored"),
    "duplicate_keys_last_wins": (b'{"experiment_id":"e1","task_id":"t","reward":0,'
                                 b'"reward":1,"trajectory_id":"x"}', "stored"),
    "nested_150_levels": (('{"experiment_id":"e1","task_id":"t","reward":1,'
                           '"trajectory_id":"x","extra":' + _DEEP + "}").encode(), None),
    "nested_5000_levels": (('{"experiment_id":"e1","task_id":"t","reward":1,'
                            '"trajectory_id":"x","extra":' + _VERY_DEEP + "}").encode(), None),
    "tool_name_number": (_line(_ep("x", tool_names=["bash", 5])), "tool_names.1"),
    "tool_name_null": (_line(_ep("x", tool_names=[None])), "tool_names.0"),
    "score_string": (_line(_ep("x", scores={"a": "high"})), "scores.a"),
    "split_number": (_line(_ep("x", split=5)), "split"),
    "usage_null": (_line(_ep("x", usage=None)), "usage"),
    "usage_unknown_key": (_line(_ep("x", usage={"tokens": 5})), "usage.tokens"),
    "verifier_ref_number": (_line(_ep("x", verifier={"ref": 5})), "verifier.ref"),
    "unknown_status": (_line(_ep("x", status="weird")), "status"),
    "success_contradicts_reward": (_line(_ep("x", success=False)), None),
    "negative_wall_time": (_line(_ep("x", wall_time_s=-1)), "wall_time_s"),
    "unsafe_trajectory_id": (_line(_ep("../x")), "trajectory_id"),
    "nan_reward": (b'{"experiment_id":"e1","task_id":"t","reward":NaN,"trajectory_id":"x"}',
                   "reward"),
    "crlf_line_end": (_line(_ep("x")) + b"\r", "stored"),
    "bom_mid_file": (b"\xef\xbb\xbf" + _line(_ep("x")), None),
    "experiment_record_between_episodes": (_line(_EXPERIMENT), "stored"),
    "huge_integer_in_extra": (_line(_ep("x", extra={"n": 10**400})), "stored"),
    "findings_type_key": (_line(_ep("x", findings={"_type": "f", "feasible": True})),
                          "stored"),
    "big_text": (_line(_ep("x", output_text="é" * 100_000)), "stored"),
    "control_characters_in_text": (_line(_ep("x", output_text="a\x00b\x1b[31m")), "stored"),
}


def _parity_file(tmp: Path, name: str) -> Path:
    hostile, _ = PARITY[name]
    body = _line(_ep("before")) + b"\n" + hostile + b"\n" + _line(_ep("after")) + b"\n"
    p = tmp / f"{name}.jsonl"
    p.write_bytes(body)
    return p


_JSON_COLUMNS = ("scores", "extra", "judge_usage", "verifier", "findings",
                 "investigation_metadata")


def _same_json(row: dict) -> dict:
    """JSON columns parsed: the fast path stores DuckDB's compact text, the exact path
    Python's (``{"n":1}`` vs ``{"n": 1}``); the values must be equal."""
    return {k: json.loads(v) if k in _JSON_COLUMNS and isinstance(v, str) else v
            for k, v in row.items()}


def _snapshot(db: Path, src: Path, fast: bool) -> tuple[list, list, object]:
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [src], fast=fast, fast_min_bytes=0)
        eps = [_same_json(r) for r in store.query(
            "SELECT * EXCLUDE (ingest_batch, source_file) FROM episodes "
            "ORDER BY trajectory_id")]
        exps = store.query("SELECT * EXCLUDE (ingest_batch, source_file) FROM experiments")
        q = store.query("SELECT line, record, field, reason FROM quarantine ORDER BY line")
    return [eps, exps], q, rep


@pytest.mark.parametrize("fast", ["whole", "chunked"])
@pytest.mark.parametrize("name", sorted(PARITY))
def test_fast_and_exact_paths_agree(tmp_path: Path, name: str, fast: str,
                                    request: pytest.FixtureRequest) -> None:
    """``whole``: the fast path's whole-file try first (it declines every file here
    with something to quarantine, and stores the clean ones); ``chunked``: the fast
    path chunk by chunk."""
    if fast == "chunked":
        request.getfixturevalue("chunked_only")
    src = _parity_file(tmp_path, name)
    exact_rows, exact_q, _ = _snapshot(tmp_path / "exact.duckdb", src, fast=False)
    fast_rows, fast_q, _rep = _snapshot(tmp_path / "fast.duckdb", src, fast=True)
    assert fast_rows == exact_rows
    assert fast_q == exact_q
    ids = {r["trajectory_id"] for r in exact_rows[0]}
    assert {"before", "after"} <= ids  # the good records beside it are stored
    outcome = PARITY[name][1]
    if outcome == "stored":
        assert exact_q == []
    else:
        assert len(exact_q) == 1 and exact_q[0]["line"] == 2, exact_q
        assert exact_q[0]["field"] == outcome, exact_q
        assert "x" not in ids


def test_clean_file_really_takes_the_fast_path(tmp_path: Path) -> None:
    src = _parity_file(tmp_path, "integral_float_count")
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"".join(_line(_ep(f"c{i}")) + b"\n" for i in range(50))
                      + _line(_EXPERIMENT) + b"\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [clean, src], fast=True, fast_min_bytes=0)
    # the mixed file (episodes + an experiment record) stays on the fast path
    assert rep.fast_path_files == 1 and rep.experiments == 1 and rep.episodes == 53
