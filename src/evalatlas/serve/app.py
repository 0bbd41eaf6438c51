"""The FastAPI application's state and its error answers.

Every answer that is not a success is JSON ``{"error": ..., "detail": ...}``. An
unexpected exception never reaches the client as a traceback: it is logged with a
request id and answered ``{"error": "internal", "request_id": ...}`` (500).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from evalatlas.records.limits import GiB, ReadLimits
from evalatlas.records.redact import redact_text
from evalatlas.store import submissions as submissions_sql
from evalatlas.store.db import StoreConnection
from evalatlas.store.tokens import TokenFile, tokens_path

from .accesslog import AccessLog
from .answers import Answers, Shortcuts
from .limits import RateLimiter
from .metrics import Metrics
from .spool import Spool, default_spool_root
from .staging import Stager
from .writer import Writer

log = logging.getLogger("evalatlas.serve")


@dataclass(frozen=True)
class ServeConfig:
    """What ``evalatlas serve`` was given."""

    db: str = field(repr=False)
    """The store's location as given (a lake's may hold a password: never printed)."""
    public_read: bool = False
    max_upload_bytes: int = GiB
    max_file_bytes: int = 4 * GiB
    rate_limit: tuple[int, float] | None = (60, 60.0)
    spool: str | None = None
    access_log: str | None = None
    drain_seconds: float = 25.0
    workers: int = 1
    """On a lake: processes that stage submissions in parallel (:mod:`.staging`). A
    ``.duckdb`` store has one writer and stages nothing: 1."""


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
    store: StoreConnection
    tokens: TokenFile
    spool: Spool
    writer: Writer
    metrics: Metrics
    access_log: AccessLog
    limiter: RateLimiter | None
    limits: ReadLimits
    answers: Answers
    """Pre-serialised leaderboard and report answers, recomputed after each write."""
    version: int = 0
    """Bumped after every write job: kept answers of an older version are stale."""
    draining: bool = False
    inflight: int = 0
    fitting: bool = False
    read_root: StoreConnection | None = None
    """A view made at start that runs no query: readers' cursors are made from it, never
    from the writer's connection while the writer thread uses it."""
    touched: dict[str, float] = field(default_factory=dict)
    """When each token's "last used" was last written (written at most once a minute)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    shortcuts: Shortcuts = field(default_factory=Shortcuts)
    """Query strings the routes validated, answered from kept answers by the middleware."""

    def bump(self) -> None:
        """A write job finished: a new store version, and its answers to compute. On a
        lake the version is the lake's newest snapshot (:meth:`refresh_version`)."""
        if self.store.lake is not None:
            self.refresh_version()
            return
        with self.lock:
            self.version += 1
        self.answers.written()

    def refresh_version(self) -> int:
        """On a lake: read its newest snapshot id, the store version, and when it moved
        on (a commit of this server or of any other writer of the lake: another server,
        ``evalatlas ingest`` on another machine) have the kept answers recomputed.
        Returns the version. One catalog query, run as a read (the store lock)."""
        from evalatlas.store.lake import newest_snapshot

        with self.reader() as view:
            snapshot = newest_snapshot(view)
        with self.lock:
            moved = snapshot > self.version
            if moved:
                self.version = snapshot
            version = self.version
        if moved:
            self.answers.written()
        return version

    stager: Stager | None = None
    """On a lake: the worker processes that stage submissions (:mod:`.staging`)."""
    poller: Poller | None = None
    """On a PostgreSQL-catalog lake (other processes write it too): reads the lake's
    newest snapshot every :data:`POLL_SECONDS` (:meth:`refresh_version`)."""

    store_lock: threading.RLock | None = None
    """On a lake: held by the writer's jobs and by every read, so that one query at a
    time runs on the store's DuckDB instance (several connections of one instance
    querying a PostgreSQL-backed DuckLake at once can invalidate it, duckdb-postgres
    #577; docs/scale-out.md). Kept answers are served without it."""

    def stop_background(self) -> None:
        """End the poller, the staging workers, the writer (its queue first) and the
        answers' refresher."""
        if self.poller is not None:
            self.poller.stop()
        if self.stager is not None:
            self.stager.stop()
        self.writer.stop(timeout=self.config.drain_seconds)
        self.answers.stop()

    @contextlib.contextmanager
    def reader(self) -> Any:
        """A store view with its own cursor for this thread (reads the last commit)."""
        with self.store_lock or contextlib.nullcontext():
            view = (self.read_root or self.store).cursor_view()
            try:
                yield view
            finally:
                view.close()


POLL_SECONDS = 1.0
"""How often a server on a PostgreSQL-catalog lake reads the lake's newest snapshot
(one catalog query); a ``fresh`` read always reads it."""


class Poller:
    """Calls ``check`` every ``seconds`` on a thread until stopped; an error is logged
    and the next tick tries again (the catalog may be briefly unreachable)."""

    def __init__(self, check: Callable[[], Any], seconds: float) -> None:
        self._check = check
        self._seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalatlas-snapshot-poll",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._seconds):
            try:
                self._check()
            except Exception as exc:
                log.warning("reading the lake's newest snapshot: %s: %s",
                            type(exc).__name__, redact_text(str(exc)))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)


def error_body(error: str, detail: Any = None, **more: Any) -> dict[str, Any]:
    return {"error": error, "detail": detail, **more}


_STATUS_WORDS = {400: "bad request", 401: "unauthorized", 403: "forbidden",
                 404: "not found", 405: "method not allowed", 413: "too large",
                 415: "unsupported format", 422: "invalid", 429: "too many requests",
                 503: "unavailable"}


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error = getattr(exc, "error", None) or _STATUS_WORDS.get(exc.status_code, "error")
        return JSONResponse(error_body(error, exc.detail), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")),
                   "type": str(e.get("type", ""))}
                  for e in exc.errors()]
        return JSONResponse(error_body("invalid request", detail), status_code=422)


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
    store_lock = threading.RLock() if store.lake is not None else None
    writer = Writer(on_commit=lambda: state_box[0].bump() if state_box else None,
                    lock=store_lock)
    limiter = RateLimiter(*config.rate_limit) if config.rate_limit else None
    state = ServeState(config=config, store=store, tokens=tokens, spool=spool, writer=writer,
                       answers=Answers(lambda: state_box[0].version if state_box else 0),
                       metrics=Metrics(), access_log=AccessLog(config.access_log),
                       limiter=limiter,
                       limits=_read_limits(config.max_file_bytes), store_lock=store_lock)
    state.read_root = store.cursor_view()
    state_box.append(state)
    if store.lake is not None:
        state.stager = Stager(config.workers)
        try:
            state.stager.start()
            state.refresh_version()
        except BaseException:
            state.stop_background()
            store.close()
            raise
        if store.many_writers:
            state.poller = Poller(state.refresh_version, POLL_SECONDS)
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


__all__ = ["ApiError", "ServeConfig", "ServeState", "build_state", "dumps", "error_body"]
