"""Run the app on uvicorn, with the shutdown this service promises.

SIGTERM or SIGINT: new requests are answered 503 (``Retry-After``) at once; requests in
flight (an upload being received, a commit) may finish for up to ``drain_seconds``; then
uvicorn stops, the writer finishes its queue, and the process exits with status 0.
uvicorn's own handler would re-raise the signal after shutting down (so the exit status
would say "killed by SIGTERM"): :class:`_Server` replaces its signal capture.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from .app import ServeConfig, ServeState, build_state
from .factory import create_app


def _uvicorn() -> Any:
    from evalatlas.extras import require

    return require("uvicorn", "serve", "evalatlas serve")


class _Drain:
    """On the first signal: drain, then tell uvicorn to exit; a second signal: exit now."""

    def __init__(self, server: Any, state: ServeState) -> None:
        self.server = server
        self.state = state
        self.started = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self.started:
            self.server.force_exit = True
            return
        self.started = True
        self.state.draining = True
        threading.Thread(target=self._wait, name="evalatlas-drain", daemon=True).start()

    def _wait(self) -> None:
        deadline = time.monotonic() + self.state.config.drain_seconds
        while time.monotonic() < deadline:
            with self.state.lock:
                busy = self.state.inflight
            if busy == 0 and self.state.writer.pending == 0:
                break
            time.sleep(0.05)
        self.server.should_exit = True


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8765,
          log_level: str = "warning") -> None:
    """Serve until SIGTERM/SIGINT (see the module docstring); returns normally."""
    uvicorn = _uvicorn()
    state = build_state(config)
    app = create_app(config, state)
    uconfig = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                             access_log=False, timeout_graceful_shutdown=5,
                             server_header=False, lifespan="on")

    class _Server(uvicorn.Server):  # type: ignore[name-defined]  # uvicorn: imported at run time (the [serve] extra)
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            drain = _Drain(self, state)
            old = {s: signal.signal(s, drain) for s in (signal.SIGTERM, signal.SIGINT)}
            try:
                yield
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)

    _Server(uconfig).run()
