"""``evalatlas price``: the cost of a token count for a model, and which source priced it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from evalatlas import InputError, price, price_presets
from evalatlas.cli.common import FormatOption, emit, fail
from evalatlas.cli.render import Col, OutputFormat, render_result

DEFAULT_PRESETS, PRESETS = price_presets()


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
    when = None
    if at is not None:
        try:
            when = datetime.fromisoformat(at)
        except ValueError:
            fail(f"--at must be a date such as 2025-01-15 or an ISO time, got {at!r}")
    try:
        result = price(model, input_tokens, output_tokens, cache_read, cache_write,
                       prices=prices, presets=preset, library=not no_library, at=when,
                       unknown_model_cost=unknown_model_cost.value)
    except (InputError, ValueError) as exc:
        fail(str(exc))
        raise  # unreachable
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
    emit(render_result(result, columns, fmt, title="Price"))


def register(app: typer.Typer) -> None:
    app.command("price")(price_cmd)
