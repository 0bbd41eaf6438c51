"""The one matcher of names people type (issue 21 point 5): tiers, ambiguity, candidates."""

from __future__ import annotations

import pytest

from evalatlas.errors import ArgumentError
from evalatlas.selectors import Candidate, as_selectors, closest, match, name_key, resolve

AGENTS = [
    Candidate("a1", ("Gemini 3 Pro Preview (2025-11-18)",), ("a1f3c9e2",), "agent"),
    Candidate("b2", ("Claude 4.5 Sonnet (20250929)",), ("b27d0e11",), "agent"),
    Candidate("c3", ("claude-4.5-opus",), ("c3aa0b42",), "agent"),
    Candidate("d4", ("MiniMax M2",), ("d4e5f6a7",), "agent"),
]


def _keys(sel: str) -> list[str]:
    return [c.key for c in resolve(sel, AGENTS, argument="agent", what="agent")]


@pytest.mark.parametrize(("raw", "key"), [
    ("Claude 4.5", "claude-4.5"), ("claude_4.5", "claude-4.5"), ("  CLAUDE--4.5 ", "claude-4.5"),
    ("gemini 3\tpro", "gemini-3-pro"),
])
def test_name_key(raw: str, key: str) -> None:
    assert name_key(raw) == key


@pytest.mark.parametrize(("sel", "tier", "key"), [
    ("MiniMax M2", "exact", "d4"),
    ("a1f3c9e2", "exact", "a1"),
    ("minimax_m2", "normalised", "d4"),
    ("gemini-3-pro", "prefix", "a1"),
    ("B27D", "prefix", "b2"),          # an id prefix, any case, >= 4 characters
    ("4.5 sonnet", "substring", "b2"),
])
def test_tiers(sel: str, tier: str, key: str) -> None:
    got_tier, hits = match(sel, AGENTS)
    assert got_tier == tier and [h.key for h in hits] == [key]
    assert _keys(sel) == [key]


def test_short_id_prefix_is_not_an_id_match() -> None:
    assert match("a1f", AGENTS) == (None, [])


def test_ambiguous_lists_every_match() -> None:
    with pytest.raises(ArgumentError) as err:
        _keys("claude 4.5")
    msg = str(err.value)
    assert msg.startswith("agent: 'claude 4.5' is ambiguous (prefix of ")
    assert "agent Claude 4.5 Sonnet (20250929)" in msg and "agent claude-4.5-opus" in msg


def test_unknown_lists_the_closest() -> None:
    with pytest.raises(ArgumentError) as err:
        _keys("Minimax M3")
    assert str(err.value) == ("agent: 'Minimax M3' matches no agent; closest: "
                              "agent MiniMax M2")
    assert closest("claude 4.6", AGENTS, n=2) == ["agent claude-4.5-opus",
                                                   "agent Claude 4.5 Sonnet (20250929)"]


def test_exact_name_shared_by_two_candidates_selects_both() -> None:
    twins = [Candidate("e1", ("run",), kind="experiment"),
             Candidate("e2", ("run",), kind="experiment")]
    assert [c.key for c in resolve("RUN", twins, argument="experiment")] == ["e1", "e2"]


def test_a_wider_match_covers_its_own_parts() -> None:
    """An agent and its own experiments matched by one prefix: the agent."""
    cands = [Candidate("e1", ("gpt-5 on swe",), kind="experiment"),
             Candidate("e2", ("gpt-5 on tb",), kind="experiment"),
             Candidate("g", ("gpt-5",), kind="agent", covers=frozenset({"e1", "e2"}))]
    assert [c.key for c in resolve("gpt", cands, argument="selector")] == ["g"]


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), ("exp", ["exp"]), (["a", "b"], ["a", "b"]), (("a",), ["a"]), ([], None),
])
def test_as_selectors(value: object, expected: list[str] | None) -> None:
    assert as_selectors(value, "experiment") == expected


@pytest.mark.parametrize("value", [123, b"exp", {"a": 1}, ["a", 2], "", ["  "]])
def test_as_selectors_refuses(value: object) -> None:
    with pytest.raises(ArgumentError, match=r"^experiment"):
        as_selectors(value, "experiment")
