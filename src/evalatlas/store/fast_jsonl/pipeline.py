"""The fast path's threads: chunks prepared side by side while the caller commits.

A feeder thread reads the chunks and hands each to one of :data:`PREPARERS` threads, so
chunks are prepared side by side while the caller commits the one before (measured:
with one preparer the committer waited for it, ~1.35 of 2 cores busy). DuckDB releases
the GIL, so the threads overlap on two cores; commits stay in file order.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import cast

from evalatlas.adapters.jsonl_stream import Chunk
from evalatlas.errors import Problem
from evalatlas.store.fast_jsonl.state import Prepared

PREPARERS = 2
"""Threads preparing chunks side by side."""

IN_FLIGHT = 3
"""Chunks read but not yet committed, at most (memory is bounded by this x chunk)."""

_DONE = object()


def pipeline(items: Iterator[Chunk | Problem], prepare: Callable[[Chunk], Prepared],
             discard: Callable[[Prepared], None]
             ) -> Iterator[tuple[Chunk | Problem, Prepared | None]]:
    """``items`` (chunks of one input, or problems), each chunk with ``prepare(chunk)``
    (None for a problem), in input order.

    At most :data:`IN_FLIGHT` chunks are read and not yet handed back finished (the
    caller is done with an item when it asks for the next one). A prepared chunk the
    caller never received is ``discard``-ed here on early exit.
    """
    slots = threading.Semaphore(IN_FLIGHT)
    out: queue.Queue[object] = queue.Queue()
    stop = threading.Event()
    pool = ThreadPoolExecutor(PREPARERS, thread_name_prefix="evalatlas-prepare")

    def feed() -> None:
        try:
            while True:
                slots.acquire()
                if stop.is_set():
                    return
                item = next(items, _DONE)
                if item is _DONE:
                    break
                job = (pool.submit(contextvars.copy_context().run, prepare, item)
                       if isinstance(item, Chunk) else None)
                out.put((item, job))
            out.put(_DONE)
        except BaseException as exc:  # handed to the caller, raised there
            out.put(exc)

    # The read limits are a ContextVar: the threads run in copies of this context.
    feeder = threading.Thread(target=contextvars.copy_context().run, args=(feed,),
                              name="evalatlas-fast-jsonl", daemon=True)
    feeder.start()
    try:
        while True:
            got = out.get()
            if got is _DONE:
                return
            if isinstance(got, BaseException):
                raise got
            item, job = cast("tuple[Chunk | Problem, Future[Prepared] | None]", got)
            yield item, (job.result() if job is not None else None)
            slots.release()
    finally:
        stop.set()
        slots.release()
        feeder.join()
        while not out.empty():
            left = out.get_nowait()
            if isinstance(left, tuple) and left[1] is not None:
                with contextlib.suppress(BaseException):
                    discard(left[1].result())
        pool.shutdown(wait=True)
        close = getattr(items, "close", None)
        if close is not None:
            close()
