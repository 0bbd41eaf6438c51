"""Tokens -> USD, with the price's source named and unknown prices kept unknown.

Public API: :func:`normalise_model_name`, :func:`price_for`, :func:`cost_usd`,
:func:`fill_missing_cost`, :class:`ModelPrice` (the store's unpriced models:
:func:`evalatlas.store.costs.unknown_price_models`),
:class:`PriceBook`. Sources, first match wins: a user price file > presets from the seeds
and reference notes > genai-prices (:mod:`evalatlas.pricing.sources`).

Token convention of :func:`cost_usd`: ``input_tokens`` are the *uncached* input tokens
(Anthropic's ``input_tokens``); cache reads and writes are separate and added:

``cost = (input*p_in + output*p_out + cache_read*p_cr + cache_write*p_cw) / 1e6``

with ``p_cr``/``p_cw`` the input price when no source has a cache price. Checked on the
ProjectScylla dry run: Sonnet 4.5, 29 in / 656 out / 112,686 cache read / 23,106 cache
write at $3/$15/$0.30/$3.75 gives $0.1303803, the Claude CLI's own figure.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from evalatlas.pricing.names import normalise_model_name
from evalatlas.pricing.sources import ModelPrice, PriceBook, PricePeriod, load_price_file
from evalatlas.records.models import UsageSummary

UnknownModelCost = Literal["none", "zero"]

UNKNOWN_MODEL_ZERO = "computed: unknown model, $0"
"""``cost_source`` of a cost set to $0 because the model's price is unknown (on request)."""


def unpriced_cost(unknown_model_cost: str = "none") -> float | None:
    """The one unknown-cost rule: what tokens of a model without a known price cost.

    ``"none"`` (default): unknown (None), so it is never read as free and ``summary``
    lists the model; ``"zero"``: $0, the seeds' behaviour (FC-Eval, framework-comparison),
    marked with ``cost_source`` :data:`UNKNOWN_MODEL_ZERO`. Anything else is an error.
    """
    if unknown_model_cost not in ("none", "zero"):
        raise ValueError(f"unknown_model_cost must be 'none' or 'zero', got "
                         f"{unknown_model_cost!r}")
    return 0.0 if unknown_model_cost == "zero" else None

__all__ = [
    "UNKNOWN_MODEL_ZERO",
    "ModelPrice",
    "PriceBook",
    "PricePeriod",
    "Pricing",
    "computed_cost_source",
    "cost_from_price",
    "cost_usd",
    "default_book",
    "fill_missing_cost",
    "load_price_file",
    "normalise_model_name",
    "price_for",
    "unpriced_cost",
]

@functools.cache
def default_book() -> PriceBook:
    """The default price book: the default presets, then genai-prices. Built once (it
    memoises each model's lookup) and never reconfigured: a price file is passed
    explicitly, as :class:`Pricing` (ingest) or ``book=`` (the functions below)."""
    return PriceBook()


@dataclass(frozen=True)
class Pricing:
    """How the costs an ingest completes from tokens are priced, passed explicitly from
    ``Store.ingest`` down to :func:`evalatlas.store.costs.complete_batch` (no process-wide
    book, no price state on the store): ``book``, the sources in order (first match
    wins; default :func:`default_book`), and ``unknown_model_cost``, what tokens of a
    model no source prices cost (:func:`unpriced_cost`: unknown, or $0 on request)."""

    book: PriceBook = field(default_factory=default_book)
    unknown_model_cost: UnknownModelCost = "none"

    def __post_init__(self) -> None:
        unpriced_cost(self.unknown_model_cost)  # refuses anything but "none" / "zero"


def price_for(model: str | None, *, book: PriceBook | None = None,
              at: datetime | None = None) -> ModelPrice | None:
    """Price of ``model`` (any spelling; a ``provider/`` prefix picks that provider's
    price) in force at ``at`` (default: now) and its source, or None when unknown."""
    return (book or default_book()).price_for(model, at)


