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
from evalatlas.store.db import Store
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
    with Store(":memory:") as store:
        ingest_paths(store, [tmp_path / "in"])
        # gpt-5-mini was priced at ingest; mystery-2 has no tokens to price
        assert unknown_price_models(store) == ["mystery-1", "openai/zz-unknown"]


def test_ingest_fills_cost_and_store_lists_unknown_models(tmp_path: Path) -> None:
    """End to end: ingest computes missing costs and the store query finds unpriced models."""
    tokens = UsageSummary(prompt_tokens=1500, completion_tokens=600)
    _log("known", "openai/gpt-5-mini", tokens).save(tmp_path / "in" / "known")
    _log("unknown", "mystery-model-9", tokens).save(tmp_path / "in" / "unknown")
    with Store(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [tmp_path / "in"])
        rows = store.query("SELECT experiment_id, cost_usd, cost_source FROM episodes "
                           "ORDER BY experiment_id, trajectory_id")
        assert [(r["experiment_id"], (r["cost_source"] or "")[:8]) for r in rows] == [
            ("known", "computed"), ("known", "computed"), ("unknown", ""), ("unknown", "")]
        assert rows[0]["cost_usd"] == pytest.approx(0.001575)
        assert rows[2]["cost_usd"] is None
        assert unknown_price_models(store) == ["mystery-model-9"]
