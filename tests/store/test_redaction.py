"""The canary corpus: planted credentials never reach the store file, an export or the CLI.

Every canary has a unique core (``CANARYnn...``) inside a credential of some shape, placed
where real runs leak keys: env-style config values, nested dicts and lists under
credential-named keys, ``sk-...`` inside longer text, bearer headers, URLs, PEM blocks,
error messages, labels, extras, a quarantined record and a judge's 401 error echoing the
key. They go in through every format path that carries free text (JSONL exact path,
JSONL fast path, EvalLog directories, framework results files, an Inspect log, the
judge), then the raw
bytes of the DuckDB file (after CHECKPOINT), of ``export jsonl``, ``export parquet``,
``export eee`` and of the CLI output are searched for each core. Visible non-secret
markers planted next to the canaries prove the searched bytes really hold the text.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from fake_openai import FakeOpenAI

from evalatlas.cli.main import app
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.redaction import batch_flagged, redact_batch_in_place

runner = CliRunner()
CORE = re.compile(rb"CANARY\d\d")

PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACANARY20\n"
       "-----END OPENSSH PRIVATE KEY-----")


def agent_config() -> dict:
    return {
        "_type": "react", "model": "gpt-4o", "max_tokens": 512,
        "api_key": "CANARY23-plain-value",
        "llm": {"credentials": {"token": "CANARY24-nested"}, "note": "VISIBLE-config"},
        "headers": [{"Authorization": "CANARY25-in-list"}],
        "env": {"ANTHROPIC_API_KEY": "CANARY26-env-dict", "PATH": "/usr/bin"},
        "secrets": ["CANARY27-list-item", {"deeper": "CANARY27b"}],
        "command": "OPENAI_API_KEY=CANARY28-env-style python agent.py",
    }


def experiment(exp_id: str, name: str) -> dict:
    return {
        "experiment_id": exp_id, "experiment_name": f"{name} Bearer CANARY40tokenvalue",
        "benchmark_name": "canarybench",
        "benchmark_subset": {"name": "all", "n_tasks": 3,
                             "filter": "api_key=CANARY39-subset-filter"},
        "agent": {"config": agent_config(), "name": "canary-agent", "llm_model": "gpt-4o",
                  "git_remote_url": "https://bob:CANARY19urlpass@git.example.com/a.git",
                  "description": "password: CANARY38-description"},
        "labels": {"tier": "T1", "auth_token": "CANARY29-label",
                   "note": "sk-CANARY30labelvalue0000"},
        "extra": {"a": [{"b": {"client_secret": "CANARY31-deep"}}],
                  "pem": PEM, "visible": "VISIBLE-experiment"},
    }


def episodes(exp_id: str) -> list[dict]:
    base = {"experiment_id": exp_id, "reward": 1.0, "success": True}
    return [
        {**base, "task_id": "t1", "trajectory_id": "a1",
         "input_text": "please use sk-proj-CANARY01abcdEFGH1234 and OPENAI_API_KEY="
                       "CANARY14plainvalue now VISIBLE-input",
         "output_text": "anthropic sk-ant-api03-CANARY02xyzXYZ0987 / AWS_SECRET_ACCESS_KEY="
                        "CANARY08wJalrXUtnFEMIK7MDENGbPxRfiCY then Bearer CANARY13beareronly",
         "error_message": "failed: prefix_sk-CANARY03gluedABCDEF and "
                          "Authorization: Bearer CANARY12headerval and "
                          "{'api_key': 'CANARY16-repr'} and --api-key CANARY18-flag",
         "task_description": "ghp_CANARY04abcdefghijklmnopqrstuvwxyz12 HF_TOKEN: CANARY15-yaml",
         "expected_text": "github_pat_CANARY05abcdefghij0123456789",
         "error_type": "AKIACANARY07ABCDEFGH",
         "tool_names": ["search", "xai-CANARY21abcdefghijklmnopqrstu"],
         "retrieved_sources": ["AIzaCANARY09abcdefghijklmnopqrstuvwxyz012"],
         "extra": {"notes": "hf_CANARY06abcdefghijklmnopqrstuv",
                   "Cookie": "session=CANARY33-cookie", "private_key": "CANARY34-pk",
                   "jwt": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJDQU5BUlkyMiJ9.CANARY22sig"],
                   "hdr": "x-api-key: CANARY37-header",
                   "password": "CANARY32-numeric-ish", "visible": "VISIBLE-extra"},
         "findings": {"difficulty": "ya29.CANARY10abcdefghijklmnopqrst",
                      "access_token": "CANARY35-findings"},
         "investigation_metadata": {"slack": "xoxb-CANARY11-abcdefghij",
                                    "session_token": "CANARY36-meta"},
         "verifier": {"ref": "v1", "source": "https://x.org/v?token=CANARY41query&x=1"}},
        {**base, "task_id": "t2", "trajectory_id": "a2",
         "output_text": '{"password": "CANARY17 json in text"} VISIBLE-output'},
        {**base, "task_id": "t3", "trajectory_id": "a3", "reward": 0.0, "success": False,
         "status": "error", "error_type": "AuthError",
         "error_message": "gsk_CANARY42abcdefghijklmnopqrstuv rejected"},
    ]


# a rejected record: the quarantine reason quotes the unknown key, which is a key
QUARANTINED = {"experiment_id": "e-jsonl", "task_id": "tq", "trajectory_id": "q1",
               "reward": 1.0, "sk-CANARY43unknownfieldname": 1}

FRAMEWORK_DOC = {
    "framework_name": "Canary Framework", "scenario_name": "rag", "scenario_type": "rag_qa",
    "evaluation_mode": "baseline", "evaluation_profile": "default", "run_id": 0,
    "run_count": 1,
    "questions": [{
        "question_id": "q1",
        "question_text": "what is api_key=CANARY44-question? VISIBLE-framework",
        "expected_answer": "hf_CANARY45abcdefghijklmnopqrstuv",
        "actual_answer": "The key is sk-CANARY46answerabcdefgh",
        "sources_expected": ["a.md"], "sources_retrieved": ["a.md"],
        "latency_seconds": 1.0, "prompt_tokens": 10, "completion_tokens": 5,
        "total_tokens": 15, "estimated_cost_usd": 0.001, "model_name": "gpt-4o-mini",
        "correctness_score": 4, "completeness_score": 4, "faithfulness_score": 4,
        "judge_reasoning": "saw Bearer CANARY47judgereasoning in the answer",
        "retrieval_precision": 1.0, "retrieval_recall": 1.0, "extra_metrics": {}}],
    "code_quality": {"source_file": "impl.py", "source_sloc": 10,
                     "static_metrics": {"sloc": 10},
                     "code_review": {"avg_score": 3.0,
                                     "reasoning": "hardcoded password='CANARY48-review'"}},
}

JUDGE_KEY = "sk-CANARY49judgekeyechoed0000"

INSPECT_LOG = (Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "inspect"
               / "2025-05-12T20-28-13-04-00_popularity.json")


def inspect_log() -> dict:
    """The Inspect fixture log with canaries in a sample's input and output and in the
    eval's model and task arguments."""
    log = json.loads(INSPECT_LOG.read_text(encoding="utf-8"))
    sample = log["samples"][0]
    sample["input"] = "VISIBLE-inspect use sk-proj-CANARY53inspectinput0 please"
    choice = sample["output"]["choices"][0]["message"]
    choice["content"] = "Authorization: Bearer CANARY54inspectoutput"
    log["eval"]["model_args"] = {"api_key": "CANARY55-model-args"}
    log["eval"]["task_args"] = {"hf_token": "CANARY56-task-args"}
    return log

