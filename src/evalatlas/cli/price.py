"""``evalatlas price``: the cost of a token count for a model, and which source priced it."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from evalatlas.cli.common import FormatOption, emit, fail
from evalatlas.cli.render import Col, OutputFormat, render
from evalatlas.errors import InputError
from evalatlas.pricing import (
    UNKNOWN_MODEL_ZERO,
    PriceBook,
    computed_cost_source,
    cost_from_price,
    normalise_model_name,
    unpriced_cost,
)
from evalatlas.pricing.tables import DEFAULT_PRESETS, PRESETS


class UnknownCost(StrEnum):
    none = "none"
    zero = "zero"


def _money(v: float | None) -> str:
    return "unknown" if v is None else f"${v:,.6f}"


def _rate(v: float | None) -> str:
    return "-" if v is None else f"${v:g}"


def price_cmd(
    model: Annotated[str, typer.Argument(help="Model name, any spelling "
                                         "(openai/gpt-5-mini, openai:gpt-5-mini, ...).")],
    input_tokens: Annotated[int, typer.Option("--input", min=0,
                                              help="Uncached input tokens.")] = 0,
    output_tokens: Annotated[int, typer.Option("--output", min=0, help="Output tokens.")] = 0,
    cache_read: Annotated[int, typer.Option("--cache-read", min=0,
                                            help="Input tokens read from cache.")] = 0,
    cache_write: Annotated[int, typer.Option("--cache-write", min=0,
                                             help="Input tokens written to cache.")] = 0,
    prices: Annotated[Path | None, typer.Option(
        "--prices", help="Price file (TOML or YAML, USD per million tokens); "
        "checked before the presets.")] = None,
    preset: Annotated[list[str] | None, typer.Option(
        "--preset", help=f"Preset tables to use, in order (repeatable). Default: "
        f"{', '.join(DEFAULT_PRESETS)}. Known: {', '.join(sorted(PRESETS))}.")] = None,
    no_library: Annotated[bool, typer.Option(
        "--no-library", help="Do not fall back to the genai-prices library.")] = False,
    at: Annotated[str | None, typer.Option(
        "--at", help="Date (YYYY-MM-DD, UTC) or ISO time the tokens were spent: the price in "
        "force then. Default: now.")] = None,
    unknown_model_cost: Annotated[UnknownCost, typer.Option(
        "--unknown-model-cost", help="'none': an unknown model's cost is unknown; "
        "'zero': report $0 as the seeds do.")] = UnknownCost.none,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Cost of INPUT/OUTPUT/cache tokens for MODEL, with the price source.

    cost = (input*p_in + output*p_out + cache_read*p_cache_read + cache_write*p_cache_write)
    / 1e6, prices in USD per million tokens; first source that knows the model wins:
    --prices FILE, then the presets, then genai-prices. (``--output`` is the output
    token count here, so this command prints to stdout only.)
    """
    try:
        book = PriceBook(prices, preset, library=not no_library)
    except (InputError, ValueError) as exc:
        fail(str(exc))
    when = None
    if at is not None:
        try:
            when = datetime.fromisoformat(at)
        except ValueError:
            fail(f"--at must be a date such as 2025-01-15 or an ISO time, got {at!r}")
        assert when is not None
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
    price = book.price_for(model, when)
    notes: list[str] = []
    row: dict[str, Any] = {
        "model": model,
        "normalised": normalise_model_name(model),
        "input_tokens": input_tokens, "output_tokens": output_tokens,
        "cache_read_tokens": cache_read, "cache_write_tokens": cache_write,
    }
    if price is None:
        cost = unpriced_cost(unknown_model_cost.value)
        row.update({"source": None, "matched": None, "input_per_mtok": None,
                    "output_per_mtok": None, "cache_read_per_mtok": None, "valid_from": None,
                    "cache_write_per_mtok": None, "cost_usd": cost,
                    "cost_source": "unknown" if cost is None else UNKNOWN_MODEL_ZERO})
        notes.append(f"no price known for {model!r}: cost is unknown"
                     + (" (reported as $0 because of --unknown-model-cost zero)"
                        if cost == 0.0 else "; add it to a --prices file"))
    else:
        row.update({
            "source": price.source, "matched": price.matched,
            "input_per_mtok": price.input, "output_per_mtok": price.output,
            "cache_read_per_mtok": price.cache_read, "cache_write_per_mtok": price.cache_write,
            "valid_from": price.valid_from.isoformat() if price.valid_from else None,
            "cost_usd": cost_from_price(price, input_tokens, output_tokens, cache_read,
                                        cache_write),
            "cost_source": computed_cost_source(price, when),
        })
        notes.extend(price.notes)
        if (cache_read and price.cache_read is None) or (cache_write and price.cache_write
                                                          is None):
            notes.append("no cache price known: cache tokens charged at the input price")
    columns = [
        Col("model", "model", None, 0, "name"), Col("matched", "priced as", None, 2, "name"),
        Col("source", "source", None, 3),
        Col("valid_from", "price from", None, 3.5),
        Col("input_per_mtok", "$/M in", lambda r: _rate(r["input_per_mtok"]), 4),
        Col("output_per_mtok", "$/M out", lambda r: _rate(r["output_per_mtok"]), 5),
        Col("cache_read_per_mtok", "$/M cache read",
            lambda r: _rate(r["cache_read_per_mtok"]), 6),
        Col("cache_write_per_mtok", "$/M cache write",
            lambda r: _rate(r["cache_write_per_mtok"]), 7),
        Col("cost_usd", "cost", lambda r: _money(r["cost_usd"]), 1),
    ]
    emit(render([row], columns, fmt, schema="evalatlas.price/1", title="Price",
                notes=notes))


def register(app: typer.Typer) -> None:
    app.command("price")(price_cmd)
