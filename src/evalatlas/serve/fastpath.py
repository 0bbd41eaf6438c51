"""Kept answers sent straight from the request middleware, without FastAPI's routing.

Why: with the leaderboard kept as bytes (:mod:`.answers`), what a request still cost was
FastAPI's per-request work (matching the route, solving the dependencies, validating
eight query parameters): about half a millisecond of one core each, which for 200
concurrent readers on a loaded 2-core machine put the slowest answers over a second.
A query is validated by FastAPI's route the first time it is asked; the route then
records that exact query string (:meth:`.answers.Shortcuts.learn`), and the next request with the
same path and query string is answered here: the same token check (any role reads;
anonymous only with ``--public-read``), the same kept bytes and labels. Anything else
(an unknown or missing token, a query not seen before, no kept answer) goes on to the
route, which answers it, errors included, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from evalatlas.errors import EvalAtlasError

from .answers import headers
from .auth import authenticate

if TYPE_CHECKING:
    from .app import ServeState


def _reader_name(state: ServeState, scope: dict[str, Any]) -> tuple[bool, str | None]:
    """(may read, token name) for the request's ``Authorization`` header, by the same
    rules as the routes' check; (False, None) sends the request on to the route."""
    auth = None
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            auth = value
            break
    if auth is None:
        return state.config.public_read, None
    scheme, _, token = auth.decode("latin-1").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False, None
    try:
        who = authenticate(state.tokens, token.strip())
    except EvalAtlasError:
        return False, None  # the route reports it
    return (who is not None), (who.name if who else None)


async def send_kept(state: ServeState, scope: dict[str, Any], send: Any) -> bool:
    """Answer the request from a kept answer if it may be; False: leave it to the
    route (nothing was sent)."""
    found = state.shortcuts.find(scope)
    if found is None:
        return False
    key, fresh, media = found
    if fresh and state.poller is not None:  # the route reads the lake's snapshot first
        return False
    may, name = _reader_name(state, scope)
    if not may:
        return False
    answer, current = state.answers.peek(key, fresh=fresh)
    if answer is None:
        return False
    st = scope.setdefault("state", {})
    st["route"] = scope["path"]
    if name is not None:
        st["token_name"] = name
        await note_use(state, name)
    head = [(b"content-type", media.encode()),
            (b"content-length", str(len(answer.body)).encode())]
    head += [(k.lower().encode(), v.encode()) for k, v in headers(answer, current).items()]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    await send({"type": "http.response.body", "body": answer.body})
    return True


async def note_use(state: ServeState, name: str) -> None:
    """Write the token's "last used" time, at most once a minute (in a thread: a write to
    the token file may wait for another writer's lock)."""
    now = time.monotonic()
    if now - state.touched.get(name, -1e9) > 60:
        state.touched[name] = now
        await asyncio.to_thread(_touch, state, name)


def _touch(state: ServeState, name: str) -> None:
    with contextlib.suppress(EvalAtlasError):
        state.tokens.touch(name)


__all__ = ["note_use", "send_kept"]