def computed_cost_source(price: ModelPrice, at: datetime | None) -> str:
    """The ``cost_source`` of a cost computed from tokens: which price, for which date.

    ``computed: genai-prices 0.2.3 (openai) o3, price from 2025-06-10; for 2025-07-01``;
    without a timestamp the price is today's and the text says so.
    """
    when = (f"for {at.astimezone(UTC).date().isoformat()}" if at is not None
            else f"no timestamp, price of {datetime.now(tz=UTC).date().isoformat()}")
    return f"computed: {price.describe()}; {when}"


def cost_from_price(
    price: ModelPrice,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    """USD for these token counts at ``price`` (per million; cache at input price if absent)."""
    for name, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                    ("cache_read_tokens", cache_read_tokens),
                    ("cache_write_tokens", cache_write_tokens)):
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    cr = price.input if price.cache_read is None else price.cache_read
    cw = price.input if price.cache_write is None else price.cache_write
    return (input_tokens * price.input + output_tokens * price.output
            + cache_read_tokens * cr + cache_write_tokens * cw) / 1_000_000


def cost_usd(
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    *,
    unknown_model_cost: UnknownModelCost = "none",
    book: PriceBook | None = None,
    at: datetime | None = None,
) -> float | None:
    """Cost in USD of one usage, or None when the model's price is unknown.

    ``unknown_model_cost="zero"`` reproduces the seeds' "unknown models report $0"
    (FC-Eval, framework-comparison) on request; the default keeps the cost unknown so it
    is never read as free.
    """
    unpriced = unpriced_cost(unknown_model_cost)
    price = price_for(model, book=book, at=at)
    if price is None:
        return unpriced
    return cost_from_price(price, input_tokens, output_tokens, cache_read_tokens,
                           cache_write_tokens)


def fill_missing_cost(
    usage: UsageSummary,
    default_model: str | None,
    *,
    unknown_model_cost: UnknownModelCost = "none",
    book: PriceBook | None = None,
    at: datetime | float | None = None,
) -> UsageSummary:
    """Return ``usage`` with ``total_cost_usd`` computed from tokens when it is missing.

    Needs a model (``usage.model``, else ``default_model``) and at least one token count;
    the copy's ``cost_source`` is ``computed: <price and its date>; for <date>`` (see
    :func:`computed_cost_source`). ``at``: when the tokens were spent (datetime or Unix
    seconds, e.g. the episode's ``timestamp``), default now. A reported cost is never
    replaced; with no tokens, no model, or an unknown price the cost stays None (unless
    ``unknown_model_cost="zero"``).

    Token convention of the record contract (cube-harness / LiteLLM, OpenAI style):
    ``prompt_tokens`` *includes* ``cached_tokens`` and ``cache_creation_tokens``, so the
    uncached input is ``prompt - cached - creation``. When the cache counts exceed
    ``prompt_tokens`` that cannot be, so ``prompt_tokens`` is taken as uncached input
    (Anthropic style, e.g. ProjectScylla's 29 input vs 112,686 cache-read tokens).
    """
    if usage.total_cost_usd is not None:
        return usage
    model = usage.model or default_model
    prompt, completion = usage.prompt_tokens, usage.completion_tokens
    if not model or (prompt is None and completion is None):
        return usage
    cached = usage.cached_tokens or 0
    created = usage.cache_creation_tokens or 0
    prompt = prompt or 0
    uncached = prompt - cached - created if cached + created <= prompt else prompt
    when = datetime.fromtimestamp(at, tz=UTC) if isinstance(at, int | float) else at
    price = price_for(model, book=book, at=when)
    if price is None:
        cost = unpriced_cost(unknown_model_cost)
        if cost is None:
            return usage
        return usage.model_copy(update={"total_cost_usd": cost,
                                        "cost_source": UNKNOWN_MODEL_ZERO})
    cost = cost_from_price(price, uncached, completion or 0, cached, created)
    return usage.model_copy(update={"total_cost_usd": cost,
                                    "cost_source": computed_cost_source(price, when)})
