"""Every endpoint and status of ``evalatlas serve``, against one real server (uvicorn on
127.0.0.1, started here) over HTTP with httpx."""

from __future__ import annotations

import io
import json
import time
from types import SimpleNamespace

import pytest
import zstandard
from data import write_jsonl
from server import EXAMPLES, Server, add_token, cli

MAX_UPLOAD = 400_000


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    db = tmp / "atlas.duckdb"
    cli(db, "ingest", str(EXAMPLES))
    # what the CLI prints for the demo store, before the server holds it
    baseline = {
        "summary": json.loads(cli(db, "summary", "--format", "json").stdout),
        "summary_benchmark": json.loads(cli(db, "summary", "--by", "benchmark",
                                            "--format", "json").stdout),
        "compare": json.loads(cli(db, "compare", "react-gpt-4o", "planner-sonnet",
                                  "--format", "json").stdout),
    }
    from evalatlas import atlas

    cells = {(r["agent"], r["task_id"]): (r["n"], r["k"])
             for r in atlas.matrix(db, benchmark="toybench").long_rows()}
    tokens = {name: add_token(db, name, role) for name, role in
              (("alice", "submitter"), ("bob", "submitter"), ("rita", "reader"),
               ("root", "admin"))}
    server = Server(db, "--rate-limit", "off", "--max-upload-bytes", str(MAX_UPLOAD),
                    "--max-file-bytes", "2MB")
    try:
        yield SimpleNamespace(server=server, db=db, tmp=tmp, tokens=tokens,
                              baseline=baseline, cells=cells,
                              c={n: server.client(t) for n, t in tokens.items()},
                              anon=server.client())
    finally:
        code = server.stop()
        assert code == 0, server.stderr.read_text()


def test_healthz_and_openapi(srv):
    assert srv.anon.get("/healthz").json() == {"status": "ok"}
    doc = srv.anon.get("/openapi.json").json()
    for path in ("/v1/submissions", "/v1/submissions/{submission_id}", "/v1/leaderboard",
                 "/v1/compare", "/v1/matrix", "/v1/atlas/abilities", "/v1/atlas/fit",
                 "/report", "/metrics"):
        assert path in doc["paths"], path


def test_leaderboard_is_the_summary_envelope(srv):
    got = srv.c["rita"].get("/v1/leaderboard")
    assert got.status_code == 200
    assert got.json() == srv.baseline["summary"]
    by_bench = srv.c["rita"].get("/v1/leaderboard", params={"by": "benchmark"}).json()
    assert by_bench == srv.baseline["summary_benchmark"]
    assert [r["agent"] for r in got.json()["rows"]] == ["planner-sonnet", "react-gpt-4o",
                                                         "tiny-mini"]


def _labelled(answer):
    """(answer version, store version, stale) from the leaderboard's headers."""
    h = answer.headers
    return (int(h["x-evalatlas-answer-version"]), int(h["x-evalatlas-store-version"]),
            h["x-evalatlas-stale"])


def test_after_a_write_readers_get_the_previous_answer_labelled_then_the_new(srv):
    reader = srv.c["rita"]
    before = reader.get("/v1/leaderboard", params={"fresh": True})
    answer_v, store_v, stale = _labelled(before)
    assert stale == "false" and answer_v == store_v
    path = write_jsonl(srv.tmp / "zeta.jsonl", "zeta", n_tasks=4, attempts=1)
    assert srv.c["alice"].post("/v1/submissions", params={"name": "zeta.jsonl"},
                               content=path.read_bytes()).status_code == 201
    # at once, without waiting: the previous answer labelled stale, or the new one
    now = reader.get("/v1/leaderboard")
    answer_v, store_v, stale = _labelled(now)
    assert store_v > _labelled(before)[1]
    if stale == "true":
        assert now.content == before.content and answer_v < store_v
    else:
        assert "zeta" in {r["agent"] for r in now.json()["rows"]} and answer_v == store_v
    # recomputed in the background, with nobody asking for it fresh
    deadline = time.monotonic() + 60
    while _labelled(now)[2] == "true" and time.monotonic() < deadline:
        time.sleep(0.1)
        now = reader.get("/v1/leaderboard")
    assert _labelled(now)[2] == "false"
    rows = {r["agent"]: r["episodes"] for r in now.json()["rows"]}
    assert rows["zeta"] == 4
    assert rows == {**{r["agent"]: r["episodes"] for r in before.json()["rows"]}, "zeta": 4}
    fresh = reader.get("/v1/leaderboard", params={"fresh": True})
    assert fresh.content == now.content  # the same kept bytes


