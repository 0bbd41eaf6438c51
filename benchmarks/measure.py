"""Measuring helpers shared by the benchmarks and the tests that check their figures
(``tests/conftest.py`` puts this folder on ``sys.path``): one comparison of result rows and
one reading of a process's peak memory, so a test and its benchmark judge alike."""

from __future__ import annotations

import math
import resource
from typing import Any


def first_difference(a: Any, b: Any, *, rel_tol: float = 1e-9, abs_tol: float = 1e-12,
                     where: str = "") -> str | None:
    """Where two JSON-like values (result rows, envelopes) first differ, as a path such as
    ``[3].success_rate: 0.5 != 0.6``, or None when they are equal: dicts with the same
    keys, lists and tuples of the same length, floats equal to ``rel_tol`` (a float sum
    may differ in its last digits with scan or summation order; NaN equals NaN), anything
    else by ``==``."""
    if isinstance(a, float) and isinstance(b, float):
        if (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rel_tol,
                                                              abs_tol=abs_tol):
            return None
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys differ by {sorted(set(a) ^ set(b), key=str)}"
        return next((d for k in a if (d := first_difference(
            a[k], b[k], rel_tol=rel_tol, abs_tol=abs_tol, where=f"{where}.{k}"))), None)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return f"{where}: {len(a)} != {len(b)} items"
        return next((d for i, (x, y) in enumerate(zip(a, b, strict=True)) if (
            d := first_difference(x, y, rel_tol=rel_tol, abs_tol=abs_tol,
                                  where=f"{where}[{i}]"))), None)
    return None if a == b else f"{where}: {a!r} != {b!r}"


def same(a: Any, b: Any) -> bool:
    """Equal result rows, floats to 1e-9 (:func:`first_difference`)."""
    return first_difference(a, b) is None


def peak_kb(pid: int | str = "self") -> int:
    """Peak resident memory of a process in KiB: ``VmHWM`` of ``/proc/<pid>/status``, its
    own memory since exec. Not ``getrusage``'s ``ru_maxrss``: Linux folds the forked copy
    of the parent into a child's ``ru_maxrss`` at exec, so a measurement run from a large
    parent (a full pytest run, ~1.1 GB) reported the parent's size. ``ru_maxrss`` only
    where there is no ``/proc`` (this process only)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        if pid != "self":
            raise
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
