"""Kept answers: computed once per store version, recomputed off the request path after
a write; while that runs a reader gets the previous answer labelled stale, and a reader
asking ``fresh`` waits for the new one."""

from __future__ import annotations

import threading
import time

import pytest

from evalatlas.serve.answers import Answers, headers


class Store:
    """A store version and a computation that can be held mid-way."""

    def __init__(self) -> None:
        self.version = 0
        self.calls: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()

    def compute(self) -> bytes:
        seen = self.version
        self.calls.append(seen)
        self.started.set()
        assert self.gate.wait(30)
        return f"board at {seen}".encode()


@pytest.fixture
def store():
    return Store()


@pytest.fixture
def answers(store):
    kept = Answers(lambda: store.version)
    yield kept
    store.gate.set()
    kept.stop()


def wait_for(check, seconds=30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_computed_once_per_version_then_served_as_bytes(answers, store):
    first, current = answers.get("board", store.compute)
    assert (first.body, first.version, current) == (b"board at 0", 0, 0)
    again, _ = answers.get("board", store.compute)
    assert again is first and store.calls == [0]  # the same bytes, not recomputed
    assert headers(first, current) == {"X-Evalatlas-Answer-Version": "0",
                                       "X-Evalatlas-Store-Version": "0",
                                       "X-Evalatlas-Stale": "false"}


def test_after_a_write_the_previous_answer_is_served_labelled_until_recomputed(answers,
                                                                                 store):
    answers.get("board", store.compute)
    store.gate.clear()
    store.started.clear()
    store.version = 1
    answers.written()  # the refresher starts on version 1 and is held mid-computation
    assert store.started.wait(30)
    answer, current = answers.peek("board")
    assert (answer.body, answer.version, current) == (b"board at 0", 0, 1)
    assert headers(answer, current)["X-Evalatlas-Stale"] == "true"

    got: dict[str, object] = {}
    reader = threading.Thread(target=lambda: got.update(
        fresh=answers.get("board", store.compute, fresh=True)))
    reader.start()  # fresh: waits for the computation in progress, does not start another
    time.sleep(0.2)
    assert reader.is_alive() and answers.peek("board", fresh=True)[0] is None
    store.gate.set()
    reader.join(30)
    fresh, current = got["fresh"]
    assert (fresh.body, fresh.version, current) == (b"board at 1", 1, 1)
    assert store.calls == [0, 1]  # one computation per version, shared
    assert headers(*answers.peek("board"))["X-Evalatlas-Stale"] == "false"


def test_writes_during_a_computation_are_coalesced(answers, store):
    answers.get("board", store.compute)
    store.gate.clear()
    store.started.clear()
    store.version = 1
    answers.written()
    assert store.started.wait(30)
    for v in (2, 3, 4):  # three more writes while version 1 is computed
        store.version = v
        answers.written()
    store.gate.set()
    assert wait_for(lambda: answers.peek("board")[0].version == 4)
    assert store.calls == [0, 1, 4]


def test_a_question_nobody_asked_lately_is_not_recomputed(store):
    kept = Answers(lambda: store.version, hot_seconds=0.05)
    try:
        kept.get("board", store.compute)
        time.sleep(0.1)
        store.version = 1
        kept.written()
        time.sleep(0.3)
        assert store.calls == [0]
        answer, current = kept.peek("board")  # asked again: labelled, and recomputed
        assert (answer.version, current) == (0, 1)
        assert wait_for(lambda: kept.peek("board")[0].version == 1)
    finally:
        kept.stop()


def test_primed_question_is_computed_once_and_kept_fresh_only_once_asked(answers, store):
    answers.prime("board", store.compute)
    assert wait_for(lambda: store.calls == [0])
    store.version = 1
    answers.written()  # nobody has read it: a write costs no computation
    time.sleep(0.3)
    assert store.calls == [0]
    answer, current = answers.peek("board")  # the first reader: the start's answer
    assert (answer.body, answer.version, current) == (b"board at 0", 0, 1)
    assert wait_for(lambda: answers.peek("board")[0].version == 1)
    store.version = 2
    answers.written()  # asked now: recomputed after the write
    assert wait_for(lambda: answers.peek("board")[0].version == 2)
    assert store.calls == [0, 1, 2]


def test_a_failed_computation_reaches_the_asker_and_keeps_nothing(answers, store):
    def broken() -> bytes:
        raise ValueError("bad argument")

    with pytest.raises(ValueError, match="bad argument"):
        answers.get("bad", broken)
    assert answers.peek("bad") == (None, 0)
    answers.get("board", store.compute)
    store.version = 1

    def failing_refresh() -> bytes:
        raise RuntimeError("the store went away")

    answers.prime("board", failing_refresh)  # a refresh that fails keeps the last answer
    time.sleep(0.3)
    answer, current = answers.peek("board")
    assert (answer.body, current) == (b"board at 0", 1)


def test_at_most_max_keys_answers_are_kept(store):
    kept = Answers(lambda: store.version, max_keys=3)
    try:
        for key in ("a", "b", "c", "d"):
            kept.get(key, store.compute)
            time.sleep(0.01)
        assert kept.peek("a")[0] is None  # the least recently asked went
        assert all(kept.peek(k)[0] is not None for k in ("b", "c", "d"))
    finally:
        kept.stop()