def test_compare_is_the_compare_envelope(srv):
    got = srv.c["rita"].get("/v1/compare", params={"a": "react-gpt-4o", "b": "planner-sonnet"})
    assert got.status_code == 200
    assert got.json() == srv.baseline["compare"]
    bad = srv.c["rita"].get("/v1/compare", params={"a": "nobody", "b": "planner-sonnet"})
    assert bad.status_code == 422 and bad.json()["error"] == "invalid"


def test_matrix_cells(srv):
    rows = srv.c["rita"].get("/v1/matrix", params={"benchmark": "toybench"}).json()["rows"]
    got = {(r["agent"], r["task_id"]): (r["attempts"], r["successes"]) for r in rows}
    assert got == srv.cells
    assert sum(a for a, _ in got.values()) == 180  # 3 agents x 20 tasks x 3 attempts


def test_who_may_do_what(srv):
    assert srv.anon.get("/v1/leaderboard").status_code == 401  # no --public-read
    bad = srv.server.client("not-a-token").get("/v1/leaderboard")
    assert bad.status_code == 401 and bad.json() == {"error": "unauthorized",
                                                     "detail": "unknown or revoked token"}
    assert srv.anon.get("/v1/leaderboard", headers={"Authorization": "Basic x"}
                        ).status_code == 401
    forbidden = srv.c["rita"].post("/v1/submissions", content=b"{}")
    assert forbidden.status_code == 403 and forbidden.json()["error"] == "forbidden"
    assert srv.c["alice"].get("/metrics").status_code == 403
    assert srv.c["alice"].post("/v1/atlas/fit").status_code == 403
    assert srv.c["rita"].get("/v1/submissions").status_code == 403


def test_submit_then_resubmit_is_idempotent(srv):
    path = write_jsonl(srv.tmp / "alpha.jsonl", "alpha", n_tasks=10, attempts=2, bad=2)
    first = srv.c["alice"].post("/v1/submissions", params={"name": "alpha.jsonl"},
                                content=path.read_bytes())
    assert first.status_code == 201, first.text
    body = first.json()
    assert (body["experiments"], body["episodes"], body["rejected"]) == (1, 20, 2)
    assert [(p["file"], p["line"], p["field"]) for p in body["problems"]] == [
        ("alpha.jsonl", 22, "reward"), ("alpha.jsonl", 23, "reward")]
    again = srv.c["alice"].post("/v1/submissions", params={"name": "alpha.jsonl"},
                                content=path.read_bytes())
    assert again.status_code == 200
    assert again.json()["submission_id"] == body["submission_id"]
    assert again.json()["duplicate"] is True
    rows = srv.c["rita"].get("/v1/leaderboard", params={"agent": "alpha", "fresh": True}
                             ).json()["rows"]
    assert [(r["agent"], r["episodes"]) for r in rows] == [("alpha", 20)]  # not 40
    mine = srv.c["alice"].get(f"/v1/submissions/{body['submission_id']}").json()
    assert [(q["file"], q["line"]) for q in mine["quarantine"]] == [("alpha.jsonl", 22),
                                                                   ("alpha.jsonl", 23)]


def test_multipart_and_zstd_uploads(srv):
    beta = write_jsonl(srv.tmp / "beta.jsonl", "beta", n_tasks=5, attempts=1)
    got = srv.c["bob"].post("/v1/submissions",
                            files={"file": ("../../beta.jsonl", beta.read_bytes())})
    assert got.status_code == 201, got.text
    assert got.json()["name"] == "beta.jsonl" and got.json()["episodes"] == 5
    assert not (srv.tmp.parent / "beta.jsonl").exists()  # the name never leaves the spool
    gamma = write_jsonl(srv.tmp / "gamma.jsonl", "gamma", n_tasks=4, attempts=3)
    packed = zstandard.ZstdCompressor().compress(gamma.read_bytes())
    got = srv.c["bob"].post("/v1/submissions", params={"name": "gamma.jsonl.zst"},
                            content=packed)
    assert got.status_code == 201 and got.json()["episodes"] == 12


