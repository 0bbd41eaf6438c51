"""The single writer: a job's caller learns of its commit only after the new store version."""

from __future__ import annotations

import threading
import time

import pytest

from evalatlas.serve.writer import Writer


def test_the_store_version_is_new_before_the_caller_gets_the_answer() -> None:
    # A client that deletes, then asks for a fresh leaderboard, must not be served the
    # kept answer of the version before its delete (it was, when the version was bumped
    # after the job's future had been resolved).
    versions: list[int] = []
    seen_at_answer: list[int] = []

    def bump() -> None:
        time.sleep(0.05)  # a slow bump widens the window the old order left open
        versions.append(len(versions) + 1)

    writer = Writer(on_commit=bump)
    try:
        for _ in range(5):
            writer.run(lambda: "done").result(timeout=10)
            seen_at_answer.append(len(versions))
        assert seen_at_answer == [1, 2, 3, 4, 5]
    finally:
        writer.stop()


def test_a_failed_job_also_ends_its_version_and_its_error_reaches_the_caller() -> None:
    calls = threading.Event()
    writer = Writer(on_commit=calls.set)

    def boom() -> None:
        raise RuntimeError("disk full")

    try:
        with pytest.raises(RuntimeError, match="disk full"):
            writer.run(boom).result(timeout=10)
        assert calls.is_set()
    finally:
        writer.stop()


def test_a_failing_notification_does_not_lose_the_answer() -> None:
    def broken() -> None:
        raise ValueError("no state yet")

    writer = Writer(on_commit=broken)
    try:
        assert writer.run(lambda: 42).result(timeout=10) == 42
    finally:
        writer.stop()
