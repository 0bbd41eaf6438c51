"""collector.paused() and paused_in_steps(): the cyclic collector is off inside the block
and restored after, on an exception too, and a caller's own pause is left as it was;
a step collects the cycles made since, unless the caller had paused the collector."""

from __future__ import annotations

import gc
import weakref

import pytest

from evalatlas import collector


def test_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), collector.paused():
        _ = 1 / 0
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Node:
    """An object in a reference cycle with itself (freed only by the collector)."""

    def __init__(self) -> None:
        self.me = self


def _cycle() -> weakref.ref[_Node]:
    return weakref.ref(_Node())


def test_paused_in_steps_restores_the_collector_and_collects_at_each_step() -> None:
    assert gc.isenabled()
    with collector.paused_in_steps() as step:
        assert not gc.isenabled()
        left = _cycle()
        assert left() is not None  # paused: the cycle waits
        step()
        assert left() is None  # the step collected it
        assert not gc.isenabled()  # and the pause goes on
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), collector.paused_in_steps():
        _ = 1 / 0
    assert gc.isenabled()


def test_paused_in_steps_leaves_a_callers_pause_alone() -> None:
    gc.disable()
    try:
        with collector.paused_in_steps() as step:
            left = _cycle()
            step()  # the caller paused the collector: no collection here either
            assert left() is not None
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.collect()