VISIBLE = ["VISIBLE-input", "VISIBLE-output", "VISIBLE-extra", "VISIBLE-experiment",
           "VISIBLE-config", "VISIBLE-framework"]  # the Inspect adapter keeps no sample text


def planted() -> set[str]:
    text = json.dumps([agent_config(), experiment("x", "y"), episodes("x"), QUARANTINED,
                       FRAMEWORK_DOC, JUDGE_KEY, PEM, inspect_log()])
    return set(re.findall(r"CANARY\d\d", text))


def write_inputs(root: Path) -> dict[str, Path]:
    """One input per format path; the same canaries in each."""
    root.mkdir()
    exact = root / "exact.jsonl"
    lines = [experiment("e-jsonl", "jsonl"), *episodes("e-jsonl"), QUARANTINED]
    exact.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    fast = root / "fast" / "episodes.jsonl"
    fast.parent.mkdir()
    fast.write_text("".join(json.dumps(x) + "\n" for x in episodes("e-fast")), encoding="utf-8")
    evallog = root / "evallog"
    exp = experiment("e-evallog", "evallog")
    (evallog / "episodes").mkdir(parents=True)
    (evallog / "experiment_record.json").write_text(json.dumps(exp), encoding="utf-8")
    for ep in episodes("e-evallog"):
        d = evallog / "episodes" / ep["trajectory_id"]
        d.mkdir()
        (d / "episode_record.json").write_text(json.dumps(ep), encoding="utf-8")
    fw = root / "fw" / "canary_framework_rag_20260101_000000_run0.json"
    fw.parent.mkdir()
    fw.write_text(json.dumps(copy.deepcopy(FRAMEWORK_DOC)), encoding="utf-8")
    inspect = root / "inspect" / INSPECT_LOG.name
    inspect.parent.mkdir()
    inspect.write_text(json.dumps(inspect_log()), encoding="utf-8")
    return {"exact": exact, "fast": fast, "evallog": evallog, "framework": fw,
            "inspect": inspect}


