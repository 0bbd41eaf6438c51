"""The endpoints. Thin: check who is asking, call the API function the CLI calls, answer
its ``to_dict()`` (so ``/v1/leaderboard`` is exactly ``evalatlas summary --format json``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import ClientDisconnect

from evalatlas.errors import EvalAtlasError
from evalatlas.store import submissions as submissions_sql

from .answers import headers
from .app import ApiError, ServeState, dumps
from .auth import ADMIN_ROLES, READ_ROLES, SUBMIT_ROLES, Principal, authenticate
from .fastpath import note_use
from .spool import BadUpload, UploadTooLarge, receive_multipart, receive_raw
from .staged_submit import look_up_before_staging, previous_answer, stage_and_commit
from .submissions import ingest_submission, public_row, quarantine_rows, unreadable

router = APIRouter()
_bearer = HTTPBearer(auto_error=False, description="A token from `evalatlas tokens add`.")


_ERROR_SCHEMA = {"type": "object", "required": ["error"],
                 "properties": {"error": {"type": "string"}, "detail": {},
                                "request_id": {"type": "string"}}}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers: JSON ``{"error", "detail"}`` whatever the route's
    own media type; 422 (arguments), 429 (rate limit) and 503 (shutting down) on every
    route."""
    words = {401: "Missing or unknown token", 403: "The token's role may not do this",
             404: "Not found", 413: "Upload too large", 415: "No reader for this format",
             422: "Invalid arguments or nothing valid", 429: "Rate limit (Retry-After)",
             503: "Shutting down (Retry-After)"}
    return {c: {"description": words[c],
                "content": {"application/json": {"schema": _ERROR_SCHEMA}}}
            for c in sorted({*codes, 422, 429, 503})}


def state_of(request: Request) -> ServeState:
    return request.app.state.evalatlas


async def _principal(request: Request,
                     creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
                     ) -> Principal | None:
    """Who is asking. Async (no thread hop per request): the token check reads hashes
    kept in memory until the token file changes (:meth:`TokenFile.current_hashes`); the
    rare "last used" write runs in a thread."""
    if request.headers.get("authorization") is None:
        return None
    if creds is None or not creds.credentials:
        raise ApiError(401, "unauthorized", "the Authorization header must be "
                       "'Bearer <token>'", headers={"WWW-Authenticate": "Bearer"})
    state = state_of(request)
    who = authenticate(state.tokens, creds.credentials.strip())
    if who is None:
        raise ApiError(401, "unauthorized", "unknown or revoked token",
                       headers={"WWW-Authenticate": "Bearer"})
    request.scope.setdefault("state", {})["token_name"] = who.name
    await note_use(state, who.name)
    return who


def _needs(roles: frozenset[str], *, public: bool = False) -> Callable[..., Any]:
    async def check(request: Request,
                    who: Annotated[Principal | None, Depends(_principal)]
                    ) -> Principal | None:
        if who is None:
            if public and state_of(request).config.public_read:
                return None
            raise ApiError(401, "unauthorized", "this needs a token: Authorization: "
                           "Bearer <token>", headers={"WWW-Authenticate": "Bearer"})
        if who.role not in roles:
            raise ApiError(403, "forbidden", f"a {who.role} token may not do this")
        return who
    return check


Reader = Annotated[Principal | None, Depends(_needs(READ_ROLES, public=True))]
Submitter = Annotated[Principal, Depends(_needs(SUBMIT_ROLES))]
Admin = Annotated[Principal, Depends(_needs(ADMIN_ROLES))]


