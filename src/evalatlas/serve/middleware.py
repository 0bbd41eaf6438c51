"""The request middleware: request id, 503 while draining, rate limit, kept answers,
the catch-all 500, metrics and the access log.

Every answer that is not a success is JSON ``{"error": ..., "detail": ...}``. An
unexpected exception never reaches the client as a traceback: it is logged with a
request id and answered ``{"error": "internal", "request_id": ...}`` (500).
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from typing import Any

from fastapi.responses import JSONResponse

from .app import ServeState, error_body
from .fastpath import send_kept

log = logging.getLogger("evalatlas.serve")


def _route_of(scope: dict[str, Any]) -> str:
    route = scope.get("route")
    return (getattr(route, "path", None) or scope.get("state", {}).get("route")
            or "unmatched")


class RequestMiddleware:
    """Pure ASGI: request id, 503 while draining, rate limit (429 + Retry-After), the
    catch-all 500, metrics and the access log. Pure ASGI (not BaseHTTPMiddleware) so the
    upload body streams to the route untouched."""

    def __init__(self, app: Any, state: ServeState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = self.state
        request_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        seen = {"status": 0, "sent": 0, "received": 0, "started": False}

        async def counting_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                seen["received"] += len(message.get("body", b""))
            return message

        async def counting_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                seen["started"] = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                seen["sent"] += len(message.get("body", b""))
            await send(message)

        error_text = None
        counted = False
        try:
            early = self._refuse(scope)
            if early is not None:
                await early(scope, counting_receive, counting_send)
            else:
                with state.lock:
                    state.inflight += 1
                counted = True
                if not await send_kept(state, scope, counting_send):
                    await self.app(scope, counting_receive, counting_send)
        except Exception as exc:  # the catch-all: no traceback to the client
            error_text = f"{type(exc).__name__}: {exc}"
            log.exception("request %s failed", request_id)
            if not seen["started"]:
                await JSONResponse({"error": "internal", "request_id": request_id},
                                   status_code=500)(scope, counting_receive, counting_send)
        finally:
            if counted:
                with state.lock:
                    state.inflight -= 1
            seconds = time.perf_counter() - started
            route = _route_of(scope)
            state.metrics.request(scope["method"], route, seen["status"] or 500, seconds)
            st = scope.get("state", {})
            state.access_log.write(
                request_id=request_id, method=scope["method"], path=scope["path"],
                status=seen["status"] or 500, received=seen["received"], sent=seen["sent"],
                seconds=seconds, token=st.get("token_name"), error=error_text,
                stage=st.get("stage"))

    def _refuse(self, scope: dict[str, Any]) -> JSONResponse | None:
        state = self.state
        if state.draining:  # /healthz too: a balancer stops sending traffic here
            return JSONResponse(error_body("unavailable", "the server is shutting down"),
                                status_code=503, headers={"Retry-After": "5"})
        if state.limiter is not None and scope["path"] != "/healthz":
            auth = dict(scope.get("headers") or []).get(b"authorization")
            if auth:  # a hash: the key must not hold the token itself
                key = "t:" + hashlib.sha256(auth).hexdigest()
            else:
                key = "a:" + str((scope.get("client") or ("?",))[0])
            wait = state.limiter.take(key)
            if wait > 0:
                return JSONResponse(
                    error_body("too many requests", f"rate limit: retry in {wait:.1f} s"),
                    status_code=429, headers={"Retry-After": str(max(1, int(wait + 0.999)))})
        return None


__all__ = ["RequestMiddleware"]
