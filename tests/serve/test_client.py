"""``ea.Client`` and ``evalatlas submit`` against a real server; retries on 429/503
honour ``Retry-After`` (against a scripted local HTTP server)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from data import write_jsonl
from server import EVALATLAS, Server, add_token, cli

import evalatlas as ea


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("client")
    db = tmp / "c.duckdb"
    cli(db, "ingest", str(write_jsonl(tmp / "base.jsonl", "base", n_tasks=8, attempts=2)))
    token = add_token(db, "carl", "submitter")
    server = Server(db, "--rate-limit", "off")
    try:
        yield server, token, tmp
    finally:
        assert server.stop() == 0


def test_client_submit_leaderboard_compare_matrix(srv):
    server, token, tmp = srv
    path = write_jsonl(tmp / "other.jsonl", "other", n_tasks=8, attempts=2, seed=3, bad=1)
    with ea.Client(server.url, token) as client:
        assert token not in repr(client)
        answer = client.submit(path)
        assert answer["name"] == "other.jsonl.zst"  # compressed with zstd on the way
        assert (answer["episodes"], answer["rejected"]) == (16, 1)
        assert client.submit(path)["submission_id"] == answer["submission_id"]
        board = client.leaderboard(fresh=True)  # includes the submission just made
        with server.client(token) as raw:
            assert board == raw.get("/v1/leaderboard").json()
        assert {r["agent"]: r["episodes"] for r in board["rows"]} == {"base": 16,
                                                                     "other": 16}
        assert client.leaderboard(agent="other")["rows"][0]["agent"] == "other"
        cmp = client.compare("base", "other")
        assert cmp["schema"].startswith("evalatlas.compare") and cmp["rows"][0][
            "shared_tasks"] == 8
        cells = client.matrix("servebench")["rows"]
        assert sum(c["attempts"] for c in cells) == 32
        assert [s["submission_id"] for s in client.submissions()["rows"]] == [
            answer["submission_id"]]
        client.delete(answer["submission_id"])
        assert {r["agent"] for r in client.leaderboard(fresh=True)["rows"]} == {"base"}
    with ea.Client(server.url, "wrong") as client, pytest.raises(ea.ServerError) as err:
        client.leaderboard()
    assert err.value.status == 401 and "unknown or revoked token" in str(err.value)
    with pytest.raises(ea.ArgumentError, match="url must start with http"):
        ea.Client("ftp://x", token)


def test_submit_command(srv, tmp_path):
    server, token, _ = srv
    good = write_jsonl(tmp_path / "cmd.jsonl", "cmd", n_tasks=3, attempts=1)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00junk")
    env = {"EVALATLAS_TOKEN": token, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([EVALATLAS, "submit", server.url, str(good), str(junk)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    first, second = (json.loads(line) for line in proc.stdout.splitlines())
    assert first["file"] == str(good) and first["episodes"] == 3
    assert second["status"] == 415 and second["error"] == "unsupported format"
    assert token not in proc.stdout + proc.stderr
    assert "1 of 2 file(s) not accepted" in proc.stderr
    proc = subprocess.run([EVALATLAS, "submit", server.url, str(good)], capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == 401
    assert "Traceback" not in proc.stderr


class _Scripted(BaseHTTPRequestHandler):
    """Answers 503 then 429 (each with Retry-After: 1), then 201."""

    answers: ClassVar[list] = [(503, {"Retry-After": "1"}), (429, {"Retry-After": "1"})]
    seen: ClassVar[list[tuple[float, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append((time.monotonic(), body))
        status, headers = (self.answers[len(self.seen) - 1] if len(self.seen) <= 2
                           else (201, {}))
        payload = json.dumps({"submission_id": "s1"} if status == 201
                             else {"error": "busy", "detail": None}).encode()
        self.send_response(status)
        for k, v in {**headers, "Content-Type": "application/json",
                     "Content-Length": str(len(payload))}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def test_client_retries_429_and_503_after_retry_after(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        path = write_jsonl(tmp_path / "r.jsonl", "r", n_tasks=2, attempts=1)
        with ea.Client(f"http://127.0.0.1:{httpd.server_port}", "t") as client:
            assert client.submit(path) == {"submission_id": "s1"}
        times = [t for t, _ in _Scripted.seen]
        assert len(times) == 3
        assert times[1] - times[0] >= 0.95 and times[2] - times[1] >= 0.95
        assert len({body for _, body in _Scripted.seen}) == 1  # the same bytes each time
        with ea.Client(f"http://127.0.0.1:{httpd.server_port}", "t", retries=0) as client:
            _Scripted.seen = []
            with pytest.raises(ea.ServerError) as err:
                client.submit(path)
            assert err.value.status == 503
    finally:
        httpd.shutdown()
        httpd.server_close()