def leaked(data: bytes) -> set[str]:
    return {m.decode() for m in CORE.findall(data)}


def tree_bytes(path: Path) -> bytes:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return b"".join(p.read_bytes() for p in files)


@pytest.fixture(scope="module")
def canary_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("canary")
    inputs = write_inputs(tmp / "in")
    db = tmp / "store.duckdb"
    out: dict = {"db": db, "tmp": tmp, "cli": {}}
    # exact path, EvalLog and framework results through the CLI (its output is checked)
    for name in ("exact", "evallog", "framework", "inspect"):
        r = runner.invoke(app, ["--db", str(db), "ingest", str(inputs[name])])
        out["cli"][f"ingest {name}"] = r
    # the fast path through the library (the CLI takes it only for files >= 8 MiB)
    with StoreConnection(db) as store:
        # DuckDB would compress strings (FSST) so raw bytes could hide a leak: store them
        # uncompressed for this test, and check the visible markers are found raw
        store.con.execute("PRAGMA force_compression='uncompressed'")
        out["fast_report"] = ingest_paths(store, [inputs["fast"]], fast=True)
    # the judge: its 401 error echoes the key, which must not be stored
    with FakeOpenAI(default="401_echo") as srv:
        r = runner.invoke(app, ["--db", str(db), "judge", "--judge-model", "m",
                                "--judge-base-url", srv.base_url, "-e", "e-jsonl",
                                "--judge-cache-dir", str(tmp / "cache"), "--rejudge"],
                          env={"OPENAI_API_KEY": JUDGE_KEY})
        out["cli"]["judge"] = r
        out["judge_auth"] = list(srv.auth_headers)
    for args in (["summary"], ["summary", "--format", "csv"], ["summary", "--format", "json"],
                 ["quarantine"], ["quarantine", "--format", "json"]):
        out["cli"][" ".join(args)] = runner.invoke(app, ["--db", str(db), *args])
    for kind, target in (("jsonl", tmp / "export.jsonl"), ("parquet", tmp / "pq"),
                         ("eee", tmp / "eee")):
        r = runner.invoke(app, ["--db", str(db), "export", kind, str(target)])
        out["cli"][f"export {kind}"] = r
        out[kind] = target
    with duckdb.connect(str(db)) as con:
        con.execute("CHECKPOINT")
    return out


def test_the_corpus_has_at_least_39_canaries() -> None:
    assert len(planted()) >= 39


