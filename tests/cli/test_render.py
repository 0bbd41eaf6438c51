"""The one table renderer: columns by priority, names abbreviated in the middle, hidden
columns named; every table command rendered at 80 columns on the demo and the fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.cli.render import (
    MIN_READABLE,
    Col,
    OutputFormat,
    abbreviate_middle,
    fit_columns,
    render,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
FIXTURES = REPO.parent / "shared" / "fixtures"
runner = CliRunner()
WIDTH = 80


def test_abbreviate_middle_keeps_both_ends() -> None:
    assert abbreviate_middle("claude-3-7-sonnet-20250219", 21) == "claude-3-7-…-20250219"
    assert abbreviate_middle("groq/llama-3.1-8b-instant", 21) == "groq/llama…8b-instant"
    assert abbreviate_middle("short", 21) == "short"
    for w in range(3, 26):
        out = abbreviate_middle("claude-3-7-sonnet-20250219", w)
        assert len(out) == w and out.startswith("c") and out.endswith("9")


def test_fit_columns_hides_lowest_priority_first() -> None:
    cols = [Col("a", "agent", None, 0, "name"), Col("x", "success", None, 1),
            Col("c", "cost", None, 3), Col("t", "tokens", None, 2)]
    cells = [["claude-3-7-sonnet-20250219", "75.0% [62.8, 84.2]", "$4.9769", "1,303,877"]]
    wide = fit_columns(cols, cells, 200)
    assert wide.hidden == [] and wide.widths[0] == 26
    narrow = fit_columns(cols, cells, 50)
    assert [cols[i].header for i in narrow.hidden] == ["cost"]  # priority 3 goes first
    assert sum(narrow.widths.values()) + 3 * len(narrow.shown) + 1 <= 50
    assert min(narrow.widths.values()) >= MIN_READABLE


def test_render_abbreviates_names_and_says_what_was_hidden() -> None:
    rows = [{"agent": "claude-3-7-sonnet-20250219-with-a-long-suffix", "success": 0.75,
             "tokens": 1303877, "cost": 4.9769, "notes": "a b c d e f g h i j k l m n"}]
    cols = [Col("agent", "agent", None, 0, "name"), Col("success", "success", None, 1),
            Col("notes", "notes", None, 2), Col("tokens", "tokens", None, 4),
            Col("cost", "cost", None, 3)]
    con = Console(width=50, record=True)
    render(rows, cols, OutputFormat.table, schema="t/1", console=con)
    text = con.export_text()
    assert "claude-3" in text and "…" in text and "suffix" in text
    assert "a b c d e f g h i j k l m n" not in text and "m n" in text  # wrapped, kept
    assert ("hidden: tokens, cost (widen the terminal or use --format json)"
            in " ".join(text.split()))
    assert max(len(line) for line in text.splitlines()) <= 50


def _column_widths(output: str) -> list[list[int]]:
    """Content widths of every table's columns, read from its top border (┏━━┳━━┓)."""
    tables = []
    for line in output.splitlines():
        if line.startswith("┏"):
            tables.append([len(seg) - 2 for seg in re.split("┳", line.strip("┏┓"))])
    return tables


