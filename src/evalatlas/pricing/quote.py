"""The cost of a token count for one model, as a public result (``ea.price``, ``evalatlas
price``), with the source that priced it and what a reader must know."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from evalatlas.records.results import TableResult


@dataclass
class PriceResult(TableResult):
    """The cost of a token count for one model (``evalatlas price``): one row with the
    model as given and ``normalised``, the token counts, the price used (``source``,
    ``matched``, ``valid_from``, ``input/output/cache_read/cache_write_per_mtok`` in USD
    per million tokens; None when no source knows the model), ``cost_usd`` (None when
    unknown) and ``cost_source``. ``notes``: what a reader must know (no price known,
    cache priced as input ...)."""

    SCHEMA: ClassVar[str] = "evalatlas.price/1"

    @property
    def cost_usd(self) -> float | None:
        return self.rows[0]["cost_usd"] if self.rows else None


def price_presets() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the preset price tables used by default, in order; every preset name, sorted)."""
    from evalatlas.pricing.tables import DEFAULT_PRESETS, PRESETS

    return tuple(DEFAULT_PRESETS), tuple(sorted(PRESETS))


def price(
    model: str, input_tokens: int = 0, output_tokens: int = 0, cache_read: int = 0,
    cache_write: int = 0, *, prices: str | Path | None = None,
    presets: Sequence[str] | None = None, library: bool = True,
    at: datetime | str | None = None, unknown_model_cost: str = "none",
) -> PriceResult:
    """Cost of the tokens for ``model`` (any spelling: ``openai/gpt-5-mini``,
    ``openai:gpt-5-mini``) and which source priced it.

    cost = (input*p_in + output*p_out + cache_read*p_cache_read + cache_write*p_cache_write)
    / 1e6, prices in USD per million tokens; the first source that knows the model wins:
    ``prices`` (a TOML or YAML file), then ``presets`` (default: :func:`price_presets`),
    then the genai-prices library (unless ``library=False``). ``at``: when the tokens were
    spent (a datetime or ISO text; naive means UTC): the price in force then, default
    now. ``unknown_model_cost="zero"`` reports $0 for an unpriced model (as the seeds
    do) instead of an unknown cost. Raises ValueError / :class:`evalatlas.InputError` on
    a bad price file, preset or date."""
    from numbers import Integral

    from evalatlas.errors import ArgumentError
    from evalatlas.pricing import (
        UNKNOWN_MODEL_ZERO,
        PriceBook,
        computed_cost_source,
        cost_from_price,
        normalise_model_name,
        unpriced_cost,
    )

    if unknown_model_cost not in ("none", "zero"):
        raise ArgumentError("unknown_model_cost must be 'none' or 'zero'")
    if not isinstance(model, str) or not model.strip():
        raise ArgumentError(f"model must be a model name (text), got {model!r:.60}")
    for arg, n in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                   ("cache_read", cache_read), ("cache_write", cache_write)):
        # a count: True, 2.5, NaN or "100" is a caller's mistake, never a price
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
            raise ArgumentError(f"{arg}: token counts must be whole numbers >= 0, got "
                                f"{type(n).__name__} {n!r:.40}")
    book = PriceBook(prices, None if presets is None else list(presets), library=library)
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    found = book.price_for(model, when)
    notes: list[str] = []
    row: dict[str, Any] = {
        "model": model,
        "normalised": normalise_model_name(model),
        "input_tokens": input_tokens, "output_tokens": output_tokens,
        "cache_read_tokens": cache_read, "cache_write_tokens": cache_write,
    }
    if found is None:
        cost = unpriced_cost(unknown_model_cost)
        row.update({"source": None, "matched": None, "input_per_mtok": None,
                    "output_per_mtok": None, "cache_read_per_mtok": None, "valid_from": None,
                    "cache_write_per_mtok": None, "cost_usd": cost,
                    "cost_source": "unknown" if cost is None else UNKNOWN_MODEL_ZERO})
        notes.append(f"no price known for {model!r}: cost is unknown"
                     + (" (reported as $0 because of --unknown-model-cost zero)"
                        if cost == 0.0 else "; add it to a --prices file"))
    else:
        row.update({
            "source": found.source, "matched": found.matched,
            "input_per_mtok": found.input, "output_per_mtok": found.output,
            "cache_read_per_mtok": found.cache_read, "cache_write_per_mtok": found.cache_write,
            "valid_from": found.valid_from.isoformat() if found.valid_from else None,
            "cost_usd": cost_from_price(found, input_tokens, output_tokens, cache_read,
                                        cache_write),
            "cost_source": computed_cost_source(found, when),
        })
        notes.extend(found.notes)
        if (cache_read and found.cache_read is None) or (cache_write and found.cache_write
                                                          is None):
            notes.append("no cache price known: cache tokens charged at the input price")
    return PriceResult(rows=[row], notes=notes)
