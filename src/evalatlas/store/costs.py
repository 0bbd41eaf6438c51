"""Completing a batch inside its transaction: the model of each episode, and its cost.

Episodes name their model in ``usage.model``; when they do not, the experiment's agent
model applies, even if the experiment record arrives in a later batch. Episodes with
tokens and a model but no cost are priced at the price in force when they ran, and marked
``cost_source = 'computed: <price and its date>; for <date>'``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from evalatlas.pricing import (
    UNKNOWN_MODEL_ZERO,
    PriceBook,
    PricePeriod,
    Pricing,
    cost_from_price,
    price_for,
    unpriced_cost,
)


class BatchTarget(Protocol):
    """What pricing needs of :class:`evalatlas.store.db.StoreConnection` (not imported: ``db``
    imports this module, and a cycle, even for type checking, is not allowed)."""

    con: Any


def complete_batch(store: BatchTarget, batch_id: int, experiment_ids: list[str],
                   pricing: Pricing, *, models_filled: bool = False) -> None:
    """Fill ``llm_model`` and computed costs for episodes touched by this batch.

    Touched = written in this batch, or belonging to an experiment written in it.
    Call inside the batch's transaction. ``pricing``: the price book, and what an
    unpriced model costs (``unknown_model_cost``: unknown, the default, or $0, the
    seeds' behaviour), as the ingest was asked (:class:`evalatlas.pricing.Pricing`).
    ``models_filled``: the caller knows the ``llm_model`` UPDATE has nothing to change
    (the store's only experiments and episodes are this batch's, and the episodes'
    models were filled before the insert by the same rule,
    :func:`evalatlas.store.rows.agent_models`): it is skipped (~2 ms of a
    10,000-episode batch's CPU, for a join that updates no row).
    """
    # list_contains, not IN (SELECT unnest(...)): a scalar test per row instead of a
    # join (the DISTINCT below: 1.27 -> 0.92 ms over an Inspect log's 4,000 episodes)
    scope = "(e.ingest_batch = ? OR list_contains(?::VARCHAR[], e.experiment_id))"
    params: list[object] = [batch_id, experiment_ids]
    if not models_filled:
        _fill_models(store, scope, params)
    models = [r[0] for r in store.con.execute(f"""
        SELECT DISTINCT e.llm_model FROM episodes e WHERE e.cost_usd IS NULL
          AND e.llm_model IS NOT NULL
          AND (e.prompt_tokens IS NOT NULL OR e.completion_tokens IS NOT NULL)
          AND {scope}""", params).fetchall()]
    for model in models:
        _price_model(store, model, scope, params, pricing)


def _fill_models(store: BatchTarget, scope: str, params: list[object]) -> None:
    """An episode's ``llm_model``: its usage model, else its experiment agent's (the
    rule of :func:`evalatlas.store.rows.agent_models`), for the episodes in ``scope``."""
    store.con.execute(f"""
        UPDATE episodes e SET llm_model = x.llm_model FROM experiments x
        WHERE e.experiment_id = x.experiment_id AND e.usage_model IS NULL
          AND x.llm_model IS NOT NULL AND e.llm_model IS DISTINCT FROM x.llm_model
          AND {scope}""", params)


_TS = """coalesce(e.timestamp, (SELECT x.timestamp FROM experiments x
                                 WHERE x.experiment_id = e.experiment_id))"""
"""When an episode's tokens were spent: its timestamp, else its experiment's (Unix s)."""


def _active_sql(period: PricePeriod) -> str:
    """SQL truth of ``period.active`` at the Unix time ``_TS`` (constants only)."""
    parts = []
    if period.start_date is not None:
        start = datetime(period.start_date.year, period.start_date.month,
                         period.start_date.day, tzinfo=UTC).timestamp()
        parts.append(f"ts >= {start!r}")
    if period.daily_window is not None:
        lo, hi = period.daily_window
        sec = "((ts % 86400) + 86400) % 86400"
        parts.append(f"({sec} >= {lo} AND {sec} < {hi})" if lo <= hi
                     else f"({sec} >= {lo} OR {sec} < {hi})")
    return " AND ".join(parts) or "TRUE"


def _period_sql(periods: tuple[PricePeriod, ...]) -> str:
    """Index of the period in force at ``ts`` (last active wins; no time: the current)."""
    now = datetime.now(tz=UTC)
    current = max((i for i, p in enumerate(periods) if p.active(now)), default=0)
    whens = " ".join(f"WHEN {_active_sql(p)} THEN {i}"
                     for i, p in reversed(list(enumerate(periods))) if i > 0)
    return f"CASE WHEN ts IS NULL THEN {current} {whens} ELSE 0 END"


def _price_model(
    store: BatchTarget, model: str, scope: str, params: list[object], pricing: Pricing,
) -> None:
    """The vectorised form of :func:`evalatlas.pricing.fill_missing_cost` for one model.

    Same token convention (uncached input = prompt - cached - creation, unless the cache
    counts exceed prompt), the price in force when the episode ran (its ``timestamp``,
    else its experiment's, else today) from the model's price schedule, and per-token
    coefficients from :func:`cost_from_price`, the single cost definition. ``cost_source``
    names the price and the date (:func:`computed_cost_source`'s text). Tests check
    equality with ``fill_missing_cost``.
    """
    periods = pricing.book.schedule(model)
    where = f"""e.llm_model = ? AND e.cost_usd IS NULL
          AND (e.prompt_tokens IS NOT NULL OR e.completion_tokens IS NOT NULL)
          AND {scope}"""
    if periods is None:
        cost = unpriced_cost(pricing.unknown_model_cost)  # the one unknown-cost rule
        if cost is not None:
            store.con.execute(f"""
                UPDATE episodes e SET cost_source = ?, cost_usd = ? WHERE {where}""",
                [UNKNOWN_MODEL_ZERO, cost, model, *params])
        return
    today = datetime.now(tz=UTC).date().isoformat()
    period = _period_sql(periods)
    for i, p in enumerate(periods):
        price = p.price
        coef = [cost_from_price(price, *unit) / 1_000_000 for unit in (
            (1_000_000, 0), (0, 1_000_000), (0, 0, 1_000_000), (0, 0, 0, 1_000_000))]
        label = f"computed: {price.describe()}; "
        store.con.execute(f"""
            UPDATE episodes e SET
              cost_source = ? || (SELECT CASE WHEN ts IS NULL
                  THEN 'no timestamp, price of ' || ?
                  ELSE 'for ' || strftime(make_timestamp(CAST(ts * 1e6 AS BIGINT)), '%Y-%m-%d')
                  END FROM (SELECT {_TS} AS ts)),
              cost_usd = (
              (CASE WHEN coalesce(e.cached_tokens, 0) + coalesce(e.cache_creation_tokens, 0)
                         <= coalesce(e.prompt_tokens, 0)
                    THEN coalesce(e.prompt_tokens, 0) - coalesce(e.cached_tokens, 0)
                         - coalesce(e.cache_creation_tokens, 0)
                    ELSE coalesce(e.prompt_tokens, 0) END) * ?
              + coalesce(e.completion_tokens, 0) * ? + coalesce(e.cached_tokens, 0) * ?
              + coalesce(e.cache_creation_tokens, 0) * ?)
            WHERE {where} AND (SELECT {period} FROM (SELECT {_TS} AS ts)) = {i}""",
            [label, today, *coef, model, *params])


def unknown_price_models(store: BatchTarget, *, book: PriceBook | None = None,
                         without_cost: int | None = None) -> list[str]:
    """Models in the store whose episodes have tokens but no cost and no known price
    (``book``, default: the prices in force).

    For ``summary`` to list, so an unknown cost is visible instead of silently missing.
    ``without_cost``: how many of the store's episodes have no cost, when the caller
    has counted them (the summary of every experiment has): 0 needs no query (on a
    lake the filter reads the whole ``cost_usd`` column of every Parquet file: 0.84 s
    at 100M episodes, against 0.01 s on a file store, which skips its blocks by their
    statistics).
    """
    if without_cost == 0:
        return []
    rows = store.con.execute(
        "SELECT DISTINCT llm_model FROM episodes WHERE cost_usd IS NULL "
        "AND llm_model IS NOT NULL AND (prompt_tokens IS NOT NULL "
        "OR completion_tokens IS NOT NULL) ORDER BY llm_model").fetchall()
    return [m for (m,) in rows if price_for(m, book=book) is None]
