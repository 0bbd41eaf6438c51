"""The server's life: SIGTERM while an upload is arriving, kill -9 and restart, the rate
limit and ``--public-read`` (each against a real server process)."""

from __future__ import annotations

import signal
import threading
import time

import httpx
from data import write_jsonl
from server import Server, add_token, cli


def _slow_body(data: bytes, gate: threading.Event, sent: threading.Event):
    half = len(data) // 2
    yield data[:half]
    sent.set()
    gate.wait(60)
    yield data[half:]


def _upload_in_thread(url: str, token: str, data: bytes, name: str):
    gate, sent, result = threading.Event(), threading.Event(), {}

    def go() -> None:
        try:
            with httpx.Client(timeout=60) as c:
                result["response"] = c.post(
                    url + "/v1/submissions", params={"name": name},
                    headers={"Authorization": f"Bearer {token}"},
                    content=_slow_body(data, gate, sent))
        except httpx.HTTPError as exc:
            result["error"] = exc

    thread = threading.Thread(target=go)
    thread.start()
    assert sent.wait(30)
    time.sleep(0.3)  # the first half is on the server
    return gate, thread, result


def test_sigterm_finishes_the_upload_in_flight_refuses_new_ones_exits_0(tmp_path):
    db = tmp_path / "s.duckdb"
    token = add_token(db, "sam", "submitter")
    server = Server(db, "--rate-limit", "off")
    data = write_jsonl(tmp_path / "a.jsonl", "a", n_tasks=50, attempts=2).read_bytes()
    try:
        gate, thread, result = _upload_in_thread(server.url, token, data, "a.jsonl")
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        refused = httpx.get(server.url + "/v1/submissions",
                            headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "5"
        assert refused.json()["error"] == "unavailable"
        stopped = time.monotonic()
        gate.set()
        thread.join(60)
        assert result["response"].status_code == 201, result
        assert server.proc.wait(30) == 0
        assert time.monotonic() - stopped < 30
    finally:
        server.stop()
    server.start()  # the upload was committed before the exit
    try:
        with server.client(token) as c:
            rows = c.get("/v1/submissions").json()["rows"]
        assert [(r["name"], r["episodes"]) for r in rows] == [("a.jsonl", 100)]
    finally:
        assert server.stop() == 0


def test_kill_9_mid_upload_then_restart(tmp_path):
    db = tmp_path / "k.duckdb"
    token = add_token(db, "kim", "submitter")
    server = Server(db, "--rate-limit", "off")
    spool = tmp_path / "k.duckdb.spool"
    first = write_jsonl(tmp_path / "one.jsonl", "one", n_tasks=5, attempts=1).read_bytes()
    with server.client(token) as c:
        assert c.post("/v1/submissions", params={"name": "one.jsonl"},
                      content=first).status_code == 201
    data = write_jsonl(tmp_path / "two.jsonl", "two", n_tasks=50, attempts=2).read_bytes()
    gate, thread, result = _upload_in_thread(server.url, token, data, "two.jsonl")
    assert len(list(spool.iterdir())) == 1  # the upload's private folder
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    gate.set()
    thread.join(60)
    assert "error" in result  # the connection died with the server
    assert len(list(spool.iterdir())) == 1  # a killed server cannot clean up
    server.start()
    try:
        assert list(spool.iterdir()) == []  # cleaned at the next start
        with server.client(token) as c:
            rows = c.get("/v1/submissions").json()["rows"]
            assert [(r["name"], r["episodes"]) for r in rows] == [("one.jsonl", 5)]
            board = c.get("/v1/leaderboard").json()["rows"]
            assert [(r["agent"], r["episodes"]) for r in board] == [("one", 5)]
    finally:
        assert server.stop() == 0


def test_public_read_and_rate_limit(tmp_path):
    db = tmp_path / "p.duckdb"
    cli(db, "ingest", str(write_jsonl(tmp_path / "p.jsonl", "pub", n_tasks=4)))
    token = add_token(db, "ann", "submitter")
    server = Server(db, "--public-read", "--rate-limit", "3/min")
    try:
        anon = server.client()
        board = anon.get("/v1/leaderboard")
        assert board.status_code == 200 and board.json()["rows"][0]["agent"] == "pub"
        assert anon.post("/v1/submissions", content=b"{}").status_code == 401
        assert anon.get("/v1/matrix").status_code == 200
        limited = anon.get("/v1/matrix")  # the fourth request within a minute
        assert limited.status_code == 429
        assert limited.json()["error"] == "too many requests"
        assert 1 <= int(limited.headers["retry-after"]) <= 20
        with server.client(token) as c:  # another client has its own budget
            assert c.get("/v1/leaderboard").status_code == 200
    finally:
        assert server.stop() == 0
