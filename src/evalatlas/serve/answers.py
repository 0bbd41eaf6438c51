"""Pre-serialised answers (the leaderboard, the report), recomputed off the request path.

Why: on a 1M-episode store one leaderboard is a summary over every episode (tens of
seconds on a loaded machine), and 200 readers asking at once must not each pay it, nor
the first reader after every submission. So an answer is computed once per store
version and kept as the bytes sent (no re-encoding per request), and after every
committed write a background thread recomputes the answers readers asked for recently.

What a reader sees while the new answer is computed: the previous one at once, labelled
stale (its headers say which store version it reflects and which is current; see
:func:`headers`). A leaderboard that hung for the length of a summary after every
submission would be no leaderboard at all under steady traffic; a reader who needs its
own write (a bot that submits, then reads its rank) asks with ``fresh`` and waits for the
answer that includes every write committed before its request. A question nobody asked
before is computed on the request; concurrent askers of one question share one
computation.

The store version is the number of write jobs the server has finished since it started
(:meth:`evalatlas.serve.app.ServeState.bump`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, MutableMapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("evalatlas.serve")

HOT_SECONDS = 600.0
"""A question asked within this many seconds is recomputed after every write."""
MAX_KEYS = 64
"""Answers kept at most (the least recently asked go first)."""
MAX_SHORTCUTS = 1024
"""Query strings remembered at most (forgotten all at once past it; relearned on use)."""


@dataclass(frozen=True)
class Answer:
    """The bytes of one answer and the store version they were computed at."""

    body: bytes
    version: int


def headers(answer: Answer, current: int) -> dict[str, str]:
    """The label of an answer: ``X-Evalatlas-Answer-Version`` (the store version it
    reflects), ``X-Evalatlas-Store-Version`` (the current one) and ``X-Evalatlas-Stale``
    (``true`` while a newer write's answer is being computed)."""
    return {"X-Evalatlas-Answer-Version": str(answer.version),
            "X-Evalatlas-Store-Version": str(current),
            "X-Evalatlas-Stale": "true" if answer.version < current else "false"}


class Answers:
    """Answers by question (a hashable key), with a refresher thread.

    ``version()`` is the current store version. :meth:`peek` never blocks (a request's
    fast path); :meth:`get` computes when it must; :meth:`written` (after each write)
    wakes the refresher, which recomputes every question asked in the last
    ``hot_seconds``, newest first, always for the latest version (writes that land
    during a computation are coalesced into the next one)."""

    def __init__(self, version: Callable[[], int], *, hot_seconds: float = HOT_SECONDS,
                 max_keys: int = MAX_KEYS) -> None:
        self._version = version
        self._hot_seconds = hot_seconds
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._answers: dict[Hashable, Answer] = {}
        self._computes: dict[Hashable, Callable[[], bytes]] = {}
        self._asked: dict[Hashable, float] = {}
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._primed: dict[Hashable, Callable[[], bytes]] = {}
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="evalatlas-answers",
                                        daemon=True)
        self._thread.start()

    def peek(self, key: Hashable, *, fresh: bool = False) -> tuple[Answer | None, int]:
        """The kept answer to ``key`` if it may be served now (any kept one, or with
        ``fresh`` only one of the current version), and the current version. Marks the
        question asked; a stale answer wakes the refresher."""
        current = self._version()
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._asked[key] = time.monotonic()
        if answer is None or (fresh and answer.version < current):
            return None, current
        if answer.version < current:
            self._wake.set()
        return answer, current

    def get(self, key: Hashable, compute: Callable[[], bytes], *, fresh: bool = False
            ) -> tuple[Answer, int]:
        """The answer to ``key`` (as :meth:`peek`), computing it with ``compute()`` when
        none may be served; concurrent callers of one key share the computation. An
        exception of ``compute`` reaches the caller and the question is not kept."""
        answer, current = self.peek(key, fresh=fresh)
        if answer is not None:
            return answer, current
        answer = self._compute(key, compute, at_least=current)
        with self._lock:
            self._computes[key] = compute
            self._primed.pop(key, None)
            self._asked[key] = time.monotonic()
            self._evict()
        return answer, max(current, self._version())

    def prime(self, key: Hashable, compute: Callable[[], bytes]) -> None:
        """Have the refresher compute ``key`` once now (at start: the default
        leaderboard). It is recomputed after writes only once a reader has asked for it:
        a server taking submissions that nobody reads spends nothing on answers."""
        with self._lock:
            self._computes[key] = compute
            self._primed[key] = compute
        self._wake.set()

    def written(self) -> None:
        """A write was committed: recompute the questions asked recently."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """End the refresher (waits up to ``timeout`` for a computation in progress)."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)

    def _compute(self, key: Hashable, compute: Callable[[], bytes], *, at_least: int
                 ) -> Answer:
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                kept = self._answers.get(key)
            if kept is not None and kept.version >= at_least:
                return kept  # computed meanwhile by another caller or the refresher
            version = self._version()  # read before the computation opens its cursor
            answer = Answer(compute(), version)
            with self._lock:
                kept = self._answers.get(key)
                if kept is None or kept.version <= version:
                    self._answers[key] = answer
            return answer

    def _evict(self) -> None:
        """Forget the least recently asked questions past ``max_keys`` (under the lock)."""
        while len(self._asked) > self._max_keys:
            oldest = min(self._asked, key=self._asked.__getitem__)
            for table in (self._asked, self._computes, self._answers, self._key_locks):
                table.pop(oldest, None)

    def _hot(self) -> list[tuple[Hashable, Callable[[], bytes]]]:
        """Primed questions, then those asked within ``hot_seconds``, newest first."""
        now = time.monotonic()
        with self._lock:
            asked = sorted(((t, k) for k, t in self._asked.items()
                            if now - t <= self._hot_seconds and k in self._computes),
                           key=lambda p: p[0], reverse=True)
            primed, self._primed = self._primed, {}
            return [*primed.items(), *((k, self._computes[k]) for _, k in asked
                                       if k not in primed)]

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            for key, compute in self._hot():
                if self._stopping:
                    return
                try:
                    self._compute(key, compute, at_least=self._version())
                except Exception as exc:  # the last answer stays, labelled stale
                    log.warning("recomputing an answer failed: %s: %s",
                                type(exc).__name__, exc)


class Shortcuts:
    """(path, raw query string) -> (answer key, fresh, media type), learned from the
    routes once FastAPI has validated that query (:mod:`.fastpath` answers from it)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, bytes], tuple[Hashable, bool, str]] = {}

    def learn(self, scope: MutableMapping[str, Any], key: Hashable, fresh: bool, media_type: str
              ) -> None:
        """The route answered this path and query string with the kept ``key``."""
        if len(self._known) >= MAX_SHORTCUTS:
            self._known.clear()
        self._known[(scope["path"], scope.get("query_string", b""))] = (key, fresh,
                                                                         media_type)

    def find(self, scope: MutableMapping[str, Any]) -> tuple[Hashable, bool, str] | None:
        if scope.get("method") != "GET":
            return None
        return self._known.get((scope["path"], scope.get("query_string", b"")))


__all__ = ["Answer", "Answers", "Shortcuts", "headers"]
