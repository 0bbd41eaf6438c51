"""Hostile agent text through the CLI: no terminal control sequence, no live spreadsheet
formula, no split CSV row, no credential in what is printed or written."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from evalatlas.cli.main import app

runner = CliRunner()

ANSI = "\x1b[2J\x1b[31mRED\x1b[0m"
OSC = "\x1b]8;;http://evil.example\x07link\x1b]8;;\x07\x1b]52;c;cHduZWQ=\x07"
C1 = "\x9b2J"
FORMULA = '=HYPERLINK("http://evil.example","x")'


def _hostile_store(tmp_path: Path) -> list[str]:
    exp = {"experiment_id": "e1", "experiment_name": f"exp {OSC}",
           "benchmark_name": "+cmd|' /C calc'!A0",
           "benchmark_subset": {"name": "all", "n_tasks": 2},
           "agent": {"name": f"agent {ANSI} {C1} ok\rOVERWRITE", "config": {"m": "x"}},
           "labels": {"tier": FORMULA, "note": "@SUM(1)"}}
    eps = [{"experiment_id": "e1", "task_id": f"task\r{FORMULA}", "trajectory_id": "a",
            "reward": 1.0, "output_text": ANSI},
           {"experiment_id": "e1", "task_id": "-2+3", "trajectory_id": "b", "reward": 0.0,
            "status": "error", "error_message": f"{ANSI} key sk-proj-abcdefghij0123456789"},
           # rejected: the quarantine reason quotes the hostile key name
           {"experiment_id": "e1", "task_id": "t", "trajectory_id": "c", "reward": 1.0,
            f"evil{ANSI}": 1}]
    f = tmp_path / "hostile.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in [exp, *eps]), encoding="utf-8")
    db = ["--db", str(tmp_path / "s.duckdb")]
    r = runner.invoke(app, [*db, "ingest", str(f)])
    assert r.exit_code == 0, r.output
    _assert_terminal_clean(r.output)
    return db


def _assert_terminal_clean(text: str) -> None:
    bad = [c for c in text if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f
           or 0x202a <= ord(c) <= 0x202e]
    assert bad == [], repr(text[:500])
    assert "sk-proj-abcdefghij" not in text


def test_tables_and_messages_escape_control_characters(tmp_path: Path) -> None:
    db = _hostile_store(tmp_path)
    for args in (["summary", "--by", "agent,benchmark,label:tier"], ["summary", "--by", "task"],
                 ["summary", "--format", "markdown"], ["summary", "--format", "json"],
                 ["quarantine"], ["summary", "-e", f"nothing{ANSI}"]):
        r = runner.invoke(app, [*db, *args])
        _assert_terminal_clean(r.output)
    r = runner.invoke(app, [*db, "summary", "--by", "agent"])
    assert "agent \\x" in r.output  # shown, not executed (the name is abbreviated)
    r = runner.invoke(app, [*db, "summary", "--format", "markdown"])
    assert "\\x1b\\[31mRED\\x1b\\[0m \\x9b2J ok\\x0dOVERWRITE" in r.output
    r = runner.invoke(app, [*db, "summary", "--format", "json"])
    assert json.loads(r.output)["rows"][0]["agent"].startswith("agent \x1b[2J")  # JSON keeps it


def test_csv_output_neutralises_formulas_and_quotes_cr(tmp_path: Path) -> None:
    db = _hostile_store(tmp_path)
    r = runner.invoke(app, [*db, "summary", "--by", "task,benchmark,label:tier",
                            "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\x9b" not in r.output
    rows = list(csv.DictReader(io.StringIO(r.output, newline="")))
    assert len(rows) == 2  # the CR inside a task id did not split a row
    tasks = sorted(row["task"] for row in rows)
    assert tasks == ["'-2+3", f"task\r{FORMULA}"]
    for row in rows:
        assert row["benchmark"] == "'+cmd|' /C calc'!A0"
        assert row["label:tier"] == "'" + FORMULA
        for value in row.values():
            if value and value[0] in "=+-@\t\r":
                float(value)  # only plain numbers may start like a formula