def test_another_submitters_submission_is_not_found(srv):
    path = write_jsonl(srv.tmp / "delta.jsonl", "delta", n_tasks=3, attempts=1, bad=1)
    sid = srv.c["alice"].post("/v1/submissions", params={"name": "delta.jsonl"},
                              content=path.read_bytes()).json()["submission_id"]
    other = srv.c["bob"].get(f"/v1/submissions/{sid}")
    assert other.status_code == 404 and other.json()["error"] == "not found"
    assert srv.c["bob"].delete(f"/v1/submissions/{sid}").status_code == 404
    assert sid not in {r["submission_id"] for r in
                       srv.c["bob"].get("/v1/submissions").json()["rows"]}
    assert sid in {r["submission_id"] for r in
                   srv.c["alice"].get("/v1/submissions").json()["rows"]}
    assert srv.c["root"].get(f"/v1/submissions/{sid}").json()["owner"] == "alice"
    assert srv.c["alice"].get("/v1/submissions/nope").status_code == 404


def test_delete_removes_exactly_that_submission(srv):
    path = write_jsonl(srv.tmp / "eps.jsonl", "epsilon", n_tasks=6, attempts=1, bad=1)
    sid = srv.c["alice"].post("/v1/submissions", params={"name": "eps.jsonl"},
                              content=path.read_bytes()).json()["submission_id"]
    before = {r["agent"]: r["episodes"] for r in  # fresh: includes the write just made
              srv.c["rita"].get("/v1/leaderboard", params={"fresh": True}).json()["rows"]}
    assert before["epsilon"] == 6
    assert srv.c["alice"].delete(f"/v1/submissions/{sid}").status_code == 204
    after = {r["agent"]: r["episodes"] for r in
             srv.c["rita"].get("/v1/leaderboard", params={"fresh": True}).json()["rows"]}
    assert "epsilon" not in after
    assert after == {k: v for k, v in before.items() if k != "epsilon"}
    assert srv.c["alice"].get(f"/v1/submissions/{sid}").status_code == 404
    assert srv.c["alice"].delete(f"/v1/submissions/{sid}").status_code == 404


