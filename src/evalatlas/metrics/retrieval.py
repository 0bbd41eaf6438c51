"""Retrieval precision and recall of the sources an agent used (seed 003).

Definitions follow upstream ``shared/eval/retrieval.py`` exactly (reference
framework-comparison.md section 5):

- matching is exact, case-sensitive string equality, no path normalisation;
- ``precision = hits / len(retrieved)``, where ``hits`` counts every retrieved entry that is
  expected, so a duplicated relevant source counts twice; an empty retrieved list gives 0;
- ``recall = |expected entries that were retrieved| / len(expected)``, and **1.0 when
  nothing is expected** (nothing was missed).

``normalise=True`` is an opt-in evalatlas extension, off by default so that published
numbers reproduce: each source is lower-cased, stripped, has ``\\`` turned into ``/`` and
is reduced to its last path component, so ``docs/SLA_Policies.md`` matches
``sla_policies.md``.
"""

from __future__ import annotations

from collections.abc import Sequence


def normalise_source(source: str) -> str:
    """Case- and path-insensitive form of a source name (the opt-in normalisation)."""
    text = str(source).strip().replace("\\", "/").rstrip("/")
    return text.rsplit("/", 1)[-1].lower()


def _prepare(items: Sequence[str], normalise: bool) -> list[str]:
    return [normalise_source(s) for s in items] if normalise else [str(s) for s in items]


def retrieval_precision(
    retrieved: Sequence[str], expected: Sequence[str], *, normalise: bool = False
) -> float:
    """``hits / len(retrieved)``; 0.0 for an empty retrieved list (seed 003, upstream).

    Duplicates in ``retrieved`` are counted as upstream does.
    """
    got = _prepare(retrieved, normalise)
    if not got:
        return 0.0
    want = set(_prepare(expected, normalise))
    return sum(1 for s in got if s in want) / len(got)


def retrieval_recall(
    retrieved: Sequence[str], expected: Sequence[str], *, normalise: bool = False
) -> float:
    """``|expected ∩ retrieved| / len(expected)``; 1.0 when nothing is expected (upstream).

    Each expected entry counts once per occurrence in ``expected``.
    """
    want = _prepare(expected, normalise)
    if not want:
        return 1.0
    got = set(_prepare(retrieved, normalise))
    return sum(1 for s in want if s in got) / len(want)
