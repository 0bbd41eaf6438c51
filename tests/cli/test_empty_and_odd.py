"""Empty and odd data answer truthfully (issue 10 item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.store.db import StoreConnection

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("odd") / "demo.duckdb"
    res = runner.invoke(app, ["--db", str(db), "ingest", str(EXAMPLES)])
    assert res.exit_code == 0, res.output
    return db


def test_unknown_experiment_is_named_with_close_names(demo: Path) -> None:
    res = runner.invoke(app, ["--db", str(demo), "summary", "-e", "nonexistent"])
    assert res.exit_code == 2
    assert "experiment: 'nonexistent' matches no experiment" in res.output
    res = runner.invoke(app, ["--db", str(demo), "summary", "-e", "tiny-mini-toybenh"])
    assert res.exit_code == 2
    assert "closest: experiment tiny-mini-toybench," in res.output
    # ambiguous: every match is listed (issue 21.5)
    res = runner.invoke(app, ["--db", str(demo), "tiers", "-e", "toybench"])
    assert res.exit_code == 2 and "'toybench' is ambiguous" in res.output
    assert "react-gpt-4o-toybench" in res.output and "tiny-mini-toybench" in res.output
    # a unique prefix is enough
    res = runner.invoke(app, ["--db", str(demo), "summary", "-e", "React", "-f", "json"])
    assert res.exit_code == 0 and '"episodes": 60' in res.output


def test_known_experiment_still_works(demo: Path) -> None:
    res = runner.invoke(app, ["--db", str(demo), "summary", "-e", "tiny-mini-toybench",
                              "-f", "json"])
    assert res.exit_code == 0 and '"episodes": 60' in res.output


@pytest.mark.parametrize("args", [
    ["summary"], ["compare", "a", "b"], ["tiers"], ["speedups"],
    ["export", "jsonl", "OUT"], ["report", "-o", "OUT"],
])
def test_every_command_on_an_empty_store_says_so(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "empty.duckdb"
    with StoreConnection(db):
        pass  # exists, holds nothing
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    res = runner.invoke(app, ["--db", str(db), *args])
    assert res.exit_code == 2, (args, res.output)
    assert "is empty" in res.output and "evalatlas ingest" in res.output, res.output
