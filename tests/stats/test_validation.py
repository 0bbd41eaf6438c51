"""Public stats functions reject impossible arguments with a clear ValueError (issue 12)."""

from __future__ import annotations

import math

import pytest

from evalatlas.stats import (
    bootstrap_ci,
    holm_adjust,
    mcnemar_test,
    mean_with_interval,
    paired_difference,
    wilson_interval,
)


@pytest.mark.parametrize("call", [
    lambda: paired_difference([1, 0, 1], [0, 0, 1], confidence=95),
    lambda: paired_difference([1, 0, 1], [0, 0, 1], confidence=1.0),
    lambda: bootstrap_ci([1.0, 2.0, 3.0], confidence=95),
    lambda: mean_with_interval([1.0, 2.0], confidence=0),
    lambda: wilson_interval(3, 10, confidence=95),
])
def test_confidence_outside_0_1_is_rejected(call) -> None:
    with pytest.raises(ValueError, match="confidence"):
        call()


@pytest.mark.parametrize("pvalues", [[0.01, 1.5], [-0.1, 0.2]])
def test_holm_rejects_p_outside_0_1(pvalues) -> None:
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        holm_adjust(pvalues)


def test_holm_keeps_nan_as_missing() -> None:
    out = holm_adjust([0.01, math.nan, 0.04])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)


def test_lengths_and_methods() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="differ in length"):
        mcnemar_test([True], [True, False])
    with pytest.raises(ValueError, match="unknown McNemar method"):
        mcnemar_test([True], [False], method="fisher")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown paired test"):
        paired_difference([1, 0], [0, 1], test="z")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
