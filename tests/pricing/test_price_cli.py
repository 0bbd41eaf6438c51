"""``evalatlas price`` end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

runner = CliRunner()


def _json(args: list[str]) -> dict:
    res = runner.invoke(app, ["price", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_price_json_scylla_t0_sonnet() -> None:
    env = _json(["claude-sonnet-4-5-20250929", "--input", "29", "--output", "656",
                 "--cache-read", "112686", "--cache-write", "23106"])
    assert env["schema"] == "evalatlas.price/1"
    row = env["rows"][0]
    assert row["cost_usd"] == pytest.approx(0.1303803)
    assert row["source"].startswith("genai-prices")
    assert (row["cache_read_per_mtok"], row["cache_write_per_mtok"]) == (0.3, 3.75)
    api = ea.price("claude-sonnet-4-5-20250929", 29, 656, 112686, 23106)
    assert env == api.to_dict() and api.cost_usd == row["cost_usd"]  # the CLI is the API


def test_price_api_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="token counts"):
        ea.price("gpt-4o", input_tokens=-1)
    with pytest.raises(ValueError, match="unknown_model_cost"):
        ea.price("gpt-4o", unknown_model_cost="free")
    dated = ea.price("groq/llama-3.1-8b-instant", 1000, at="2024-06-01")
    assert dated.rows[0]["cost_source"].endswith("for 2024-06-01")


def test_price_spellings_agree() -> None:
    costs = [_json([m, "--input", "1500", "--output", "600"])["rows"][0]["cost_usd"]
             for m in ["openai/gpt-5-mini", "openai:gpt-5-mini", "@gpt-5-mini", "gpt-5-mini"]]
    assert costs == pytest.approx([0.001575] * 4)


def test_price_unknown_model_none_and_zero() -> None:
    row = _json(["mystery-model", "--input", "10"])["rows"][0]
    assert row["cost_usd"] is None and row["cost_source"] == "unknown"
    row = _json(["mystery-model", "--input", "10", "--unknown-model-cost", "zero"])["rows"][0]
    assert row["cost_usd"] == 0.0 and row["cost_source"] == "computed: unknown model, $0"


def test_price_file_and_preset(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text('[models."gpt-4o"]\ninput = 1.0\noutput = 1.0\n')
    row = _json(["gpt-4o", "--input", "1000000", "--prices", str(f)])["rows"][0]
    assert row["cost_usd"] == 1.0 and row["source"] == f"file:{f}"
    row = _json(["gpt-4o", "--output", "1000000", "--preset", "scylla-doc"])["rows"][0]
    assert row["cost_usd"] == 15.0 and row["source"] == "preset:scylla-doc"


def test_price_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text('[models."m"]\ninput = 1.0\n')
    res = runner.invoke(app, ["price", "m", "--prices", str(f)])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "field 'output'" in text and "[record m]" in text and str(f.name) in text


def test_price_table_escapes_model_text() -> None:
    res = runner.invoke(app, ["price", "[bold]evil[/bold]", "--format", "markdown"])
    assert res.exit_code == 0
    assert "\\[bold\\]evil\\[/bold\\]" in res.stdout


def test_summary_lists_models_with_unknown_prices(tmp_path: Path) -> None:
    from evalatlas.records import EpisodeRecord, EvalLog
    from evalatlas.records.models import (
        AgentInfo,
        BenchmarkSubset,
        ExperimentRecord,
        UsageSummary,
    )

    for exp_id, model in (("known", "gpt-5-mini"), ("unknown", "mystery-model-9")):
        exp = ExperimentRecord(
            experiment_id=exp_id, experiment_name=exp_id, benchmark_name="b",
            agent=AgentInfo(name=exp_id, llm_model=model, config={"m": model}),
            benchmark_subset=BenchmarkSubset(name="all", n_tasks=1))
        ep = EpisodeRecord(experiment_id=exp_id, task_id="t", reward=0.0,
                           trajectory_id=f"{exp_id}-t",
                           usage=UsageSummary(prompt_tokens=10, completion_tokens=5))
        EvalLog(experiment=exp, episodes=[ep]).save(tmp_path / "in" / exp_id)
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["--db", db, "ingest", str(tmp_path / "in")]).exit_code == 0
    res = runner.invoke(app, ["--db", db, "summary", "--format", "json"])
    assert res.exit_code == 0, res.output
    env = json.loads(res.stdout)
    assert env["unknown_price_models"] == ["mystery-model-9"]
    assert [n for n in env["notes"] if "mystery-model-9" in n] == [
        "cost unknown (no price for these models; add them with a price file, "
        "see `evalatlas price --help`): mystery-model-9"]
    rows = {r["agent"]: r for r in env["rows"]}
    assert rows["unknown"]["cost_unknown_episodes"] == 1
    assert rows["known"]["total_cost_usd"] == pytest.approx((10 * 0.25 + 5 * 2.0) / 1e6)