def _json(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json")


def _call(fn: Callable[[], Any]) -> Any:
    """Run an API call; its argument errors are the client's (422 with the message)."""
    try:
        return fn()
    except (ValueError, EvalAtlasError) as exc:
        raise ApiError(422, "invalid", str(exc)) from exc


@router.get("/healthz", summary="Liveness", responses=_errors())
def healthz() -> dict[str, str]:
    return {"status": "ok"}


# -- submissions ------------------------------------------------------------------------
@router.post("/v1/submissions", status_code=201, summary="Submit one file",
             responses=_errors(401, 403, 413, 415, 422, 429, 503), openapi_extra={
                 "requestBody": {"content": {
                     "application/octet-stream": {"schema": {"type": "string",
                                                             "format": "binary"}},
                     "multipart/form-data": {"schema": {
                         "type": "object", "required": ["file"],
                         "properties": {"file": {"type": "string", "format": "binary"}}}}}}})
async def submit(request: Request, who: Submitter,
                 name: Annotated[str | None, Query(max_length=255)] = None) -> Response:
    """One file as the raw body (any format ``ingest`` reads, gzip/zstd allowed) or as
    the multipart field ``file``. 201 with counts and problems; the same bytes again:
    200 with the same ``submission_id``; nothing valid: 422."""
    state = state_of(request)
    limit = state.config.max_upload_bytes
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise ApiError(413, "too large", f"the upload is {length} bytes; the limit is {limit}")
    folder = state.spool.new_folder()
    queued = False
    try:
        ctype = request.headers.get("content-type", "")
        try:
            if ctype.lower().startswith("multipart/form-data"):
                spooled = await receive_multipart(request.stream(), ctype, folder, name, limit)
            else:
                spooled = await receive_raw(request.stream(), folder, name or "", limit)
        except UploadTooLarge as exc:
            raise ApiError(413, "too large", str(exc)) from exc
        except BadUpload as exc:
            raise ApiError(422, "invalid", str(exc)) from exc
        except ClientDisconnect as exc:
            raise ApiError(400, "bad request", "the client went away mid-upload") from exc
        if spooled.size == 0:
            raise ApiError(422, "nothing valid", "the upload is empty")
        problems = await asyncio.to_thread(unreadable, spooled)
        if problems is not None:
            raise ApiError(415, "unsupported format", {"problems": problems})
        if state.stager is not None:  # a lake: staged in parallel, then committed
            earlier, extras = await asyncio.to_thread(look_up_before_staging, state,
                                                    who.name, spooled)
            if earlier is not None:
                outcome = await asyncio.to_thread(previous_answer, state, earlier, spooled)
            else:
                queued = True  # the chain removes the folder when it is done
                staged, future = stage_and_commit(state, spooled, who.name, extras)
                try:
                    outcome = await asyncio.shield(asyncio.wrap_future(future))
                except BrokenProcessPool as exc:  # its worker died; a new one is started
                    raise ApiError(503, "unavailable", "the worker staging this submission "
                                   "stopped; nothing was stored: submit it again",
                                   headers={"Retry-After": "1"}) from exc
                if staged:  # the access log's "stage": which worker, when
                    request.scope.setdefault("state", {})["stage"] = staged[0].event()
            state.metrics.submission(outcome.result, outcome.episodes, outcome.rejected)
            return _json(outcome.body, outcome.status)

        def job() -> Any:  # the writer removes the folder: only it knows when it is done
            try:
                return ingest_submission(state.store, spooled, who.name, state.limits)
            finally:
                state.spool.remove(folder)

        future = state.writer.run(job)
        queued = True
        outcome = await asyncio.shield(asyncio.wrap_future(future))
        state.metrics.submission(outcome.result, outcome.episodes, outcome.rejected)
        return _json(outcome.body, outcome.status)
    finally:
        if not queued:
            await asyncio.to_thread(state.spool.remove, folder)


@router.get("/v1/submissions", summary="Your submissions", responses=_errors(401, 403))
def list_submissions(request: Request, who: Submitter) -> Response:
    state = state_of(request)
    with state.reader() as view:
        rows = submissions_sql.list_submissions(view, None if who.is_admin else who.name)
    return _json({"schema": "evalatlas.submissions/1", "rows": [public_row(r) for r in rows]})


def _own(view: Any, submission_id: str, who: Principal) -> dict[str, Any]:
    row = submissions_sql.get_submission(view, submission_id,
                                         None if who.is_admin else who.name)
    if row is None:  # another's id: 404 too (existence is not leaked)
        raise ApiError(404, "not found", f"no submission {submission_id!r} of yours")
    return row


@router.get("/v1/submissions/{submission_id}", summary="One submission and its quarantine",
            responses=_errors(401, 403, 404))
def get_submission(request: Request, submission_id: str, who: Submitter) -> Response:
    state = state_of(request)
    with state.reader() as view:
        row = _own(view, submission_id, who)
        quarantine = quarantine_rows(view, submission_id)
    return _json({**public_row(row), "quarantine": quarantine})


@router.delete("/v1/submissions/{submission_id}", status_code=204,
               summary="Delete a submission", responses=_errors(401, 403, 404))
async def delete_submission(request: Request, submission_id: str, who: Submitter) -> Response:
    state = state_of(request)

    def job() -> None:
        _own(state.store, submission_id, who)
        submissions_sql.delete_submission(state.store, submission_id)

    await asyncio.wrap_future(state.writer.run(job))
    return Response(status_code=204)


# -- reading ----------------------------------------------------------------------------
def _many(values: list[str] | None) -> list[str] | None:
    return [v for v in values or [] if v] or None


Fresh = Annotated[bool, Query(description=(
    "Wait for the answer that includes every write committed before this request. "
    "Without it, while the answer to a newer write is being computed the previous one "
    "is served at once, labelled by the X-Evalatlas-Stale, X-Evalatlas-Answer-Version "
    "and X-Evalatlas-Store-Version headers."))]


async def _answer(request: Request, key: Any, compute: Callable[[], bytes], fresh: bool,
                  media_type: str) -> Response:
    """A kept answer (pre-serialised bytes, :mod:`.answers`) without leaving the event
    loop when one may be served; else computed in a thread (shared by concurrent
    askers). The query string, now validated, is learned: the same request is answered
    next time by the middleware (:mod:`.fastpath`)."""
    state = state_of(request)
    if fresh and state.poller is not None:  # other processes write the lake: look now
        await asyncio.to_thread(state.refresh_version)
    kept, current = state.answers.peek(key, fresh=fresh)
    if kept is None:
        answer, current = await asyncio.to_thread(state.answers.get, key, compute,
                                                  fresh=fresh)
    else:
        answer = kept
    state.shortcuts.learn(request.scope, key, fresh, media_type)
    return Response(answer.body, media_type=media_type, headers=headers(answer, current))


def leaderboard_key(groups: list[str], benchmark: list[str] | None = None,
                    experiment: list[str] | None = None, agent: list[str] | None = None,
                    confidence: float = 0.95, outcome: str = "any",
                    missing: str = "ignore") -> tuple[Any, ...]:
    """The question a leaderboard request asks (the key of its kept answer)."""
    return ("leaderboard", tuple(groups), tuple(benchmark or ()), tuple(experiment or ()),
            tuple(agent or ()), confidence, outcome, missing)


def leaderboard_compute(state: ServeState, groups: list[str],
                        benchmark: list[str] | None = None,
                        experiment: list[str] | None = None,
                        agent: list[str] | None = None, confidence: float = 0.95,
                        outcome: Literal["any", "harness", "judge"] = "any",
                        missing: Literal["ignore", "fail"] = "ignore"
                        ) -> Callable[[], bytes]:
    """The computation of one leaderboard: ``ea.summary``'s envelope on a read cursor,
    encoded as ``summary --format json`` prints it."""
    from evalatlas.api import summary

    def compute() -> bytes:
        with state.reader() as view:
            lake = _lake_read(view)
            doc = _call(lambda: summary(
                view, groups, experiment=experiment, benchmark=benchmark, agent=agent,
                confidence=confidence, outcome=outcome, missing=missing)).to_dict()
        if lake is not None:  # as the CLI's JSON: "lake" right after "schema"
            doc = {"schema": doc["schema"], "lake": lake,
                   **{k: v for k, v in doc.items() if k != "schema"}}
        return dumps(doc)

    return compute


def _lake_read(view: Any) -> dict[str, Any] | None:
    """On a lake, ``{"location", "snapshot"}`` of the snapshot about to be read (the CLI
    names it in every JSON result; the server's reads hold the store lock, so no write of
    its own lands in between), else None."""
    if view.lake is None:
        return None
    from evalatlas.store.lake import newest_snapshot

    return {"location": view.lake.display, "snapshot": newest_snapshot(view)}


@router.get("/v1/leaderboard", summary="The summary envelope (evalatlas summary)",
            responses=_errors(401, 403, 422))
async def leaderboard(
    request: Request, who: Reader, by: str = "agent",
    benchmark: Annotated[list[str] | None, Query()] = None,
    experiment: Annotated[list[str] | None, Query()] = None,
    agent: Annotated[list[str] | None, Query()] = None,
    confidence: Annotated[float, Query(gt=0, lt=1)] = 0.95,
    outcome: Literal["any", "harness", "judge"] = "any",
    missing: Literal["ignore", "fail"] = "ignore",
    fresh: Fresh = False,
) -> Response:
    """Exactly what ``evalatlas summary --format json`` prints for the same options (of
    the store version in ``X-Evalatlas-Answer-Version``)."""
    state = state_of(request)
    groups = [b.strip() for b in by.split(",") if b.strip()]
    args = (groups, _many(benchmark), _many(experiment), _many(agent), confidence, outcome,
            missing)
    return await _answer(request, leaderboard_key(*args), leaderboard_compute(state, *args),
                         fresh, "application/json")


@router.get("/v1/compare", summary="Paired comparison (evalatlas compare)",
            responses=_errors(401, 403, 422))
def compare(request: Request, who: Reader, a: str, b: str,
            pair_by: str = "task", confidence: Annotated[float, Query(gt=0, lt=1)] = 0.95
            ) -> Response:
    from evalatlas.api import compare as compare_fn

    if pair_by not in ("task", "attempt"):
        raise ApiError(422, "invalid", "pair_by must be task or attempt")
    state = state_of(request)
    with state.reader() as view:
        result = _call(lambda: compare_fn(  # pair_by was checked above
            view, a, b, pair_by=cast('Literal["task", "attempt"]', pair_by),
            confidence=confidence))
    return _json(result.to_dict())


@router.get("/v1/matrix", summary="Agent x task cells", responses=_errors(401, 403, 422))
def matrix(request: Request, who: Reader,
           benchmark: Annotated[list[str] | None, Query()] = None) -> Response:
    from evalatlas.atlas import matrix as matrix_fn

    state = state_of(request)
    with state.reader() as view:
        m = _call(lambda: matrix_fn(view, benchmark=_many(benchmark), cell="success"))
        rows = [{"agent": r["agent"], "agent_id": r["agent_id"], "benchmark": r["benchmark"],
                 "task_id": r["task_id"], "task_version_hash": r["task_version_hash"],
                 "attempts": r["n"], "successes": r["k"]} for r in m.long_rows()]
    return _json({"schema": "evalatlas.matrix/1", "benchmark": _many(benchmark),
                  "rows": rows})


@router.get("/v1/atlas/abilities", summary="Abilities of the latest stored fit",
            responses=_errors(401, 403, 404, 422))
def abilities(request: Request, who: Reader,
              benchmark: Annotated[list[str] | None, Query()] = None) -> Response:
    from evalatlas.atlas import stored_fit

    state = state_of(request)
    with state.reader() as view:
        fitted = _call(lambda: stored_fit(view, benchmark=_many(benchmark)))
    if fitted is None:
        raise ApiError(404, "not found", "no stored atlas fit for this benchmark selection; "
                       "an admin can start one with POST /v1/atlas/fit")
    return _json(fitted.abilities().to_dict())


@router.post("/v1/atlas/fit", status_code=202, summary="Fit and store an atlas (background)",
             responses=_errors(401, 403))
async def atlas_fit(request: Request, who: Admin,
                    benchmark: Annotated[list[str] | None, Query()] = None) -> Response:
    """Fits on a read cursor in a background thread, then the writer stores the fit."""
    from evalatlas.atlas import fit
    from evalatlas.store.atlas import save_fit

    state = state_of(request)
    bench = _many(benchmark)
    with state.lock:  # one fit at a time: a second request while one runs starts none
        if state.fitting:
            return _json({"status": "running", "benchmark": bench}, 202)
        state.fitting = True

    def background() -> None:
        try:
            with state.reader() as view:
                result = fit(view, benchmark=bench)
            state.writer.run(lambda: save_fit(state.store, result.to_dict())).result()
        except Exception as exc:  # logged; the client already has its 202
            import logging

            logging.getLogger("evalatlas.serve").warning("atlas fit failed: %s", exc)
        finally:
            with state.lock:
                state.fitting = False

    asyncio.get_running_loop().run_in_executor(None, background)
    return _json({"status": "accepted", "benchmark": bench}, 202)


def report_compute(state: ServeState) -> Callable[[], bytes]:
    """The computation of the HTML report (``evalatlas report``) on a read cursor."""
    from evalatlas.api import build_report

    def compute() -> bytes:
        with state.reader() as view:
            return _call(lambda: build_report(view)).to_html().encode()

    return compute


@router.get("/report", summary="The HTML report (evalatlas report)",
            response_class=HTMLResponse, responses=_errors(401, 403))
async def report(request: Request, who: Reader, fresh: Fresh = False) -> Response:
    state = state_of(request)
    return await _answer(request, ("report",), report_compute(state), fresh,
                         "text/html; charset=utf-8")


@router.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse,
            responses=_errors(401, 403))
def metrics(request: Request, who: Admin) -> Response:
    state = state_of(request)
    with state.reader() as view:
        stored = submissions_sql.counts(view)
    text = state.metrics.render() + "".join(
        f"# TYPE evalatlas_store_{k} gauge\nevalatlas_store_{k} {v}\n"
        for k, v in stored.items())
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")
