"""Users' mistakes never crash or stick (issue #21 point 6): a missing input path, a
file for a folder adapter, a store that does not exist, a damaged store, negative
zeros, and ``quarantine --clear``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app
from evalatlas.cli.render import Col, render
from evalatlas.errors import InputError

runner = CliRunner()


def _runs(path: Path, rewards: dict[str, list[float]], bad: int = 0) -> Path:
    lines = []
    for agent, rs in rewards.items():
        lines.append({"experiment_id": f"e-{agent}", "experiment_name": f"exp {agent}",
                      "benchmark_name": "b", "benchmark_subset": {"name": "all",
                                                                  "n_tasks": len(rs)},
                      "agent": {"name": agent, "config": {"model": f"m-{agent}"}}})
        lines += [{"experiment_id": f"e-{agent}", "task_id": f"t{i}",
                   "trajectory_id": f"{agent}-{i}", "reward": r} for i, r in enumerate(rs)]
    lines += [{"experiment_id": "e-x", "task_id": "t", "trajectory_id": f"bad-{i}",
               "reward": "not a number"} for i in range(bad)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _error_line(output: str) -> str:
    lines = [x for x in output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


def test_a_missing_input_path_is_an_error_not_a_quarantine_row(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "ingest", str(tmp_path / "runz")])
    assert r.exit_code == 2
    assert _error_line(r.output) == (f"error: {tmp_path / 'runz'}: no such file or folder "
                                     "(nothing was ingested)")
    assert not db.exists()  # a typo creates no store
    good = _runs(tmp_path / "good.jsonl", {"a": [1.0, 0.0]})
    assert runner.invoke(app, ["--db", str(db), "ingest", str(good)]).exit_code == 0
    with ea.open(db) as store:
        with pytest.raises(InputError, match="no such file or folder"):
            store.ingest(good, tmp_path / "typo")
        assert store.quarantine().total == 0  # nothing stored for ever
        assert store.count("episodes") == 2  # and nothing of the good path either


def test_a_file_given_to_a_folder_adapter_names_the_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    f = run / "per_instance_details.json"
    f.write_text("{}")
    db = tmp_path / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "ingest", str(f), "--input-format", "swebench"])
    assert r.exit_code == 2
    assert _error_line(r.output) == (f"error: {f}: the 'swebench' input format reads a "
                                     f"folder, not a file: pass the folder that holds it "
                                     f"({run})")


def test_quarantine_clear(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    one = _runs(tmp_path / "one.jsonl", {"a": [1.0]}, bad=2)
    two = _runs(tmp_path / "two.jsonl", {"b": [0.0]}, bad=3)
    for f in (one, two):
        runner.invoke(app, ["--db", str(db), "ingest", str(f)])
    with ea.open(db, read_only=True) as store:
        assert store.quarantine().total == 5
    r = runner.invoke(app, ["--db", str(db), "quarantine", "--clear", "--source", "one.jsonl"])
    assert r.exit_code == 0, r.output
    assert "removed 2 quarantine rows of files matching 'one.jsonl'" in r.output
    with ea.open(db, read_only=True) as store:
        q = store.quarantine()
        assert q.total == 3 and {row["file"] for row in q.rows} == {str(two)}
    r = runner.invoke(app, ["--db", str(db), "quarantine", "--clear"])
    assert r.exit_code == 0 and "removed 3 quarantine rows" in r.output
    with ea.open(db, read_only=True) as store:
        assert store.quarantine().total == 0
        assert store.count("episodes") == 2  # the data stays


def test_atlas_fit_on_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "nothing.duckdb"
    for args in (["atlas", "fit"], ["atlas", "abilities"], ["judge", "--help"]):
        r = runner.invoke(app, ["--db", str(db), *args])
        if args[-1] != "--help":
            assert r.exit_code == 2
            assert _error_line(r.output) == (f"error: store {db} does not exist; run "
                                             "`evalatlas ingest` first")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_store_gives_one_clean_line_for_every_command(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    rewards = {a: [float((i * k) % 3 == 0) for i in range(400)] for k, a in
               enumerate(["alpha", "beta", "gamma"], start=1)}
    runs = _runs(tmp_path / "runs.jsonl", rewards)
    assert runner.invoke(app, ["--db", str(db), "ingest", str(runs)]).exit_code == 0
    with ea.open(db) as store:  # enough rows that the data blocks lie past the cut
        store.con.execute("CHECKPOINT")
    data = db.read_bytes()
    cut = tmp_path / "cut.duckdb"
    cut.write_bytes(data[: int(len(data) * 0.3)])  # cut short, as a full disk or copy can
    out = tmp_path / "out"
    out.mkdir()
    commands = [["summary"], ["export", "jsonl", str(out / "x.jsonl")],
                ["export", "parquet", str(out / "pq")], ["report", "-o", str(out / "r.html")],
                ["compare", "alpha", "beta"], ["atlas", "fit"],
                ["atlas", "matrix", "-o", str(out / "m.csv")], ["ingest", str(runs)]]
    prefix = f"error: store {cut} is damaged or not an evalatlas store ("
    for args in commands:
        r = runner.invoke(app, ["--db", str(cut), *args])
        assert r.exit_code == 2, (args, r.output)
        line = _error_line(r.output)
        assert line.startswith(prefix), (args, line)
        assert line.endswith(f"move it aside (mv {cut} {cut}.broken) and run `evalatlas "
                             "ingest` again to rebuild it"), (args, line)
    assert [p for p in out.rglob("*") if p.is_file()] == []  # nothing half-written


def test_no_negative_zero_in_tables_csv_or_markdown() -> None:
    rows = [{"agent": "x-0", "diff": -0.0, "text": f"{-0.0001 * 100:+.1f} "
             f"[{-0.1:+.1f}, {-0.0004:+.1f}]"}]
    cols = [Col("agent", "agent", None, 0, "name"), Col("diff", "diff"), Col("text", "d")]
    md = render(rows, cols, "markdown", schema="t/1")
    assert "-0.0 " not in md and "-0.000" not in md and ", -0.0]" not in md
    assert "0.0 \\[-0.1, 0.0\\]" in md and "| x-0 |" in md  # Markdown escapes [ ]
    out = render(rows, cols, "csv", schema="t/1")
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["diff"] == "0.0"


def test_compare_prints_no_negative_zero(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    alpha = [1.0, 0.0] * 1500
    beta = [0.0, *alpha[1:]]  # one task fewer of 3000: -0.03 points, printed as 0.0
    runs = _runs(tmp_path / "runs.jsonl", {"alpha": alpha, "beta": beta})
    assert runner.invoke(app, ["--db", str(db), "ingest", str(runs)]).exit_code == 0
    for fmt in ("table", "markdown", "csv"):
        r = runner.invoke(app, ["--db", str(db), "compare", "alpha", "beta", "--format", fmt])
        assert r.exit_code == 0, r.output
        for bad in ("-0.0 ", "-0.0]", "-0.0,", "[-0.0", " -0.0%"):
            assert bad not in r.output, (fmt, r.output)