def test_every_path_ingested_and_the_judge_was_called(canary_store: dict) -> None:
    for name in ("ingest exact", "ingest evallog", "ingest framework", "ingest inspect"):
        assert canary_store["cli"][name].exit_code == 0, canary_store["cli"][name].output
    assert canary_store["fast_report"].fast_path_files == 1
    assert canary_store["fast_report"].episodes == 3
    assert canary_store["cli"]["judge"].exit_code == 0, canary_store["cli"]["judge"].output
    # one call per completed episode (the judge skips errored ones); 401 is not retried
    assert canary_store["judge_auth"] == [f"Bearer {JUDGE_KEY}"] * 2
    with StoreConnection(canary_store["db"], read_only=True) as store:
        counts = {r["experiment_id"]: r["n"] for r in store.query(
            "SELECT experiment_id, count(*) AS n FROM episodes GROUP BY 1")}
        errors = store.query("SELECT CAST(extra->'$.score_errors' AS VARCHAR) AS e FROM episodes "
                             "WHERE experiment_id = 'e-jsonl' AND status = 'completed'")
        quarantined = store.query("SELECT reason FROM quarantine")
    assert counts["e-jsonl"] == counts["e-fast"] == counts["e-evallog"] == 3
    assert sum(counts.values()) == 13  # + the framework question + 3 Inspect samples
    assert len(errors) == 2
    assert all("HTTP 401" in r["e"] and "***REDACTED***" in r["e"] for r in errors)
    assert len(quarantined) == 1 and "unknown field" in quarantined[0]["reason"]


def test_no_canary_in_the_store_file(canary_store: dict) -> None:
    raw = b"".join(p.read_bytes() for p in canary_store["db"].parent.glob("store.duckdb*"))
    for marker in ("VISIBLE-input", "VISIBLE-extra", "VISIBLE-output"):
        assert marker.encode() in raw  # the file holds the text uncompressed
    assert leaked(raw) == set()


def test_no_canary_in_any_store_cell(canary_store: dict) -> None:
    with StoreConnection(canary_store["db"], read_only=True) as store:
        text = ""
        for table in ("experiments", "episodes", "measurements", "quarantine"):
            for row in store.query(f"SELECT * FROM {table}"):
                text += json.dumps(row, default=str)
    assert all(v in text for v in VISIBLE)
    assert leaked(text.encode()) == set()


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "eee"])
def test_no_canary_in_exports(canary_store: dict, kind: str) -> None:
    r = canary_store["cli"][f"export {kind}"]
    assert r.exit_code == 0, r.output
    raw = tree_bytes(canary_store[kind])
    assert b"VISIBLE-input" in raw or kind == "parquet"  # parquet pages may be compressed
    assert leaked(raw) == set()


def test_parquet_export_holds_the_text(canary_store: dict) -> None:
    with duckdb.connect() as con:
        rows = con.execute("SELECT * FROM read_parquet(?)",
                           [str(canary_store["parquet"] / "episodes.parquet")]).fetchall()
    text = json.dumps(rows, default=str)
    assert "VISIBLE-input" in text and "VISIBLE-extra" in text
    assert leaked(text.encode()) == set()


def test_no_canary_in_cli_output(canary_store: dict) -> None:
    for name, r in canary_store["cli"].items():
        assert leaked(r.output.encode()) == set(), name
    assert "unknown field" in canary_store["cli"]["ingest exact"].output  # problem printed


def test_old_store_rows_are_redacted_in_place(tmp_path: Path) -> None:
    """The fast path's SQL pass on its own: rows inserted by SQL, bypassing Python."""
    with StoreConnection(tmp_path / "s.duckdb") as store:
        store.con.execute(
            "INSERT INTO episodes (experiment_id, trajectory_id, task_id, input_text, "
            "tool_names, extra, ingest_batch) VALUES ('e', 't', 'x', 'key sk-CANARY50abcdefgh',"
            " ['ok', 'Bearer CANARY51tokenvalue'], '{\"n\": {\"api_key\": \"CANARY52\"}}', 7),"
            " ('e', 'u', 'y', 'harmless', [], '{}', 7)")
        assert redact_batch_in_place(store.con, "episodes", 7) == 1
        rows = store.query("SELECT * FROM episodes ORDER BY trajectory_id")
    assert rows[0]["input_text"] == "key ***REDACTED***"
    assert rows[0]["tool_names"] == ["ok", "***REDACTED***"]
    assert json.loads(rows[0]["extra"]) == {"n": {"api_key": "***REDACTED***"}}
    assert rows[1]["input_text"] == "harmless"


