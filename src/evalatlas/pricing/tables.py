"""Price tables of the seed documents and reference notes, as named presets.

Prices are USD per **million** tokens (``input``, ``output``, optional ``cache_read``,
``cache_write``); the upstream tables in per-token or per-1K units are converted here,
each with its source. The upstream tables have no cache prices: those come from
genai-prices when it knows the model, else cache tokens are charged at the input price
(see :mod:`evalatlas.pricing.sources`).

Default order (first match wins): ``scylla`` (ProjectScylla's current ``pricing.py``),
``fc-eval``, ``framework-comparison``. ``scylla-doc`` (seed 001's table) is opt-in: the
reference notes call it obsolete (Opus 4.5 at $15/$75 where Anthropic charges $5/$25), so
using it by default would mis-price real runs; select it to reproduce the document.
Upstream "unknown model costs $0" (FC-Eval, framework-comparison) and "unknown model
costs $3/$15" (ProjectScylla) are not reproduced: unknown stays unknown unless
``unknown_model_cost="zero"``.
"""

from __future__ import annotations

PriceRow = tuple[float, float, float | None, float | None]
"""(input, output, cache_read, cache_write) in USD per million tokens."""

PRESETS: dict[str, dict[str, PriceRow]] = {
    # seed 001 "Cost (USD)" table; shared/reference/seeds/001, "Pricing varies by model".
    "scylla-doc": {
        "claude-opus-4-5": (15.0, 75.0, None, None),
        "claude-sonnet-4": (3.0, 15.0, None, None),
        "gpt-4o": (5.0, 15.0, None, None),
    },
    # ProjectScylla src/scylla/config/pricing.py @ b1b5ea8d (scylla.md §3.4).
    "scylla": {
        "claude-sonnet-4-6": (3.0, 15.0, None, None),
        "claude-opus-4-6": (5.0, 25.0, None, None),
        "claude-haiku-4-5": (1.0, 5.0, None, None),
    },
    # FC-Eval MODEL_COST_OVERRIDES, USD per token x 1e6 (fc-eval.md §8).
    "fc-eval": {
        "gemini-2.5-pro": (1.25, 10.0, None, None),
        "gpt-5": (1.25, 10.0, None, None),
        "claude-opus-4-1": (15.0, 75.0, None, None),
        "claude-sonnet-4-20250514": (3.0, 15.0, None, None),
        "qwen3-coder-480b-a35b-instruct": (0.45, 1.8, None, None),
    },
    # poc-ai-workflow-frameworks eval/metrics.py, USD per 1K x 1000
    # (framework-comparison.md §4).
    "framework-comparison": {
        "gpt-5-mini": (0.25, 2.0, None, None),
        "gpt-4o-mini": (0.15, 0.6, None, None),
        "gpt-4o-mini-2024-07-18": (0.15, 0.6, None, None),
        "gpt-4o": (2.5, 10.0, None, None),
        "claude-sonnet-4-20250514": (3.0, 15.0, None, None),
        "claude-haiku-3-5-20241022": (0.8, 4.0, None, None),
        "claude-haiku-4-5-20251001": (0.8, 4.0, None, None),
    },
}

DEFAULT_PRESETS: tuple[str, ...] = ("scylla", "fc-eval", "framework-comparison")
"""Presets consulted by default, in order. ``scylla`` precedes ``framework-comparison``
because the latter prices Haiku 4.5 at Haiku 3.5's $0.80/$4, while Anthropic (and the
ProjectScylla fixtures' reported costs) use $1/$5."""
