"""Model-name normalisation on every spelling in the reference notes."""

from __future__ import annotations

import pytest

from evalatlas.pricing.names import candidates, normalise_model_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # seed 003 / framework-comparison.md §4 and §2 (pydantic_ai, smolagents, crewai)
        ("openai/gpt-5-mini", "gpt-5-mini"),
        ("openai:gpt-5-mini", "gpt-5-mini"),
        ("gpt-5-mini", "gpt-5-mini"),
        # fc-eval.md §8: leading "@" and provider prefixes are stripped
        ("@gpt-5-mini", "gpt-5-mini"),
        ("anthropic/claude-opus-4-1", "claude-opus-4-1"),
        ("google/gemini-2.5-pro", "gemini-2.5-pro"),
        ("fireworks/qwen3-coder-480b-a35b-instruct", "qwen3-coder-480b-a35b-instruct"),
        ("accounts/fireworks/models/qwen3-coder-480b-a35b-instruct",
         "qwen3-coder-480b-a35b-instruct"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4-20250514"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"),
        # scylla fixture models
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
        ("  Claude-Haiku-4-5 ", "claude-haiku-4-5"),
        # pydantic-ai provider prefix variants
        ("google-gla:gemini-2.5-pro", "gemini-2.5-pro"),
        ("anthropic:claude-opus-4-1", "claude-opus-4-1"),
        # a trailing tag is part of the model, not a provider separator
        ("llama3:8b", "llama3:8b"),
        ("ollama:llama3:8b", "llama3:8b"),
        ("qwen2.5-coder:latest", "qwen2.5-coder:latest"),
    ],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise_model_name(raw) == expected


def test_all_seed_spellings_resolve_alike() -> None:
    names = ["openai/gpt-5-mini", "openai:gpt-5-mini", "@gpt-5-mini", "gpt-5-mini"]
    assert {normalise_model_name(n) for n in names} == {"gpt-5-mini"}


def test_candidates_add_undated_name() -> None:
    assert candidates("anthropic/claude-sonnet-4-20250514") == [
        "claude-sonnet-4-20250514", "claude-sonnet-4"]
    assert candidates("gpt-4o-mini-2024-07-18") == ["gpt-4o-mini-2024-07-18", "gpt-4o-mini"]
    assert candidates("gpt-5-mini") == ["gpt-5-mini"]