def test_arrow_row_gate_flags_every_row_the_redaction_changes() -> None:
    """The columnar path's gate (``arrow_row_gate``, RE2 in Arrow on each column's
    distinct values and each list's distinct items) flags exactly the rows whose cells
    the exact redaction changes here, in any text column kind and in either chunk of a
    chunked table: an ordinary row stays unflagged, so the batch is inserted as it is."""
    import pyarrow as pa

    from evalatlas.store.redaction import arrow_row_gate, redact_rows

    types = {"task_description": "VARCHAR", "extra": "JSON", "tool_names": "VARCHAR[]",
             "status": "VARCHAR"}
    plain = ("fix the parser", '{"k": "v"}', ["bash"], "completed")
    variants = [
        plain,
        ("export HF_TOKEN='quoted value 42'", *plain[1:]),
        (plain[0], json.dumps({"api_key": "k1"}), *plain[2:]),
        (plain[0], '{"\\u0070assword": "escaped key"}', *plain[2:]),  # \u hides a key
        (*plain[:2], ["bash", "curl -H 'Authorization: Bearer abc.def'"], plain[3]),
        (*plain[:3], "failed: sk-proj-Ab3dEf6hIj9kLm2nOp5q"),
        (None, None, None, None),
        ("max_tokens=512 and 1,234 prompt tokens", '{"n_tokens": 3}', [], "risk-averse"),
        (plain[0], plain[1], None, "task-00001"),
    ]
    rows = variants * 3  # repeated cells: distinct values scanned once, rows flagged all
    cols = list(types)
    schema = pa.schema([(c, pa.list_(pa.string()) if t == "VARCHAR[]" else pa.string())
                        for c, t in types.items()])

    def table(part: list[tuple]) -> pa.Table:
        return pa.Table.from_arrays([pa.array([r[i] for r in part], type=schema.field(i).type)
                                     for i in range(len(cols))], schema=schema)

    chunked = pa.concat_tables([table(rows[:13]), table(rows[13:])])
    assert chunked.column("tool_names").num_chunks == 2
    flags = arrow_row_gate(chunked, types)
    changed = [red != row for red, row in
               zip(redact_rows("episodes", cols, types, rows), rows, strict=True)]
    assert [bool(f) for f in flags] == changed  # here exactly the changed rows
    assert changed.count(True) == 5 * 3
    assert not arrow_row_gate(table([plain] * 4), types).any()


def test_arrow_row_gate_flags_each_row_holding_a_repeated_list_item() -> None:
    """A list column's items are scanned once per distinct item (a JSONL chunk's
    ``tool_names`` repeats a few names in every row): every row holding a matching
    item is flagged, wherever it repeats (several rows, twice in one row, in either
    chunk), and no row without one (null items, null or empty lists)."""
    import pyarrow as pa

    from evalatlas.store.redaction import arrow_row_gate

    secret = "Bearer CANARY61tokenvalue"
    lists = [["bash", "python"], [secret, "bash"], None, [], ["bash", None],
             ["python", secret, "bash", secret], ["bash"] * 5, [None, secret]] * 4
    typ = pa.list_(pa.string())
    chunked = pa.table({"tool_names": pa.chunked_array(
        [pa.array(lists[:11], type=typ), pa.array(lists[11:], type=typ)])})
    flags = arrow_row_gate(chunked, {"tool_names": "VARCHAR[]"})
    assert [bool(f) for f in flags] == [bool(v and secret in v) for v in lists]
    assert int(flags.sum()) == 3 * 4


