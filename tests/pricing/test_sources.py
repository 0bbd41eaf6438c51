"""genai-prices with the provider kept and the price in force at the episode's time.

Real data from the installed genai-prices snapshot: OpenAI's o3 was $10/$40 per million
tokens until 2025-06-10 and $2/$8 from then; Groq lists llama-3.1-8b-instant at
$0.05/$0.08; DeepSeek's deepseek-chat has a UTC time-of-day price.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.pricing import PriceBook, cost_usd, fill_missing_cost, price_for
from evalatlas.pricing.names import split_provider
from evalatlas.records import EpisodeRecord, EvalLog
from evalatlas.records.models import AgentInfo, BenchmarkSubset, ExperimentRecord, UsageSummary
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

JAN = datetime(2025, 1, 15, 12, tzinfo=UTC)
JUL = datetime(2025, 7, 1, 12, tzinfo=UTC)


def test_split_provider() -> None:
    assert split_provider("groq/llama-3.1-8b-instant") == ("groq", "llama-3.1-8b-instant")
    assert split_provider("openai:gpt-5-mini") == ("openai", "gpt-5-mini")
    assert split_provider("llama3:8b") == (None, "llama3:8b")  # a tag, not a provider
    assert split_provider("gpt-4o") == (None, "gpt-4o")


def test_provider_prefix_is_kept_for_the_lookup() -> None:
    p = price_for("groq/llama-3.1-8b-instant")
    assert p is not None and "(groq)" in p.source
    assert (p.input, p.output) == (0.05, 0.08)
    assert cost_usd("groq/llama-3.1-8b-instant", 1_000_000, 1_000_000) == pytest.approx(0.13)
    # a prefix that is not a provider is ignored, not fatal
    assert price_for("accounts/fireworks/models/qwen3-coder-480b-a35b-instruct") is not None


def test_price_in_force_at_the_time() -> None:
    book = PriceBook(library=True)
    jan, jul = book.price_for("openai/o3", JAN), book.price_for("openai/o3", JUL)
    assert jan is not None and jul is not None
    assert (jan.input, jan.output, jan.valid_from) == (10.0, 40.0, None)
    assert (jul.input, jul.output, jul.valid_from) == (2.0, 8.0, date(2025, 6, 10))
    assert book.price_for("o3", datetime(2025, 6, 9, 23, 59, tzinfo=UTC)).input == 10.0
    assert book.price_for("o3", datetime(2025, 6, 10, tzinfo=UTC)).input == 2.0
    assert jul.describe() == f"{jul.source} o3, price from 2025-06-10"
    # time-of-day prices (DeepSeek's peak window is 00:30-16:30 UTC)
    peak = book.price_for("deepseek-chat", datetime(2025, 7, 1, 8, tzinfo=UTC))
    off = book.price_for("deepseek-chat", datetime(2025, 7, 1, 20, tzinfo=UTC))
    assert peak.input > off.input


def test_fill_missing_cost_uses_the_timestamp_and_says_so() -> None:
    u = UsageSummary(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    old = fill_missing_cost(u, "openai/o3", at=JAN.timestamp())
    new = fill_missing_cost(u, "openai/o3", at=JUL)
    assert old.total_cost_usd == pytest.approx(50.0) and new.total_cost_usd == pytest.approx(10.0)
    assert old.cost_source.endswith("o3, first listed price; for 2025-01-15")
    assert new.cost_source.endswith("o3, price from 2025-06-10; for 2025-07-01")
    assert "genai-prices" in new.cost_source and "(openai)" in new.cost_source


def _write_run(d: Path) -> Path:
    """An EvalLog run dir: experiment (July, agent model openai/o3) and four episodes."""
    exp = ExperimentRecord(
        experiment_id="e1", experiment_name="e1", timestamp=JUL.timestamp(),
        benchmark_name="b", agent=AgentInfo(name="a", llm_model="openai/o3"),
        benchmark_subset=BenchmarkSubset(name="all", n_tasks=4))

    def ep(i: int, ts: float | None, model: str | None = None) -> EpisodeRecord:
        usage = UsageSummary(prompt_tokens=1_000_000, completion_tokens=1_000_000,
                             model=model)
        return EpisodeRecord(experiment_id="e1", task_id=f"t{i}", trajectory_id=f"e1-t{i}",
                             reward=1.0, timestamp=ts, usage=usage)

    EvalLog(experiment=exp, episodes=[
        ep(0, JAN.timestamp()), ep(1, JUL.timestamp()), ep(2, None),
        ep(3, JAN.timestamp(), "groq/llama-3.1-8b-instant")]).save(d)
    return d


@pytest.mark.parametrize("fast", [True, False])
def test_ingest_prices_each_episode_at_its_time(tmp_path: Path, fast: bool) -> None:
    run = _write_run(tmp_path / "run")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [run], fast=fast)
        assert rep.episodes == 4, rep
        rows = {r["task_id"]: r for r in store.query(
            "SELECT task_id, cost_usd, cost_source FROM episodes ORDER BY task_id")}
    assert rows["t0"]["cost_usd"] == pytest.approx(50.0)  # January: $10 + $40
    assert rows["t0"]["cost_source"].endswith("o3, first listed price; for 2025-01-15")
    assert rows["t1"]["cost_usd"] == pytest.approx(10.0)  # July: $2 + $8
    assert rows["t1"]["cost_source"].endswith("o3, price from 2025-06-10; for 2025-07-01")
    # no episode timestamp: the experiment's (July)
    assert rows["t2"]["cost_usd"] == pytest.approx(10.0)
    assert rows["t2"]["cost_source"].endswith("; for 2025-07-01")
    assert rows["t3"]["cost_usd"] == pytest.approx(0.13)
    assert "(groq) llama-3.1-8b-instant" in rows["t3"]["cost_source"]
    # the vectorised store fill equals the one-record definition
    u = UsageSummary(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    for task, ts, model in (("t0", JAN, "openai/o3"), ("t1", JUL, "openai/o3"),
                            ("t3", JAN, "groq/llama-3.1-8b-instant")):
        one = fill_missing_cost(u, model, at=ts)
        assert (one.total_cost_usd, one.cost_source) == (
            pytest.approx(rows[task]["cost_usd"]), rows[task]["cost_source"])


def test_price_command_at_a_date() -> None:
    r = CliRunner().invoke(app, ["price", "openai/o3", "--input", "1000000", "--at",
                                 "2025-01-15", "-f", "json"])
    row = json.loads(r.stdout)["rows"][0]
    assert row["cost_usd"] == 10.0 and row["valid_from"] is None
    r = CliRunner().invoke(app, ["price", "openai/o3", "--input", "1000000", "--at",
                                 "2025-07-01", "-f", "json"])
    row = json.loads(r.stdout)["rows"][0]
    assert row["cost_usd"] == 2.0 and row["valid_from"] == "2025-06-10"
    assert row["cost_source"].endswith("price from 2025-06-10; for 2025-07-01")
    r = CliRunner().invoke(app, ["price", "o3", "--at", "last tuesday"])
    assert r.exit_code == 2 and "--at must be a date" in r.output
