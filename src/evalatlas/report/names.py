"""Names as the report shows them: visible, short, unique.

An agent, task or benchmark name comes from foreign files and can be anything: a
megabyte long (issue #28: a 1 MB name copied 12,578 times made a 14.5 MB page), or
holding Unicode bidi controls that reorder what a reader sees (``\\u202eo4-tpg`` reads
as "gpt-4o", beside the real gpt-4o). Every name the page shows goes through
:func:`display_name`: control and bidi characters become visible escapes (the rule of
:func:`evalatlas.text.terminal_safe`, which the CLI tables use), runs of whitespace one
space, and the result is cut to ``limit`` characters with an ellipsis. The full name is
kept once, up to :data:`FULL_NAME_LIMIT` characters, in the leaderboard's ``full_name``.
"""

from __future__ import annotations

from evalatlas.text import terminal_safe

NAME_LIMIT = 80
"""Characters of a name shown in tables and charts (the rest: hover the leaderboard)."""
FULL_NAME_LIMIT = 2_000
"""Characters of a name kept at all: the page stays bounded whatever the name."""


def display_name(text: object, limit: int = NAME_LIMIT) -> str:
    """``text`` made visible (controls and bidi characters as ``\\uXXXX``), its
    whitespace collapsed, and cut to ``limit`` characters (``…`` marks a cut)."""
    raw = str(text)
    if len(raw) > 4 * limit + 64:  # never scan a megabyte to show eighty characters
        raw = raw[: 4 * limit + 64]
        cut = True
    else:
        cut = False
    shown = " ".join(terminal_safe(raw).split())
    if cut or len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return shown


def full_name(text: object) -> str:
    """The name as kept once in the page: visible, at most :data:`FULL_NAME_LIMIT`."""
    return display_name(text, FULL_NAME_LIMIT)


def unique_labels(labels: list[str], keys: list[str]) -> list[str]:
    """Display names made unique: two names shown alike (equal, or equal once cut) get
    their key's start appended; a chart axis would otherwise merge them. Keys are shown
    shortened too."""
    shown = [display_name(label) for label in labels]
    seen: dict[str, int] = {}
    for s in shown:
        seen[s] = seen.get(s, 0) + 1
    out = [f"{s} [{display_name(key, 12)}]" if seen[s] > 1 else s
           for s, key in zip(shown, keys, strict=True)]
    # still equal (keys alike in their first characters): number them
    again: dict[str, int] = {}
    for i, s in enumerate(out):
        n = again.get(s, 0)
        again[s] = n + 1
        if n:
            out[i] = f"{s} #{n + 1}"
    return out
