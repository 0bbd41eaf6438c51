"""Prices, sources and costs, checked against the numbers in the seeds and fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.errors import InputError
from evalatlas.pricing import (
    PriceBook,
    cost_usd,
    fill_missing_cost,
    price_for,
)
from evalatlas.records.models import UsageSummary

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
SCYLLA_T0 = FIXTURES / "scylla" / "dryrun" / "raw" / "T0" / "00" / "run_01"


def test_framework_comparison_example_cost() -> None:
    # framework-comparison.md results example: gpt-5-mini, 1500 prompt + 600 completion
    # tokens at $0.00025/$0.002 per 1K -> estimated_cost_usd 0.001575
    assert cost_usd("gpt-5-mini", 1500, 600) == pytest.approx(0.001575, abs=1e-12)
    assert cost_usd("openai/gpt-5-mini", 1500, 600) == pytest.approx(0.001575, abs=1e-12)


def test_fc_eval_override_per_token_prices() -> None:
    # fc-eval.md §8: claude-opus-4-1 1.5e-5 / 7.5e-5 USD per token
    p = price_for("anthropic/claude-opus-4-1")
    assert p is not None and p.source == "preset:fc-eval"
    assert cost_usd("claude-opus-4-1", 1000, 100) == pytest.approx(1000 * 1.5e-5 + 100 * 7.5e-5)
    q = price_for("accounts/fireworks/models/qwen3-coder-480b-a35b-instruct")
    assert q is not None and (q.input, q.output) == (0.45, 1.8)


def test_scylla_doc_preset_reproduces_seed_table() -> None:
    book = PriceBook(presets=["scylla-doc"], library=False)
    # seed 001: Claude Opus 4.5 $15/$75, Claude Sonnet 4 $3/$15, GPT-4o $5/$15 per 1M
    assert cost_usd("claude-opus-4-5", 1_000_000, 1_000_000, book=book) == pytest.approx(90.0)
    assert cost_usd("claude-sonnet-4", 1_000_000, 0, book=book) == pytest.approx(3.0)
    assert cost_usd("gpt-4o", 0, 1_000_000, book=book) == pytest.approx(15.0)


SCYLLA_RUNS = sorted((FIXTURES / "scylla" / "dryrun" / "raw").glob("T*/*/run_01"))


@pytest.mark.parametrize("run", SCYLLA_RUNS, ids=lambda p: p.parent.parent.name)
def test_scylla_fixture_costs_with_cache_tokens(run: Path) -> None:
    """Every dry-run tier: the Claude CLI's per-model costUSD and total, rebuilt from tokens.

    Sonnet 4.5 and Opus 4.5 are priced by genai-prices (with cache read/write prices),
    Haiku 4.5 by the scylla preset ($1/$5).
    """
    agent = json.loads((run / "agent" / "result.json").read_text())
    cli = json.loads(agent["stdout"])
    total = 0.0
    for model, u in cli["modelUsage"].items():
        cost = cost_usd(model, u["inputTokens"], u["outputTokens"],
                        u["cacheReadInputTokens"], u["cacheCreationInputTokens"])
        assert cost == pytest.approx(u["costUSD"], rel=1e-9), model
        total += cost
    assert total == pytest.approx(cli["total_cost_usd"], rel=1e-9)
    assert total == pytest.approx(agent["cost_usd"], rel=1e-9)


def test_scylla_fixture_t0_total() -> None:
    assert len(SCYLLA_RUNS) == 7
    agent = json.loads((SCYLLA_T0 / "agent" / "result.json").read_text())
    usage = json.loads(agent["stdout"])["modelUsage"]
    s = usage["claude-sonnet-4-5-20250929"]
    h = usage["claude-haiku-4-5-20251001"]
    total = (cost_usd("claude-sonnet-4-5-20250929", s["inputTokens"], s["outputTokens"],
                      s["cacheReadInputTokens"], s["cacheCreationInputTokens"])
             + cost_usd("claude-haiku-4-5-20251001", h["inputTokens"], h["outputTokens"]))
    # 29*3 + 656*15 + 112686*0.30 + 23106*3.75 + 3774*1 + 191*5 = 135109.3 per million
    assert total == pytest.approx(0.1351093, rel=1e-12)


def test_source_order_first_match_wins(tmp_path: Path) -> None:
    # haiku 4.5: scylla preset ($1/$5) wins over framework-comparison ($0.80/$4)
    p = price_for("claude-haiku-4-5-20251001")
    assert p is not None and p.source == "preset:scylla" and (p.input, p.output) == (1.0, 5.0)
    # a user file beats every preset
    f = tmp_path / "prices.toml"
    f.write_text('[models."claude-haiku-4-5"]\ninput = 2.0\noutput = 8.0\n')
    book = PriceBook(f)
    p2 = book.price_for("anthropic/claude-haiku-4-5-20251001")
    assert p2 is not None and p2.source == f"file:{f}" and (p2.input, p2.output) == (2.0, 8.0)
    # a model in no preset comes from genai-prices, with its cache prices
    p3 = price_for("claude-sonnet-4-5")
    assert p3 is not None and p3.source.startswith("genai-prices")
    assert (p3.input, p3.output, p3.cache_read, p3.cache_write) == (3.0, 15.0, 0.3, 3.75)


def test_preset_without_cache_prices_takes_them_from_library() -> None:
    p = price_for("gpt-5-mini")
    assert p is not None and p.source == "preset:framework-comparison"
    assert p.cache_read == pytest.approx(0.025)
    assert any("cache prices from genai-prices" in n for n in p.notes)
    # without the library, cache tokens are charged at the input price
    bare = PriceBook(library=False).price_for("gpt-5-mini")
    assert bare is not None and bare.cache_read is None
    assert cost_usd("gpt-5-mini", 0, 0, 1_000_000, book=PriceBook(library=False)) == 0.25


def test_unknown_model_is_not_free() -> None:
    assert price_for("no-such-model-xyz") is None
    assert cost_usd("no-such-model-xyz", 1000, 1000) is None
    assert cost_usd("no-such-model-xyz", 1000, 1000, unknown_model_cost="zero") == 0.0
    assert cost_usd(None, 10, 10) is None
    with pytest.raises(ValueError, match="unknown_model_cost"):
        cost_usd("gpt-5-mini", 1, 1, unknown_model_cost="free")  # type: ignore[arg-type]


def test_yaml_price_file_and_aliases(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  my-ft:\n    input: 1\n    output: 4\n    cache_read: 0.1\n"
                 "    aliases: ['ft:my-ft-2025']\n")
    book = PriceBook(f, presets=[], library=False)
    assert cost_usd("openai/my-ft", 1_000_000, 1_000_000, 1_000_000, book=book) == 5.1
    assert book.price_for("ft:my-ft-2025") is not None


@pytest.mark.parametrize(
    ("text", "suffix", "field"),
    [
        ('[models."m"]\ninput = 1.0\n', ".toml", "output"),
        ('[models."m"]\ninput = 1.0\nouput = 2.0\n', ".toml", "ouput"),
        ('[models."m"]\ninput = "cheap"\noutput = 1\n', ".toml", "input"),
        ('[models."m"]\ninput = -1\noutput = 1\n', ".toml", "input"),
        ("prices: {}\n", ".yaml", "models"),
    ],
)
def test_bad_price_file_names_file_record_field(
    tmp_path: Path, text: str, suffix: str, field: str
) -> None:
    f = tmp_path / f"bad{suffix}"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        PriceBook(f)
    assert err.value.problem.file == str(f)
    assert err.value.problem.field == field
    if field != "models":
        assert err.value.problem.record == "m"


def test_bad_price_file_syntax(tmp_path: Path) -> None:
    f = tmp_path / "broken.toml"
    f.write_text("[models\n")
    with pytest.raises(InputError, match="not valid TOML"):
        PriceBook(f)
    g = tmp_path / "prices.json"
    g.write_text("{}")
    with pytest.raises(InputError, match=r"\.toml, \.yaml"):
        PriceBook(g)


def test_unknown_preset_rejected() -> None:
    with pytest.raises(ValueError, match="unknown price preset"):
        PriceBook(presets=["nope"])


def test_fill_missing_cost_computes_and_marks() -> None:
    u = UsageSummary(prompt_tokens=1500, completion_tokens=600)
    out = fill_missing_cost(u, "openai:gpt-5-mini")
    assert out.total_cost_usd == pytest.approx(0.001575)
    assert out.cost_source is not None and out.cost_source.startswith(
        "computed: preset:framework-comparison gpt-5-mini, undated price; no timestamp")
    assert u.total_cost_usd is None  # a copy, input untouched
    # usage.model wins over the experiment's model
    u2 = UsageSummary(prompt_tokens=1_000_000, completion_tokens=0, model="gpt-4o")
    assert fill_missing_cost(u2, "gpt-5-mini").total_cost_usd == pytest.approx(2.5)


def test_fill_missing_cost_keeps_reported_and_unknown() -> None:
    reported = UsageSummary(prompt_tokens=10, completion_tokens=10, total_cost_usd=0.5)
    assert fill_missing_cost(reported, "gpt-5-mini") is reported
    no_tokens = UsageSummary()
    assert fill_missing_cost(no_tokens, "gpt-5-mini").total_cost_usd is None
    no_model = UsageSummary(prompt_tokens=10, completion_tokens=10)
    assert fill_missing_cost(no_model, None).total_cost_usd is None
    unknown = UsageSummary(prompt_tokens=10, completion_tokens=10, model="mystery-1")
    assert fill_missing_cost(unknown, None).total_cost_usd is None
    zero = fill_missing_cost(unknown, None, unknown_model_cost="zero")
    assert zero.total_cost_usd == 0.0 and zero.cost_source == "computed: unknown model, $0"


def test_fill_missing_cost_token_conventions() -> None:
    # OpenAI/LiteLLM style: prompt_tokens includes the cached tokens
    inclusive = UsageSummary(prompt_tokens=12400, completion_tokens=840, cached_tokens=9800,
                             model="gpt-5-mini")
    expected = (2600 * 0.25 + 840 * 2.0 + 9800 * 0.025) / 1e6
    assert fill_missing_cost(inclusive, None).total_cost_usd == pytest.approx(expected)
    # Anthropic style (cache counts exceed prompt_tokens): scylla T0, sonnet 4.5 part
    exclusive = UsageSummary(prompt_tokens=29, completion_tokens=656, cached_tokens=112686,
                             cache_creation_tokens=23106, model="claude-sonnet-4-5-20250929")
    assert fill_missing_cost(exclusive, None).total_cost_usd == pytest.approx(0.1303803)
