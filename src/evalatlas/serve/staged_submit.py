"""A submission to a lake-backed server: staged in a worker process, then committed.

The chain (:func:`stage_and_commit`) runs on futures, not on a request's thread: the
HTTP worker only awaits its answer, so a hundred uploads being staged hold no threads,
and the spool folder is removed when the chain ends even if the client went away.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import Future
from typing import Any

from .app import ServeState
from .spool import Spooled
from .staging import Staged, stage_upload
from .submissions import Outcome, commit_staged, duplicate, look_up, rejected


def look_up_before_staging(state: ServeState, owner: str, spooled: Spooled
                           ) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The owner's earlier submission of these bytes and the lake's declared reward
    ranges (:func:`look_up`), read on a read cursor."""
    with state.reader() as view:
        return look_up(view, owner, spooled)


def previous_answer(state: ServeState, earlier: dict[str, Any], spooled: Spooled) -> Outcome:
    """The 200 answer to bytes the owner submitted before (:func:`duplicate`)."""
    with state.reader() as view:
        return duplicate(view, earlier, spooled)


def stage_and_commit(state: ServeState, spooled: Spooled, owner: str,
                     extras: dict[str, str]) -> tuple[list[Staged], Future[Outcome]]:
    """On a lake: stage the upload in a worker process (:mod:`.staging`), then have the
    writer commit it (:func:`commit_staged`). Returns a list that holds the
    :class:`Staged` once staging ended, and the future of the answer; the spool folder
    is removed when the chain ends, whether or not anyone still waits for it."""
    out: Future[Outcome] = Future()
    seen: list[Staged] = []
    folder = spooled.folder

    def fail(exc: BaseException) -> None:
        if not out.done():
            out.set_exception(exc)

    def answer(outcome: Outcome) -> None:
        if not out.done():
            out.set_result(outcome)

    def committed(done: Future[Outcome]) -> None:
        exc = done.exception()
        if exc is not None:
            fail(exc)
        else:
            answer(done.result())

    def staged_done(done: Future[Staged]) -> None:
        try:
            staged = done.result()
        except BaseException as exc:
            state.spool.remove(folder)
            fail(exc)
            return
        seen.append(staged)
        if not staged.valid:
            state.spool.remove(folder)
            answer(rejected(staged, spooled))
            return

        def job() -> Outcome:
            started = time.perf_counter()
            try:
                return commit_staged(state.store, staged, spooled, owner)
            finally:
                staged.commit_s = time.perf_counter() - started
                state.spool.remove(folder)

        state.writer.run(job).add_done_callback(committed)

    assert state.stager is not None
    state.stager.submit(stage_upload, str(spooled.path), str(folder), uuid.uuid4().hex,
                        state.limits, extras).add_done_callback(staged_done)
    return seen, out


__all__ = ["look_up_before_staging", "previous_answer", "stage_and_commit"]
