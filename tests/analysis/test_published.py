"""The source's own published numbers beside evalatlas's, in ``summary`` (API and CLI)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalatlas.api as ea
from evalatlas.cli.main import app

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
ZSTD = Path(__file__).resolve().parents[1] / "adapters" / "data" / "mockllm_toy_zstd.eval"


def _published(tmp_path: Path, *paths: Path) -> list[dict]:
    with ea.open(tmp_path / "s.duckdb") as store:
        report = store.ingest(*paths)
        assert report.rejected == 0
        return ea.summary(store).meta["published"]


def test_inspect_metrics_are_reproduced_to_inspects_digits(tmp_path) -> None:
    rows = _published(tmp_path, FIXTURES / "inspect", FIXTURES / "eee" / "inspect", ZSTD)
    got = {(r["experiment"], r["score"], r["metric"]): r for r in rows}
    # exact digits Inspect wrote in the logs' results, and evalatlas's from the episodes
    for key, value in {
        ("2025-05-12T20-28-13-04-00_popularity", "match", "accuracy"): 0.6666666666666666,
        ("2025-05-12T20-28-13-04-00_popularity", "match", "stderr"): 0.33333333333333337,
        ("data_arc_qwen", "choice", "accuracy"): 0.3333333333333333,
        ("data_arc_qwen", "choice", "stderr"): 0.33333333333333337,
        ("data_arc_sonnet", "choice", "accuracy"): 1.0,
        ("data_pubmedqa_gpt4o_mini", "choice", "accuracy"): 1.0,
        ("mockllm_toy_zstd", "includes", "accuracy"): 0.6,
        ("mockllm_toy_zstd", "includes", "stderr"): 0.24494897427831783,
        ("mockllm_toy_zstd", "match", "accuracy"): 0.0,
    }.items():
        r = got[key]
        assert r["published"] == value and r["evalatlas"] == value, key
        assert r["agrees"] is True
    # logs cut down to 1 sample by the EEE converter: flagged, with the reason
    bad = got[("data_intercode_ctf_local_path", "includes", "accuracy")]
    assert bad["agrees"] is False and bad["evalatlas"] == 0.0
    assert bad["published"] == 0.35443037974683544
    assert bad["note"] == "the source scored 79 samples, the data holds 1"
    header_only = got[("data_with_llm_scoring", "simpleqa_scorer", "accuracy")]
    assert header_only["published"] == 0.431 and header_only["evalatlas"] is None
    assert header_only["agrees"] is None


def test_summary_cli_prints_published_table_and_json(tmp_path) -> None:
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(app, ["--db", db, "ingest", str(FIXTURES / "inspect")]).exit_code == 0
    out = runner.invoke(app, ["--db", db, "summary", "--format", "markdown"]).output
    assert "Published by the source vs recomputed by evalatlas" in out
    assert "| 0.3333 | 0.3333 | 3 / 3 | yes |" in out
    env = json.loads(runner.invoke(app, ["--db", db, "summary", "--format", "json"]).output)
    assert {r["metric"] for r in env["published"]} == {"accuracy", "stderr"}
