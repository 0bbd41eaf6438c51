"""An unexpected exception is answered 500 ``{"error": "internal", "request_id"}`` (no
traceback) and logged with that request id (the app in-process over ASGI)."""

from __future__ import annotations

import asyncio
import json

import httpx

from evalatlas.serve.app import ServeConfig, build_state
from evalatlas.serve.factory import create_app


def test_unexpected_error_is_a_json_500_with_a_request_id(tmp_path):
    log = tmp_path / "access.log"
    config = ServeConfig(db=str(tmp_path / "e.duckdb"), access_log=str(log),
                         rate_limit=None)
    state = build_state(config)
    app = create_app(config, state)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret internals /etc/shadow")

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.get("/boom")

    try:
        got = asyncio.run(go())
    finally:
        state.writer.stop()
        state.store.close()
        state.access_log.close()
    assert got.status_code == 500
    body = got.json()
    assert set(body) == {"error", "request_id"} and body["error"] == "internal"
    assert "Traceback" not in got.text and "shadow" not in got.text
    assert got.headers["x-request-id"] == body["request_id"]
    [entry] = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["request_id"] == body["request_id"] and entry["status"] == 500
    assert "RuntimeError" in entry["error"]