def _check_fits(output: str, min_tables: int = 1) -> None:
    assert max(len(line) for line in output.splitlines()) <= WIDTH, output
    tables = _column_widths(output)
    assert len(tables) >= min_tables, output
    for widths in tables:
        assert min(widths) >= MIN_READABLE, (widths, output)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo, ProjectScylla's dry run, FormulaCode's website CSV and a rejected record."""
    root = tmp_path_factory.mktemp("render")
    db = root / "s.duckdb"
    bad = root / "bad.jsonl"
    bad.write_text('{"experiment_id": "e", "task_id": "t", "trajectory_id": "b"}\n')
    for src in (EXAMPLES, FIXTURES / "scylla", FIXTURES / "formulacode" / "website_data.csv",
                bad):
        r = runner.invoke(app, ["--db", str(db), "ingest", str(src)])
        assert r.exit_code in (0, 1), r.output
    return db


COMMANDS = {
    "summary": ["summary"],
    "summary-by-agent-model": ["summary", "--by", "agent,model"],
    "compare": ["compare", "planner-sonnet", "react-gpt-4o", "tiny-mini"],
    "tiers": ["tiers"],
    "speedups": ["speedups"],
    "speedups-by-task": ["speedups", "--by", "task"],
    "speedups-detail": ["speedups", "--detail", "--limit", "30"],
    "quarantine": ["quarantine"],
    "formats": ["formats"],
    "price": ["price", "anthropic/claude-3-7-sonnet-20250219", "--input", "1000",
              "--output", "500", "--cache-read", "10"],
    "codequality": ["codequality", str(REPO / "src" / "evalatlas" / "cli"), "--workers", "1"],
    "atlas-abilities": ["atlas", "abilities"],
    "atlas-items": ["atlas", "items"],
    "atlas-estimate": ["atlas", "estimate", "tiny-mini"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_table_fits_80_columns(store: Path, name: str) -> None:
    r = runner.invoke(app, ["--db", str(store), *COMMANDS[name]], env={"COLUMNS": str(WIDTH)})
    assert r.exit_code == 0, r.output
    _check_fits(r.stdout)


def test_compare_at_80_columns_keeps_the_difference_and_names_the_hidden(store: Path) -> None:
    r = runner.invoke(app, ["--db", str(store), *COMMANDS["compare"]],
                      env={"COLUMNS": str(WIDTH)})
    assert "A - B points" in r.stdout and "+10.0 [-5.3, +24.9]" in r.stdout
    hidden = next(line for line in r.stdout.splitlines() if line.startswith("hidden:"))
    assert "cost/task" in hidden
    wide = runner.invoke(app, ["--db", str(store), *COMMANDS["compare"]],
                         env={"COLUMNS": "250"})
    assert "hidden:" not in wide.stdout and "cost/task A" in wide.stdout


def test_run_and_compare_frameworks_fit_80_columns(tmp_path: Path) -> None:
    db = str(tmp_path / "o.duckdb")
    env = {"COLUMNS": str(WIDTH)}
    r = runner.invoke(app, ["--db", db, "run", "offline_qa", "--framework", "bm25",
                            "--output-dir", str(tmp_path / "runs"), "--skip-code-quality"],
                      env=env)
    assert r.exit_code == 0, r.output
    _check_fits(r.stdout)
    runner.invoke(app, ["--db", db, "run", "offline_qa", "--framework", "echo",
                        "--output-dir", str(tmp_path / "runs"), "--skip-code-quality"])
    r = runner.invoke(app, ["--db", db, "compare-frameworks", "-f", "table"], env=env)
    assert r.exit_code == 0, r.output
    _check_fits(r.stdout)
    assert "bm25" in r.stdout and "echo" in r.stdout


def test_judge_and_judge_rubric_fit_80_columns(store: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The two LLM-judge commands against the local fake OpenAI server (127.0.0.1), with
    long judge model names: the tables fit and no column collapses."""
    import shutil
    import sys

    sys.path.insert(0, str(REPO / "tests" / "judge"))
    from fake_openai import FakeOpenAI

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "judged.duckdb"
    shutil.copy(store, db)  # judging writes scores: keep the shared store as it is
    env = {"COLUMNS": str(WIDTH)}
    models = ["anthropic/claude-3-7-sonnet-20250219", "openai/gpt-4o-mini-2024-07-18"]
    rubric = FIXTURES / "scylla" / "test-001" / "expected" / "rubric.yaml"
    answer = tmp_path / "out.txt"
    answer.write_text("print('Hello, World!')\n")
    with FakeOpenAI() as srv:
        r = runner.invoke(app, ["--db", str(db), "judge", "--judge-model", models[0],
                                "--judge-base-url", srv.base_url, "--judge-cache-dir",
                                str(tmp_path / "cache"), "--limit", "6"], env=env)
        assert r.exit_code == 0, r.output
        _check_fits(r.stdout)
        assert "judged" in r.stdout and "claude-3-7" in r.stdout
        args = ["judge-rubric", str(rubric), "--output-file", str(answer), "--task",
                "Create hello.py", "--judge-base-url", srv.base_url, "--judge-cache-dir",
                str(tmp_path / "cache")]
        for m in models:
            args += ["--judge-model", m]
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 0, r.output
        _check_fits(r.stdout)
        assert "consensus" in r.stdout and "2/2 judges valid" in " ".join(r.stdout.split())
        assert len(srv.requests) == 6 + 2


def test_summary_at_80_columns_shows_cost_not_an_empty_published_column(
        tmp_path: Path) -> None:
    """The README's promise for an 80-column terminal (agent, success, episodes, tasks,
    cost): with no published headline in the store the "published" column is not shown
    (a column of dashes took cost's place); JSON still carries the field."""
    db = str(tmp_path / "demo.duckdb")
    assert runner.invoke(app, ["--db", db, "ingest", str(EXAMPLES)]).exit_code == 0
    r = runner.invoke(app, ["--db", db, "summary"], env={"COLUMNS": str(WIDTH)})
    assert r.exit_code == 0, r.output
    header = next(line for line in r.stdout.splitlines() if "agent" in line)
    for col in ("agent", "episodes", "tasks", "success", "cost"):
        assert col in header
    assert "published" not in r.stdout
    _check_fits(r.stdout)
    rows = json.loads(runner.invoke(app, ["--db", db, "summary", "--format", "json"]).stdout)
    assert all("published" in row and not row["published"] for row in rows["rows"])
