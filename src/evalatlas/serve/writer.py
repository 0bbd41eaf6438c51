"""The single writer: one thread that owns every write to the store, in arrival order.

Why: a ``.duckdb`` store has one writing connection; HTTP workers receive bytes to the
spool concurrently and hand the writer a job only once a body is complete, so no worker
ever holds the write lock while receiving. Each job runs to its end (its commit or its
rollback) before the next starts; readers on other cursors see the last commit.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_STOP = object()
log = logging.getLogger("evalatlas.serve")


class Writer:
    """A queue of jobs run one at a time on a thread; :meth:`run` returns a future."""

    def __init__(self, on_commit: Callable[[], None] | None = None,
                 lock: threading.RLock | None = None) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self._on_commit = on_commit
        self._store_lock = lock
        """Held while a job runs (on a lake: readers wait for it, see ServeState)."""
        self._thread = threading.Thread(target=self._loop, name="evalatlas-writer",
                                        daemon=True)
        self._busy = 0
        self._lock = threading.Lock()
        self._thread.start()

    @property
    def pending(self) -> int:
        """Jobs queued or running."""
        with self._lock:
            return self._busy

    def run(self, job: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._lock:
            self._busy += 1
        self._queue.put((job, fut))
        return fut

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            job, fut = item
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        with self._store_lock or contextlib.nullcontext():
                            result = job()
                    except BaseException as exc:
                        self._committed()
                        fut.set_exception(exc)
                    else:
                        # the new store version before the answer: a caller that reads
                        # ``fresh`` right after its write must not get the kept answer
                        # of the version before it
                        self._committed()
                        fut.set_result(result)
            finally:
                with self._lock:
                    self._busy -= 1

    def _committed(self) -> None:
        """Tell the server a job ended (a new store version); never fails the job."""
        if self._on_commit is None:
            return
        try:
            self._on_commit()
        except Exception as exc:  # the answer of the job still reaches its caller
            log.warning("after a write: %s: %s", type(exc).__name__, exc)

    def stop(self, timeout: float = 25.0) -> None:
        """Finish the queued jobs, then end the thread (waits up to ``timeout``)."""
        self._queue.put(_STOP)
        self._thread.join(timeout)
