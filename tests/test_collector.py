"""collector.paused(): the cyclic collector is off inside the block and restored after,
on an exception too, and a caller's own pause is left as it was."""

from __future__ import annotations

import gc

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
