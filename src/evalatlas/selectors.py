"""Names people type: the one matcher behind every agent, experiment and benchmark selector.

Users type names from memory (``compare gemini-3-pro 'claude 4.5'``, ``summary
--experiment swe``), so a selector is matched against what the store calls things in
tiers, the first tier with a match winning:

1. **exact**: the selector equals a name or an id as stored;
2. **normalised**: equal after :func:`name_key` (case-insensitive; ``-``, ``_`` and
   spaces alike);
3. **prefix**: a unique prefix of a normalised name, or of an id (at least
   :data:`MIN_ID_PREFIX` characters, so ``a`` never picks a hash);
4. **substring**: a unique substring of a normalised name.

At the exact and normalised tiers every candidate carrying that name matches (two
experiments may share a name). At the prefix and substring tiers the selector must be
unambiguous: it names one candidate, or one candidate that covers every other match (an
agent and that agent's own experiments). An unknown or ambiguous selector is an
:class:`~evalatlas.errors.ArgumentError` that lists the closest candidates.

Pure functions over plain candidates: the store loads them (``store/selection.py``),
this module decides. Nothing here reads a file or a database.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evalatlas.errors import ArgumentError

MIN_ID_PREFIX = 4
"""Shortest id prefix accepted (ids are hashes: shorter prefixes collide by chance)."""

TIERS = ("exact", "normalised", "prefix", "substring")
"""Match tiers, strongest first (see the module docstring)."""

_SEPARATORS = re.compile(r"[\s_\-]+")


def name_key(name: str) -> str:
    """The form names are compared in: case-folded, runs of ``-``, ``_`` and white space
    as one ``-``, no leading or trailing separator (``'Claude 4.5'`` -> ``claude-4.5``)."""
    return _SEPARATORS.sub("-", str(name).casefold()).strip("-")


@dataclass(frozen=True)
class Candidate:
    """Something a selector can name: ``key`` identifies it (an agent id, an experiment
    id, a benchmark name), ``names`` are what people call it, ``ids`` are matched exactly
    or by prefix only, ``kind`` says what it is (``agent``, ``experiment`` ...) and
    ``covers`` what selecting it selects (experiment ids; default: ``{key}``)."""

    key: str
    names: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    kind: str = ""
    covers: frozenset[str] = field(default_factory=frozenset)

    @property
    def label(self) -> str:
        """How to show the candidate in a message: its first name, else its key."""
        shown = next((n for n in self.names if n), self.key)
        return f"{self.kind} {shown}".strip() if self.kind else shown

    def members(self) -> frozenset[str]:
        return self.covers or frozenset({self.key})


def _tier(selector: str, key: str, cand: Candidate) -> int | None:
    """The strongest tier (index into :data:`TIERS`) at which ``selector`` names ``cand``."""
    names = [n for n in cand.names if n]
    if selector in names or selector in cand.ids:
        return 0
    if not key:
        return None
    keys = [name_key(n) for n in names]
    if key in keys:
        return 1
    low = selector.casefold()
    if any(k.startswith(key) for k in keys) or (
            len(selector) >= MIN_ID_PREFIX
            and any(i.casefold().startswith(low) for i in cand.ids if i)):
        return 2
    if any(key in k for k in keys):
        return 3
    return None


def match(selector: str, candidates: Iterable[Candidate]) -> tuple[str | None, list[Candidate]]:
    """``(tier, candidates)`` of the strongest tier at which ``selector`` names anything,
    or ``(None, [])``. No ambiguity check: see :func:`resolve`."""
    key = name_key(selector)
    best: int | None = None
    hits: list[Candidate] = []
    for cand in candidates:
        t = _tier(selector, key, cand)
        if t is None or (best is not None and t > best):
            continue
        if best is None or t < best:
            best, hits = t, []
        hits.append(cand)
    return (TIERS[best] if best is not None else None), hits


def closest(selector: str, candidates: Iterable[Candidate], n: int = 5) -> list[str]:
    """Labels of the ``n`` candidates whose names look most like ``selector`` (difflib's
    ratio on :func:`name_key` forms, at least 0.3; a name's part after its last ``/``
    also counts, so ``gpt-4o-mni`` is closest to ``openai/gpt-4o-mini``)."""
    key = name_key(selector)
    scored: dict[str, float] = {}
    for cand in candidates:
        for name in (x for x in cand.names if x):
            k = name_key(name)
            score = max(difflib.SequenceMatcher(None, key, part).ratio()
                        for part in {k, k.rsplit("/", 1)[-1]})
            scored[cand.label] = max(scored.get(cand.label, 0.0), score)
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    return [label for label, score in ranked[:n] if score >= 0.3]


def resolve(selector: str, candidates: Sequence[Candidate], *, argument: str,
            what: str = "name") -> list[Candidate]:
    """The candidates ``selector`` names (rules in the module docstring), or an
    :class:`ArgumentError` naming ``argument`` and listing the closest candidates when it
    names none, or several at the prefix or substring tier."""
    if not isinstance(selector, str):
        raise ArgumentError(f"{argument} takes names (strings); got "
                            f"{type(selector).__name__} {selector!r}")
    tier, hits = match(selector, candidates)
    if not hits:
        near = closest(selector, candidates)
        hint = f"; closest: {', '.join(near)}" if near else (
            "" if candidates else f"; there is no {what} to choose from")
        raise ArgumentError(f"{argument}: {selector!r} matches no {what}{hint}")
    if tier in ("exact", "normalised") or len({c.key for c in hits}) == 1:
        return hits
    union = frozenset().union(*(c.members() for c in hits))
    wide = [c for c in hits if c.members() >= union]
    if wide:
        return wide[:1]
    listed = ", ".join(sorted({c.label for c in hits})[:8])
    more = len({c.label for c in hits}) - 8
    raise ArgumentError(f"{argument}: {selector!r} is ambiguous ({tier} of {listed}"
                        f"{f' and {more} more' if more > 0 else ''}); type more of the name")


def as_selectors(value: object, argument: str) -> list[str] | None:
    """A selector argument as a list: None stays None (no filter), one string is one
    selector, a sequence of strings is several. Anything else (a number, a dict, bytes)
    is an :class:`ArgumentError` naming ``argument``; so is an empty string."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if isinstance(items, bytes | dict) or not isinstance(items, Iterable):
        raise ArgumentError(f"{argument} takes a name or a list of names; got "
                            f"{type(value).__name__} {value!r}")
    out = list(items)
    for item in out:
        if not isinstance(item, str):
            raise ArgumentError(f"{argument} takes a name or a list of names; got "
                                f"{type(item).__name__} {item!r} in it")
        if not item.strip():
            raise ArgumentError(f"{argument}: an empty name selects nothing; give a name "
                                f"or leave {argument} out")
    return out or None
