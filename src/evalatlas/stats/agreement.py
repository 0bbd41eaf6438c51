"""Agreement of two binary outcome vectors over the same items: phi and raw agreement.

Used to tell whether two result files describe the same run, or which of two candidate
models a mislabelled run belongs to (:mod:`evalatlas.adapters.swebench_pro`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def phi_agreement(a: Sequence[bool], b: Sequence[bool]
                  ) -> tuple[float | None, float | None, int]:
    """``(phi, agreement, n)`` of two paired binary vectors (item ``i`` of ``a`` and of
    ``b`` are the same item).

    With the 2x2 counts n11 (both true), n10, n01, n00 (both false):
    phi = (n11*n00 - n10*n01) / sqrt((n11+n10)(n01+n00)(n11+n01)(n10+n00)), the Pearson
    correlation of the two 0/1 vectors (Matthews' correlation coefficient; Yule 1912,
    Matthews 1975), in [-1, 1]; agreement = (n11 + n00) / n. phi is None when either
    vector is constant (a zero margin: the correlation is undefined, not 0); both are
    None for no items (nothing to compare is not 0% agreement).
    """
    if len(a) != len(b):
        raise ValueError(f"paired outcomes differ in length: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return None, None, 0
    n11 = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    n10 = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    n01 = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n00 = n - n11 - n10 - n01
    den = math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
    phi = (n11 * n00 - n10 * n01) / den if den else None
    return phi, (n11 + n00) / n, n
