"""The FastAPI application assembled: state, middleware, error answers and routes.

Kept apart from :mod:`.app` (which the routes import) so no import cycle runs through
``create_app``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from evalatlas import __version__

from .app import ServeConfig, ServeState, _install_errors, build_state
from .middleware import RequestMiddleware
from .routes import leaderboard_compute, leaderboard_key, router


def create_app(config: ServeConfig, state: ServeState | None = None) -> FastAPI:
    """The application for ``config`` (``state``: one built already, for tests)."""
    state = state or build_state(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # the leaderboard everyone reads first, computed before anyone asks
        state.answers.prime(leaderboard_key(["agent"]), leaderboard_compute(state, ["agent"]))
        yield
        state.stop_background()  # staged and queued submissions are committed first
        with contextlib.suppress(Exception):
            if state.read_root is not None:
                state.read_root.close()
            state.store.close()
        state.access_log.close()

    app = FastAPI(title="evalatlas", version=__version__, lifespan=lifespan,
                  description="Submissions, leaderboard, matrix and report of one "
                  "evalatlas store. See docs/serve.md.")
    app.state.evalatlas = state
    _install_errors(app)
    app.include_router(router)
    app.add_middleware(RequestMiddleware, state=state)
    return app
