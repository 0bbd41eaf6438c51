"""Completing a batch inside its transaction: the model of each episode, and its cost.

Episodes name their model in ``usage.model``; when they do not, the experiment's agent
model applies, even if the experiment record arrives in a later batch. Episodes with
tokens and a model but no cost are priced, and marked ``cost_source = 'computed'``.
"""

from __future__ import annotations

from typing import Any, Protocol

from evalatlas.pricing import cost_from_price, price_for


class Store(Protocol):
    """What pricing needs of :class:`evalatlas.store.db.Store` (not imported: ``db``
    imports this module, and a cycle, even for type checking, is not allowed)."""

    con: Any
    unknown_model_cost: str


def complete_batch(store: Store, batch_id: int, experiment_ids: list[str]) -> None:
    """Fill ``llm_model`` and computed costs for episodes touched by this batch.

    Touched = written in this batch, or belonging to an experiment written in it.
    Call inside the batch's transaction. ``store.unknown_model_cost`` ("none" or "zero")
    decides what an unpriced model costs: unknown (default) or $0 (the seeds' behaviour).
    """
    scope = "(e.ingest_batch = ? OR e.experiment_id IN (SELECT unnest(?::VARCHAR[])))"
    params: list[object] = [batch_id, experiment_ids]
    store.con.execute(f"""
        UPDATE episodes e SET llm_model = x.llm_model FROM experiments x
        WHERE e.experiment_id = x.experiment_id AND e.usage_model IS NULL
          AND x.llm_model IS NOT NULL AND e.llm_model IS DISTINCT FROM x.llm_model
          AND {scope}""", params)
    models = [r[0] for r in store.con.execute(f"""
        SELECT DISTINCT e.llm_model FROM episodes e WHERE e.cost_usd IS NULL
          AND e.llm_model IS NOT NULL
          AND (e.prompt_tokens IS NOT NULL OR e.completion_tokens IS NOT NULL)
          AND {scope}""", params).fetchall()]
    for model in models:
        _price_model(store, model, scope, params, getattr(store, "unknown_model_cost", "none"))


def _price_model(
    store: Store, model: str, scope: str, params: list[object], unknown_model_cost: str = "none"
) -> None:
    """The vectorised form of :func:`evalatlas.pricing.fill_missing_cost` for one model.

    Same token convention (uncached input = prompt - cached - creation, unless the cache
    counts exceed prompt) and the price from :func:`price_for`; per-token coefficients
    come from :func:`cost_from_price`, the single cost definition. Tests check equality
    with ``fill_missing_cost``.
    """
    price = price_for(model)
    if price is None:
        if unknown_model_cost == "zero":  # the seeds' "$0 for unknown models", on request
            store.con.execute(f"""
                UPDATE episodes e SET cost_source = 'computed', cost_usd = 0.0
                WHERE e.llm_model = ? AND e.cost_usd IS NULL
                  AND (e.prompt_tokens IS NOT NULL OR e.completion_tokens IS NOT NULL)
                  AND {scope}""", [model, *params])
        return
    p_in = cost_from_price(price, 1_000_000, 0) / 1_000_000
    p_out = cost_from_price(price, 0, 1_000_000) / 1_000_000
    p_cr = cost_from_price(price, 0, 0, 1_000_000) / 1_000_000
    p_cw = cost_from_price(price, 0, 0, 0, 1_000_000) / 1_000_000
    store.con.execute(f"""
        UPDATE episodes e SET cost_source = 'computed', cost_usd = (
          (CASE WHEN coalesce(e.cached_tokens, 0) + coalesce(e.cache_creation_tokens, 0)
                     <= coalesce(e.prompt_tokens, 0)
                THEN coalesce(e.prompt_tokens, 0) - coalesce(e.cached_tokens, 0)
                     - coalesce(e.cache_creation_tokens, 0)
                ELSE coalesce(e.prompt_tokens, 0) END) * ?
          + coalesce(e.completion_tokens, 0) * ? + coalesce(e.cached_tokens, 0) * ?
          + coalesce(e.cache_creation_tokens, 0) * ?)
        WHERE e.llm_model = ? AND e.cost_usd IS NULL
          AND (e.prompt_tokens IS NOT NULL OR e.completion_tokens IS NOT NULL)
          AND {scope}""", [p_in, p_out, p_cr, p_cw, model, *params])
