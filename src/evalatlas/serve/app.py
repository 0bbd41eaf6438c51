"""The FastAPI application: state, the request middleware and the error answers.

Every answer that is not a success is JSON ``{"error": ..., "detail": ...}``. An
unexpected exception never reaches the client as a traceback: it is logged with a
request id and answered ``{"error": "internal", "request_id": ...}`` (500).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from evalatlas.records.limits import GiB, ReadLimits
from evalatlas.store import submissions as submissions_sql
from evalatlas.store.db import Store
from evalatlas.store.tokens import TokenFile, tokens_path

from .accesslog import AccessLog
from .limits import RateLimiter
from .metrics import Metrics
from .spool import Spool, default_spool_root
from .writer import Writer

log = logging.getLogger("evalatlas.serve")


@dataclass(frozen=True)
class ServeConfig:
    """What ``evalatlas serve`` was given."""

    db: str
    public_read: bool = False
    max_upload_bytes: int = GiB
    max_file_bytes: int = 4 * GiB
    rate_limit: tuple[int, float] | None = (60, 60.0)
    spool: str | None = None
    access_log: str | None = None
    drain_seconds: float = 25.0


class ApiError(StarletteHTTPException):
    """An answer other than success: status, a short error word, and a detail."""

    def __init__(self, status: int, error: str, detail: Any = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(status, detail=detail, headers=headers)
        self.error = error


@dataclass
class ServeState:
    """Everything the routes share (``app.state.evalatlas``)."""

    config: ServeConfig
    store: Store
    tokens: TokenFile
    spool: Spool
    writer: Writer
    metrics: Metrics
    access_log: AccessLog
    limiter: RateLimiter | None
    limits: ReadLimits
    version: int = 0
    """Bumped after every write job: cached answers of an older version are stale."""
    draining: bool = False
    inflight: int = 0
    fitting: bool = False
    read_root: Store | None = None
    """A view made at start that runs no query: readers' cursors are made from it, never
    from the writer's connection while the writer thread uses it."""
    touched: dict[str, float] = field(default_factory=dict)
    """When each token's "last used" was last written (written at most once a minute)."""
    cache: dict[Any, tuple[int, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    cache_locks: dict[Any, threading.Lock] = field(default_factory=dict)

    def bump(self) -> None:
        with self.lock:
            self.version += 1

    def cached(self, key: Any, compute: Any) -> Any:
        """``compute()`` once per store version and key; concurrent callers of the same
        key wait for the one computation (200 clients asking for the leaderboard at once
        compute it once)."""
        with self.lock:
            lock = self.cache_locks.setdefault(key, threading.Lock())
        with lock:
            version = self.version
            hit = self.cache.get(key)
            if hit is not None and hit[0] == version:
                return hit[1]
            value = compute()
            with self.lock:
                if len(self.cache) > 256:
                    self.cache.clear()
                self.cache[key] = (version, value)
            return value

    @contextlib.contextmanager
    def reader(self) -> Any:
        """A store view with its own cursor for this thread (reads the last commit)."""
        view = (self.read_root or self.store).cursor_view()
        try:
            yield view
        finally:
            view.close()


def _error_body(error: str, detail: Any = None, **more: Any) -> dict[str, Any]:
    return {"error": error, "detail": detail, **more}


_STATUS_WORDS = {400: "bad request", 401: "unauthorized", 403: "forbidden",
                 404: "not found", 405: "method not allowed", 413: "too large",
                 415: "unsupported format", 422: "invalid", 429: "too many requests",
                 503: "unavailable"}


def _route_of(scope: dict[str, Any]) -> str:
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


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
                seconds=seconds, token=st.get("token_name"), error=error_text)

    def _refuse(self, scope: dict[str, Any]) -> JSONResponse | None:
        state = self.state
        if state.draining:  # /healthz too: a balancer stops sending traffic here
            return JSONResponse(_error_body("unavailable", "the server is shutting down"),
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
                    _error_body("too many requests", f"rate limit: retry in {wait:.1f} s"),
                    status_code=429, headers={"Retry-After": str(max(1, int(wait + 0.999)))})
        return None


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error = getattr(exc, "error", None) or _STATUS_WORDS.get(exc.status_code, "error")
        return JSONResponse(_error_body(error, exc.detail), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")),
                   "type": str(e.get("type", ""))}
                  for e in exc.errors()]
        return JSONResponse(_error_body("invalid request", detail), status_code=422)


def build_state(config: ServeConfig) -> ServeState:
    """Open the store (the writer's connection), the token file, the spool (emptied)."""
    from evalatlas.api import open as open_store
    from evalatlas.store.fast_jsonl import remove_stale_chunk_dirs

    store = open_store(config.db)
    try:
        submissions_sql.ensure(store)
        remove_stale_chunk_dirs()
        spool = Spool(config.spool or default_spool_root(config.db))
        spool.reset()
        tokens = TokenFile(tokens_path(config.db))
    except BaseException:
        store.close()
        raise
    state_box: list[ServeState] = []
    writer = Writer(on_commit=lambda: state_box[0].bump() if state_box else None)
    limiter = RateLimiter(*config.rate_limit) if config.rate_limit else None
    state = ServeState(config=config, store=store, tokens=tokens, spool=spool, writer=writer,
                       metrics=Metrics(), access_log=AccessLog(config.access_log),
                       limiter=limiter,
                       limits=_read_limits(config.max_file_bytes))
    state.read_root = store.cursor_view()
    state_box.append(state)
    return state


def _read_limits(max_file_bytes: int) -> ReadLimits:
    """Ingest's limits for a submission: a stream stops at ``max_file_bytes`` after
    decompression, and no archive member or JSON document may inflate past it either
    (nor past ingest's own record limit)."""
    default = ReadLimits()
    return ReadLimits(max_file_bytes=max_file_bytes,
                      max_record_bytes=min(default.max_record_bytes, max_file_bytes),
                      set_by="serve")


def dumps(value: Any) -> bytes:
    """JSON as the CLI prints it (``--format json``): NaN refused, text made safe."""
    from evalatlas.text import json_text_safe

    return json_text_safe(json.dumps(value, indent=2, allow_nan=False,
                                     ensure_ascii=False)).encode() + b"\n"


__all__ = ["ApiError", "ServeConfig", "ServeState", "build_state", "dumps"]
