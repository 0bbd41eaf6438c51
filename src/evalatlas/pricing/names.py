"""Model-name normalisation, so one model has one price whatever the harness called it.

``openai/gpt-5-mini`` (LiteLLM, smolagents, CrewAI), ``openai:gpt-5-mini`` (pydantic-ai),
``@gpt-5-mini`` (FC-Eval strips a leading ``@``), ``accounts/fireworks/models/qwen3-...``
(Fireworks) and ``gpt-5-mini`` all resolve to ``gpt-5-mini``. Rules, in order:

1. strip whitespace and lower-case; drop leading ``@``;
2. keep the text after the last ``/`` (framework-comparison and FC-Eval);
3. drop a leading ``provider:`` (``openai:``, ``anthropic:``, ``google-gla:`` ...), and
   in general the text up to the last ``:`` **unless** what follows is a tag rather than
   a model (``llama3:8b``, ``...-v1:0``, ``:latest``): a tag keeps the name whole, since
   cutting it would price ``llama3:8b`` as a model called ``8b``.

Date suffixes are not removed here; :func:`candidates` yields the undated name as a
second lookup key (``claude-sonnet-4-20250514`` -> ``claude-sonnet-4``).
"""

from __future__ import annotations

import re

_TAG = re.compile(r"^(\d+(\.\d+)?[a-z]?|latest|free|beta|v\d+(\.\d+)*)$")
_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


def normalise_model_name(name: str) -> str:
    """Canonical lookup key of a model name (see module docstring for the rules)."""
    s = str(name).strip().lower().lstrip("@")
    s = s.rsplit("/", 1)[-1]
    if ":" in s:
        tail = s.rsplit(":", 1)[1]
        if tail and not _TAG.match(tail):
            s = tail
        else:
            # "openai:llama3:8b" -> "llama3:8b": drop provider prefixes before the tag
            parts = s.split(":")
            s = ":".join(parts[-2:]) if len(parts) > 2 else s
    return s


def split_provider(name: str) -> tuple[str | None, str]:
    """``("groq", "llama-3.1-8b-instant")`` from ``groq/llama-3.1-8b-instant`` or
    ``groq:llama-3.1-8b-instant``; ``(None, name)`` when there is no prefix.

    The prefix is only a *candidate* provider: the price lookup uses it when the price
    data knows a provider of that id, and otherwise ignores it (``accounts/...``).
    The model part keeps the rest of the path (``openrouter/anthropic/claude-3.5-sonnet``
    -> ``("openrouter", "anthropic/claude-3.5-sonnet")``).
    """
    s = str(name).strip().lstrip("@")
    for sep in ("/", ":"):
        head, found, tail = s.partition(sep)
        if found and head and tail and not _TAG.match(tail.lower()):
            return head.lower(), tail
    return None, s


def candidates(name: str) -> list[str]:
    """Lookup keys for ``name``, most specific first: normalised, then without a date."""
    key = normalise_model_name(name)
    out = [key]
    undated = _DATE.sub("", key)
    if undated != key:
        out.append(undated)
    return out
