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
        # a caller that counted the episodes without a cost: the same list, and none
        # (no query) when it counted none
        without = store.con.execute("SELECT count(*) - count(cost_usd) FROM episodes"
                                    ).fetchall()[0][0]
        assert without == 6  # mystery-1, zz-unknown and mystery-2 (no tokens): 2 each
        assert unknown_price_models(store, without_cost=without) == [
            "mystery-1", "openai/zz-unknown"]
        assert unknown_price_models(store, without_cost=0) == []


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


@pytest.mark.parametrize("columnar", [False, True], ids=["row-tuples", "arrow"])
def test_llm_model_is_the_usage_model_else_the_final_agent_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columnar: bool) -> None:
    """``llm_model`` (filled before the insert for experiments of the batch,
    :func:`evalatlas.store.rows.fill_agent_models`, else by the completion step): the
    episode's own usage model; else the agent model of its experiment's last record, even
    when that record comes after the episodes, says no model, or arrives in a later
    ingest."""
    import json

    import evalatlas.store.ingest as ingest_mod

    if columnar:
        monkeypatch.setattr(ingest_mod, "SMALL_BATCH", 0)

    def exp(eid: str, model: str | None) -> str:
        return json.dumps({"experiment_id": eid, "experiment_name": eid, "benchmark_name": "b",
                           "benchmark_subset": {"name": "all", "n_tasks": 2},
                           "agent": {"name": eid, "llm_model": model}})

    def ep(eid: str, t: str, model: str | None = None) -> str:
        usage = {"model": model} if model else {}
        return json.dumps({"experiment_id": eid, "task_id": t, "trajectory_id": f"{eid}-{t}",
                           "reward": 1.0, "usage": usage})

    first = tmp_path / "first.jsonl"
    first.write_text("\n".join([
        ep("after", "t0"), exp("after", "m-after"),            # experiment after its episode
        ep("dropped", "t0"), exp("dropped", "m-old"), exp("dropped", None),  # last says none
        exp("own", "m-agent"), ep("own", "t0", "m-own"), ep("own", "t1"),
        ep("later", "t0"),                                     # experiment in the next ingest
    ]) + "\n")
    second = tmp_path / "second.jsonl"
    second.write_text(exp("later", "m-later") + "\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [first], fast=False)
        ingest_paths(store, [second], fast=False)
        got = {r["trajectory_id"]: r["llm_model"] for r in store.query(
            "SELECT trajectory_id, llm_model FROM episodes")}
    assert got == {"after-t0": "m-after", "dropped-t0": None, "own-t0": "m-own",
                   "own-t1": "m-agent", "later-t0": "m-later"}