def test_too_large_by_header_and_while_streaming(srv):
    body = b"x" * (MAX_UPLOAD + 1)
    got = srv.c["alice"].post("/v1/submissions", params={"name": "big.jsonl"}, content=body)
    assert got.status_code == 413 and got.json()["error"] == "too large"

    def chunks():  # no Content-Length: decided while streaming
        for _ in range(10):
            yield b"y" * (MAX_UPLOAD // 5)

    got = srv.c["alice"].post("/v1/submissions", params={"name": "big.jsonl"},
                              content=chunks())
    assert got.status_code == 413


def test_unknown_format_and_nothing_valid(srv):
    got = srv.c["alice"].post("/v1/submissions", params={"name": "notes.bin"},
                              content=b"\x00\x01 not a result file")
    assert got.status_code == 415 and got.json()["error"] == "unsupported format"
    bad = b'{"experiment_id": "x", "trajectory_id": "y", "reward": "high"}\n'
    got = srv.c["alice"].post("/v1/submissions", params={"name": "bad.jsonl"}, content=bad)
    assert got.status_code == 422
    assert got.json()["error"] == "nothing valid"
    assert got.json()["detail"]["rejected"] >= 1
    names = {r["name"] for r in srv.c["alice"].get("/v1/submissions").json()["rows"]}
    assert "bad.jsonl" not in names
    assert srv.c["alice"].post("/v1/submissions", content=b"").status_code == 422


def test_decompression_bomb_stops_at_max_file_bytes(srv):
    bomb = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(bomb, closefd=False) as w:
        for _ in range(64):  # 64 MiB of blanks, far over --max-file-bytes 2MB
            w.write(b" " * (1 << 20))
    assert len(bomb.getvalue()) < MAX_UPLOAD
    started = time.monotonic()
    got = srv.c["alice"].post("/v1/submissions", params={"name": "bomb.jsonl.zst"},
                              content=bomb.getvalue())
    assert got.status_code == 422, got.text
    assert time.monotonic() - started < 30
    reasons = " ".join(p["reason"] for p in got.json()["detail"]["problems"])
    assert "2000000" in reasons or "limit" in reasons


def test_tokens_added_and_revoked_while_serving(srv):
    token = add_token(srv.db, "late", "reader")
    client = srv.server.client(token)
    assert client.get("/v1/matrix").status_code == 200
    listed = json.loads(cli(srv.db, "tokens", "list", "--format", "json").stdout)["rows"]
    late = next(r for r in listed if r["name"] == "late")
    assert late["role"] == "reader" and late["last_used_at"]
    assert all("token" not in r and "sha256" not in r for r in listed)
    cli(srv.db, "tokens", "revoke", "late")
    assert client.get("/v1/matrix").status_code == 401


def test_atlas_fit_in_background_then_abilities(srv):
    bench = {"benchmark": "toybench"}
    none = srv.c["rita"].get("/v1/atlas/abilities", params=bench)
    assert none.status_code == 404 and "POST /v1/atlas/fit" in none.json()["detail"]
    started = srv.c["root"].post("/v1/atlas/fit", params=bench)
    assert started.status_code == 202
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        got = srv.c["rita"].get("/v1/atlas/abilities", params=bench)
        if got.status_code == 200:
            break
        time.sleep(0.5)
    assert got.status_code == 200, got.text
    assert {r["agent"] for r in got.json()["rows"]} == {"react-gpt-4o", "planner-sonnet",
                                                        "tiny-mini"}


def test_report_page(srv):
    got = srv.c["rita"].get("/report")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/html")
    assert "planner-sonnet" in got.text and "<script" in got.text
    assert srv.anon.get("/report").status_code == 401


def test_metrics_count_requests_and_submissions(srv):
    got = srv.c["root"].get("/metrics")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
    lines = dict(line.rsplit(" ", 1) for line in got.text.splitlines()
                 if line and not line.startswith("#"))
    assert int(lines['evalatlas_submissions_total{result="created"}']) >= 4
    assert int(lines['evalatlas_submissions_total{result="duplicate"}']) >= 1
    assert int(lines["evalatlas_episodes_stored_total"]) >= 20 + 5 + 12
    assert int(lines['evalatlas_request_duration_seconds_bucket{le="+Inf"}']) > 10
    assert any(k.startswith("evalatlas_requests_total{") and 'status="401"' in k
               for k in lines)


def test_access_log_holds_no_secrets(srv):
    text = srv.server.log.read_text()
    entries = [json.loads(line) for line in text.splitlines()]
    assert len(entries) > 20
    assert {"time", "request_id", "method", "path", "status", "bytes_in", "bytes_out",
            "duration_ms", "token"} <= set(entries[0])
    assert {e["token"] for e in entries} >= {"alice", "bob", "rita", "root", None}
    for token in srv.tokens.values():
        assert token not in text
    assert "Bearer" not in text and "authorization" not in text.lower()
    assert "?" not in "".join(e["path"] for e in entries)  # no query strings
    assert "not a number" not in text  # no bodies


def test_hostile_archive_is_refused_and_nothing_leaves_the_spool(srv):
    import zipfile

    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("../../escaped.json", "{}")
        z.writestr("header.json", json.dumps({"eval": {"task": "x"}}))
        z.writestr("summaries.json", b" " * (8 << 20))  # 8 MiB, over --max-file-bytes
    got = srv.c["alice"].post("/v1/submissions", params={"name": "hostile.eval"},
                              content=packed.getvalue())
    assert got.status_code == 422 and got.json()["error"] == "nothing valid", got.text
    [problem] = got.json()["detail"]["problems"]
    assert problem["file"] == "hostile.eval" and problem["field"] == "summaries.json"
    assert "over the 2,000,000-byte limit" in problem["reason"]
    # the server's option, not ingest's (the server has no --max-record-bytes)
    assert "raise it with the server's --max-file-bytes" in problem["reason"]
    assert "--max-record-bytes" not in problem["reason"]
    for folder in (srv.tmp, srv.tmp.parent, srv.db.with_name("atlas.duckdb.spool").parent):
        assert not (folder / "escaped.json").exists()
    assert list(srv.db.with_name("atlas.duckdb.spool").iterdir()) == []
