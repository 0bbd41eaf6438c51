"""The formulas' one missing-value rule: a value that is None or NaN is missing (unknown),
never 0. A formula given a missing input returns its own "unknown" (NaN or None, as its
docstring says) and an aggregate skips missing values; both read the rule from here."""

from __future__ import annotations

import math
from collections.abc import Iterable


def known(value: float | None) -> float | None:
    """``value`` as a float, or None when it is missing (None or NaN). Infinity is a
    value (a cost of pass may be infinite), not missing."""
    if value is None:
        return None
    v = float(value)
    return None if math.isnan(v) else v


def known_values(values: Iterable[float | None]) -> list[float]:
    """The values that are not missing (:func:`known`), as floats, in order."""
    return [v for v in map(known, values) if v is not None]
