"""The store's pricing queries: costs completed at ingest, and the models left unpriced."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalatlas.records import EpisodeRecord, EvalLog
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    ExperimentRecord,
    UsageSummary,
)
from evalatlas.store.costs import unknown_price_models
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths


def _log(exp_id: str, model: str, usage: UsageSummary) -> EvalLog:
    exp = ExperimentRecord(
        experiment_id=exp_id, experiment_name=exp_id, benchmark_name="b",
        agent=AgentInfo(name=exp_id, llm_model=model, config={"m": model}),
        benchmark_subset=BenchmarkSubset(name="all", n_tasks=2))
    eps = [EpisodeRecord(experiment_id=exp_id, task_id=f"t{i}", reward=1.0,
                         trajectory_id=f"{exp_id}-t{i}", usage=usage)
           for i in range(2)]
    return EvalLog(experiment=exp, episodes=eps)


def test_unknown_price_models_lists_models_with_tokens_and_no_price(tmp_path: Path) -> None:
    tokens = UsageSummary(prompt_tokens=1500, completion_tokens=600)
    _log("known", "gpt-5-mini", tokens).save(tmp_path / "in" / "known")
    _log("mystery", "mystery-1", tokens).save(tmp_path / "in" / "mystery")
    _log("unknown", "openai/zz-unknown", tokens).save(tmp_path / "in" / "unknown")
    _log("no-tokens", "mystery-2", UsageSummary()).save(tmp_path / "in" / "no-tokens")
    with StoreConnection(":memory:") as store:
        ingest_paths(store, [tmp_path / "in"])
        # gpt-5-mini was priced at ingest; mystery-2 has no tokens to price
        assert unknown_price_models(store) == ["mystery-1", "openai/zz-unknown"]


def test_ingest_fills_cost_and_store_lists_unknown_models(tmp_path: Path) -> None:
    """End to end: ingest computes missing costs and the store query finds unpriced models."""
    tokens = UsageSummary(prompt_tokens=1500, completion_tokens=600)
    _log("known", "openai/gpt-5-mini", tokens).save(tmp_path / "in" / "known")
    _log("unknown", "mystery-model-9", tokens).save(tmp_path / "in" / "unknown")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [tmp_path / "in"])
        rows = store.query("SELECT experiment_id, cost_usd, cost_source FROM episodes "
                           "ORDER BY experiment_id, trajectory_id")
        assert [(r["experiment_id"], (r["cost_source"] or "")[:8]) for r in rows] == [
            ("known", "computed"), ("known", "computed"), ("unknown", ""), ("unknown", "")]
        assert rows[0]["cost_usd"] == pytest.approx(0.001575)
        assert rows[2]["cost_usd"] is None
        assert unknown_price_models(store) == ["mystery-model-9"]


def _private(tmp_path: Path) -> Path:
    tokens = UsageSummary(prompt_tokens=2_000_000, completion_tokens=1_000_000)
    _log("private", "acme-private-7", tokens).save(tmp_path / "in" / "private")
    return tmp_path / "in"


def test_pricing_is_passed_to_each_ingest_not_kept(tmp_path: Path) -> None:
    """Prices and the unknown-model rule travel as arguments (``Pricing``): a price file
    or ``zero`` given to one ingest prices that ingest only; the store keeps no price
    state and the pricing module has no process-wide book to configure."""
    import evalatlas.pricing as pricing
    from evalatlas.pricing import PriceBook, Pricing

    src = _private(tmp_path)
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."acme-private-7"]\ninput = 1.5\noutput = 4.0\n')
    costs = "SELECT cost_usd, cost_source FROM episodes ORDER BY trajectory_id"
    with StoreConnection(":memory:") as store:
        ingest_paths(store, [src], pricing=Pricing(PriceBook(prices)))
        rows = store.query(costs)
        assert [r["cost_usd"] for r in rows] == [pytest.approx(2 * 1.5 + 1 * 4.0)] * 2
        assert rows[0]["cost_source"].startswith(f"computed: file:{prices}")
        assert not hasattr(store, "unknown_model_cost")
    with StoreConnection(":memory:") as store:
        ingest_paths(store, [src], pricing=Pricing(unknown_model_cost="zero"))
        assert [(r["cost_usd"], r["cost_source"]) for r in store.query(costs)] == [
            (0.0, pricing.UNKNOWN_MODEL_ZERO)] * 2
        ingest_paths(store, [src], force=True)  # the default again: unknown, not $0
        assert [r["cost_usd"] for r in store.query(costs)] == [None, None]
        assert unknown_price_models(store) == ["acme-private-7"]
    assert not hasattr(pricing, "configure")
    with pytest.raises(ValueError, match="unknown_model_cost"):
        Pricing(unknown_model_cost="free")  # type: ignore[arg-type]  # the refused value


def test_api_ingest_takes_prices_and_presets(tmp_path: Path) -> None:
    import evalatlas as ea

    src = _private(tmp_path)
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."acme-private-7"]\ninput = 1.5\noutput = 4.0\n')
    with ea.open(":memory:") as store:
        store.ingest(src, prices=prices, presets=[])
        assert store.query("SELECT sum(cost_usd) AS c FROM episodes")[0]["c"] == (
            pytest.approx(2 * (2 * 1.5 + 1 * 4.0)))
        with pytest.raises(ea.ArgumentError, match="presets must be a list of preset names"):
            store.ingest(src, presets=["no-such-table"])
        bad = tmp_path / "bad.toml"
        bad.write_text("[models]\nx = 1\n")
        with pytest.raises(ea.InputError, match=r"bad\.toml"):
            store.ingest(src, prices=bad)
        with pytest.raises(ea.InputError, match=r"bad\.toml"):
            ea.Store.check_ingest(src, prices=bad)
        assert not hasattr(ea, "configure_prices")
