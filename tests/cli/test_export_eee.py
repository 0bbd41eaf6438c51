"""``evalatlas export eee DIR``: files written, validated, reported; options checked."""

from __future__ import annotations

from pathlib import Path

from eee_checks import check_tree
from typer.testing import CliRunner

from evalatlas.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def _db(tmp_path: Path) -> list[str]:
    return ["--db", str(tmp_path / "s.duckdb")]


def test_export_eee_writes_valid_files(tmp_path: Path) -> None:
    assert runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)]).exit_code == 0
    out = tmp_path / "eee"
    r = runner.invoke(app, [*_db(tmp_path), "export", "eee", str(out),
                            "--organization", "Example Lab", "--relationship", "first_party"])
    assert r.exit_code == 0, r.output
    assert "wrote 3 EEE evaluations" in r.output
    assert "planner-sonnet-toybench: score 0.75, 60 samples" in r.output
    tree = check_tree(out)
    assert len(tree) == 3
    for data, _ in tree.values():
        src = data["source_metadata"]
        assert src["source_organization_name"] == "Example Lab"
        assert src["evaluator_relationship"] == "first_party"
        assert src["source_type"] == "evaluation_run"
        assert data["retrieved_timestamp"].isdigit()


def test_export_eee_filter_and_bad_relationship(tmp_path: Path) -> None:
    runner.invoke(app, [*_db(tmp_path), "ingest", str(EXAMPLES)])
    out = tmp_path / "eee"
    r = runner.invoke(app, [*_db(tmp_path), "export", "eee", str(out), "-e",
                            "tiny-mini-toybench"])
    assert r.exit_code == 0, r.output
    assert "wrote 1 EEE evaluations" in r.output
    ((data, rows),) = check_tree(out).values()
    assert data["model_info"]["id"] == "openai/gpt-4o-mini" and len(rows) == 60
    r = runner.invoke(app, [*_db(tmp_path), "export", "eee", str(tmp_path / "x"),
                            "--relationship", "friends"])
    assert r.exit_code == 2 and "relationship" in r.output
    assert not (tmp_path / "x").exists()
