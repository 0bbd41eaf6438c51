"""A scripted OpenAI-compatible chat server on 127.0.0.1 for judge tests and benchmarks.

``FakeOpenAI`` serves ``POST /v1/chat/completions`` from a thread. Each request takes the
next action of ``script`` (then ``default``):

- ``"ok"``: 200 with ``responder(request) -> content`` (default: a valid answer verdict);
- ``"malformed"``: 200 with content that is not JSON;
- ``"out_of_range"``: 200 with correctness 9;
- ``"missing_key"``: 200 without ``faithfulness``;
- ``"429"`` (with ``Retry-After: 0``), ``"500"``, ``"401"``;
- ``"slow"``: waits ``slow_s`` seconds, then answers as ``"ok"``;
- ``"reject_temperature"``: 400 naming temperature when the request has one, else ok;
- ``"401_echo"``: 401 whose message echoes the request's key and Authorization header
  (as some gateways do);
- malformed *bodies* with HTTP 200 (:data:`RAW_BODIES`): ``"html_body"``,
  ``"text_body"``, ``"empty_body"``, ``"truncated_json"``, ``"json_array"``,
  ``"no_choices"``, ``"null_choices"``, ``"choice_without_message"``.

Every request body is kept in ``requests`` (thread-safe append), so tests can check what
was sent (temperature, messages) and how many calls were made.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]

RAW_BODIES: dict[str, tuple[str, bytes]] = {
    "html_body": ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
    "text_body": ("application/json", b"upstream connect error or disconnect"),
    "empty_body": ("application/json", b""),
    "truncated_json": ("application/json", b'{"id": "x", "choices": [{"message": {"con'),
    "json_array": ("application/json", b"[1, 2, 3]"),
    "no_choices": ("application/json", b'{"id": "x", "object": "chat.completion"}'),
    "null_choices": ("application/json", b'{"id": "x", "choices": null}'),
    "choice_without_message": ("application/json", b'{"id": "x", "choices": [{"index": 0}]}'),
}
"""HTTP 200 answers whose body is not a usable chat completion."""


def answer_verdict(correctness: int = 4, completeness: int = 3, faithfulness: int = 5) -> str:
    return json.dumps({"correctness": correctness, "completeness": completeness,
                       "faithfulness": faithfulness, "reasoning": "scripted verdict"})


def default_responder(request: dict[str, Any]) -> str:
    """A valid reply for whichever judge sent the request."""
    system = request["messages"][0]["content"]
    if "seven criteria" in system:
        return json.dumps({"readability": 4, "idiomatic_usage": 4, "error_handling": 3,
                           "extensibility": 3, "testability": 4, "documentation": 2,
                           "abstraction": 4, "reasoning": "scripted review"})
    if "rubric" in system.lower():
        user = request["messages"][1]["content"]
        items = re.findall(r"^- (\S+) \(max ([0-9.]+) points\)", user, re.MULTILINE)
        return json.dumps({"items": {i: {"achieved": float(p), "reason": "ok"}
                                     for i, p in items}, "reasoning": "all met"})
    return answer_verdict()


class FakeOpenAI:
    """Start with ``with FakeOpenAI(...) as srv:``; ``srv.base_url`` ends in ``/v1``."""

    def __init__(self, script: list[str] | None = None, *, default: str = "ok",
                 responder: Responder = default_responder, slow_s: float = 5.0,
                 delay_s: float = 0.0, prompt_tokens: int = 100,
                 completion_tokens: int = 20) -> None:
        self.script = list(script or [])
        self.default = default
        self.responder = responder
        self.slow_s = slow_s
        self.delay_s = delay_s
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.send_usage = True  # False: like local servers that omit "usage"
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def next_action(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if self.script else self.default

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else header and body writes stall ~40 ms

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _error(self, status: int, message: str, **headers: str) -> None:
                self._send(status, {"error": {"message": message, "type": "test",
                                              "code": str(status)}}, headers)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.auth_headers.append(self.headers.get("Authorization"))
                action = fake.next_action(body)
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                if action == "slow":
                    time.sleep(fake.slow_s)
                    action = "ok"
                if action == "429":
                    return self._error(429, "rate limited", **{"Retry-After": "0"})
                if action == "500":
                    return self._error(500, "internal error")
                if action in RAW_BODIES:
                    ctype, raw = RAW_BODIES[action]
                    self.send_response(200)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self.wfile.write(raw)
                    return None
                if action == "401_echo":
                    auth = self.headers.get("Authorization") or ""
                    key = auth.removeprefix("Bearer ")
                    return self._error(401, f"Incorrect API key provided: {key}. You sent "
                                       f"Authorization: {auth} (api_key={key})")
                if action == "401":
                    return self._error(401, "Incorrect API key provided: sk-abcdefghijklmnop")
                if action == "reject_temperature":
                    if "temperature" in body:
                        return self._error(400, "Unsupported value: 'temperature' does not "
                                           "support 0 with this model.")
                    action = "ok"
                content = {
                    "ok": lambda: fake.responder(body),
                    "malformed": lambda: "Sure! correctness is four, completeness 3",
                    "out_of_range": lambda: answer_verdict(correctness=9),
                    "missing_key": lambda: json.dumps({"correctness": 3, "completeness": 3,
                                                       "reasoning": "x"}),
                }[action]()
                payload = {
                    "id": "chatcmpl-test", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                }
                if fake.send_usage:
                    payload["usage"] = {
                        "prompt_tokens": fake.prompt_tokens,
                        "completion_tokens": fake.completion_tokens,
                        "total_tokens": fake.prompt_tokens + fake.completion_tokens}
                self._send(200, payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