def test_redact_arrow_redacts_the_flagged_rows_in_place_and_leaves_the_rest() -> None:
    """``redact_arrow`` (the columnar path's and the fast JSONL path's redaction) gives
    the cells :func:`redact_rows` gives, in the rows' order, leaves columns it does not
    know (the fast path's ``_line``) and unflagged rows as they are, and returns the
    table itself when nothing is flagged."""
    import pyarrow as pa

    from evalatlas.store.redaction import redact_arrow, redact_rows

    types = {"task_description": "VARCHAR", "extra": "JSON", "tool_names": "VARCHAR[]",
             "trajectory_id": "VARCHAR"}
    rows = [("fix it", '{"k": "v"}', ["bash"], "t0"),
            ("key sk-CANARY70abcdefgh", '{"k": "v"}', ["bash"], "sk-CANARY71abcdefgh"),
            ("fix it", '{"api_key": "CANARY72"}', ["bash", "Bearer CANARY73tokenvalue"],
             "t2"),
            ("plain", "{}", None, "t3")] * 2
    cols = list(types)
    tbl = pa.table({**{c: pa.array([r[i] for r in rows],
                                    type=pa.list_(pa.string()) if types[c] == "VARCHAR[]"
                                    else pa.string()) for i, c in enumerate(cols)},
                    "_line": pa.array(range(len(rows)), type=pa.int64())})
    out = redact_arrow("episodes", tbl, types)
    assert out.schema == tbl.schema
    assert out.column("_line").to_pylist() == list(range(len(rows)))
    got = list(zip(*(out.column(c).to_pylist() for c in cols), strict=True))
    assert got == redact_rows("episodes", cols, types, rows)
    assert got[1][3] == "sk-CANARY71abcdefgh"  # a key column: an identifier, kept
    assert got[1][0] != rows[1][0] and got[0] == rows[0] and got[3] == rows[3]
    plain = tbl.filter(pa.array([i % 4 in (0, 3) for i in range(len(rows))]))
    assert redact_arrow("episodes", plain, types) is plain


def test_redact_arrow_returns_the_table_when_the_flagged_rows_hold_no_secret() -> None:
    """The gate's prefilter flags more than holds a secret (a random id spelling "pwd",
    as an Inspect sample's uuid may); when the redaction changes no flagged cell, the
    table comes back as it was, not rebuilt."""
    import pyarrow as pa

    from evalatlas.store.redaction import arrow_row_gate, gated_columns, redact_arrow

    types = {"extra": "JSON", "task_id": "VARCHAR"}
    tbl = pa.table({"extra": ['{"uuid":"neqz9sFTHwxBQ8pWdzNwW5"}', '{"uuid":"abc"}'] * 3,
                    "task_id": ["a", "b"] * 3})
    assert arrow_row_gate(tbl, gated_columns("episodes", types)).tolist() == \
        [True, False] * 3
    assert redact_arrow("episodes", tbl, types) is tbl


@pytest.mark.parametrize("cell, flagged", [
    ("['bash', 'edit']", False),
    ("['bash', 'export KEY=sk-abcdefghijklmnopqrstuvwx1234']", True),
])
def test_batch_flagged_scans_each_columns_distinct_values_of_one_batch(
        cell: str, flagged: bool) -> None:
    """The whole-file JSONL try's gate: a list item, a JSON text or a plain text of the
    batch that matches the gate pattern flags it; other batches are not looked at."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (ingest_batch INTEGER, tools VARCHAR[], extra JSON, "
                "note VARCHAR)")
    con.execute(f"INSERT INTO t VALUES (1, {cell}, '{{\"k\": 1}}', 'ok'), "
                "(1, ['bash'], NULL, NULL), "
                "(2, ['ghp_abcdefghijklmnopqrstuvwxyz0123456789'], '{\"password\": 1}', "
                "'Bearer x')")
    columns = {"tools": "VARCHAR[]", "extra": "JSON", "note": "VARCHAR"}
    assert batch_flagged(con, "t", 1, columns) is flagged
    assert batch_flagged(con, "t", 2, columns) is True
    assert batch_flagged(con, "t", 2, {}) is False
    con.execute("INSERT INTO t VALUES (3, NULL, '{\"password\": \"x\"}', NULL)")
    assert batch_flagged(con, "t", 3, columns) is True  # a JSON text's key
