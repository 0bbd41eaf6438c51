"""Checks of the public API's option arguments: one rule each, one error class.

A bad option is an :class:`~evalatlas.errors.ArgumentError` (an ``EvalAtlasError`` and a
``ValueError``) raised before anything is opened or computed, whose message names the
argument in API words (``confidence``, not ``--confidence``) and says what is accepted.
Why here and not deep in the statistics: ``summary(confidence=95)`` used to fail as a
bare ``ValueError`` from a bootstrap two layers down, after the store was read.

A root-level utility (imports only :mod:`evalatlas.errors`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeVar

from evalatlas.errors import ArgumentError

T = TypeVar("T")


def check_choice(value: T, argument: str, choices: Iterable[T]) -> T:
    """``value`` when it is one of ``choices``; else an :class:`ArgumentError` naming
    ``argument`` and listing the choices."""
    allowed = list(choices)
    if isinstance(value, str | int | float | bool | None) and value in allowed:
        return value
    raise ArgumentError(f"{argument} must be one of {', '.join(map(str, allowed))}; "
                        f"got {value!r}")


def check_fraction(value: object, argument: str, example: float) -> float:
    """``value`` as a float when it is a number strictly between 0 and 1 (a confidence,
    an alpha, a power); a percentage such as 95, a boolean, NaN or text is an
    :class:`ArgumentError` naming ``argument`` with an ``example`` of what works."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not 0 < value < 1:
        raise ArgumentError(f"{argument} must be a fraction in (0, 1), e.g. {example:g}; "
                            f"got {value!r}")
    return float(value)

