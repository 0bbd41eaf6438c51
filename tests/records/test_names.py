"""One name per benchmark and per model (issue 10 item 6): the table and each adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.records.names import benchmark_tasks, canonical_benchmark, model_from_label
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"


@pytest.mark.parametrize("label, model", [
    ("Claude 4.5 Sonnet - 10132025", "claude-sonnet-4-5"),
    ("claude-45sonnet-10132025", "claude-sonnet-4-5"),
    ("Claude 4 Sonnet - 10132025", "claude-sonnet-4"),
    ("claude-4sonnet-10132025", "claude-sonnet-4"),
    ("claude-sonnet-4-20250514", "claude-sonnet-4"),
    ("Claude Opus 4.1 - paper", "claude-opus-4-1"),
    ("GPT-5 Codex -- debug-oct22", "gpt-5-codex"),
    ("gpt-5-250-turns-10132025", "gpt-5"),
    ("gptoss-paper", "gpt-oss"),
    ("Gemini 2.5 Pro Preview - paper", "gemini-2.5-pro"),
    ("something else", None),
])
def test_model_from_label(label: str, model: str | None) -> None:
    assert model_from_label(label) == model


def test_benchmark_table_and_user_extension(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert canonical_benchmark("terminal-bench") == "terminal-bench-core"
    assert canonical_benchmark("SWE-bench Verified") == "swe-bench-verified"
    assert canonical_benchmark("my bench") == "my bench"
    assert benchmark_tasks("swebench-verified") == 500
    table = tmp_path / "names.json"
    table.write_text(json.dumps({"benchmarks": {"my-bench": {"aliases": ["my bench"],
                                                             "tasks": 12}},
                                 "models": {"my-model": ["^my-?model"]}}))
    monkeypatch.setenv("EVALATLAS_NAMES", str(table))
    assert canonical_benchmark("My Bench") == "my-bench" and benchmark_tasks("my bench") == 12
    assert model_from_label("MyModel v2") == "my-model"


def test_terminal_bench_is_one_benchmark_and_keeps_the_original(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [FIXTURES / "terminal-bench"])
        rows = store.query("SELECT benchmark_name, extra FROM experiments")
    assert {r["benchmark_name"] for r in rows} == {"terminal-bench-core"}
    originals = {json.loads(r["extra"]).get("original_names", {}).get("benchmark_name")
                 for r in rows}
    assert "terminal-bench" in originals  # the runs without a dataset name


def test_swebench_pro_runs_have_models(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [FIXTURES / "swebench-pro"])
        rows = store.query("SELECT experiment_name, llm_model, benchmark_name "
                           "FROM experiments")
    # 9 run directories + 14 CSV runs, 7 of them the same run (tests/adapters/test_swebench)
    assert len(rows) == 16 and {r["benchmark_name"] for r in rows} == {"swe-bench-pro"}
    assert all(r["llm_model"] for r in rows), [r for r in rows if not r["llm_model"]]
    by_name = {r["experiment_name"]: r["llm_model"] for r in rows}
    assert by_name["claude-45sonnet-10132025"] == "claude-sonnet-4-5"


def test_other_adapters_names(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [FIXTURES / "swebench-verified", FIXTURES / "tau-bench"])
        names = {r["benchmark_name"] for r in store.query(
            "SELECT DISTINCT benchmark_name FROM experiments")}
    assert names == {"swe-bench-verified", "tau-bench-airline"}
