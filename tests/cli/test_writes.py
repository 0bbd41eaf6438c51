"""Every command that writes a file: one rule for folders, one-line errors, nothing
partial (issue #28 point 3, issue #21 point 6)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.safe_write import TEMP_SUFFIX

runner = CliRunner()


def _write_runs(path: Path) -> None:
    lines = []
    for agent, rate in (("alpha", 0.7), ("beta", 0.4)):
        lines.append({"experiment_id": f"e-{agent}", "experiment_name": f"exp {agent}",
                      "benchmark_name": "bench", "benchmark_subset": {"name": "all",
                                                                       "n_tasks": 20},
                      "agent": {"name": agent, "config": {"model": f"m-{agent}"}}})
        for t in range(20):
            ok = (t * 37 % 20) < rate * 20
            lines.append({"experiment_id": f"e-{agent}", "task_id": f"t{t}",
                          "trajectory_id": f"{agent}-{t}", "reward": 1.0 if ok else 0.0})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("writes")
    _write_runs(d / "runs.jsonl")
    db = d / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "ingest", str(d / "runs.jsonl")])
    assert r.exit_code == 0, r.output
    return db


# (arguments after --db, the output path's place: a file or a folder)
FILE_WRITERS = [
    ["export", "jsonl", "{out}"],
    ["report", "-o", "{out}"],
    ["summary", "-o", "{out}"],
    ["summary", "--format", "json", "-o", "{out}"],
    ["atlas", "matrix", "-o", "{out}"],
    ["quarantine", "-o", "{out}"],
]
FOLDER_WRITERS = [
    ["export", "parquet", "{out}"],
    ["export", "eee", "{out}"],
    ["schema", "--write", "{out}"],
]


def _args(store: Path, template: list[str], out: Path) -> list[str]:
    return ["--db", str(store), *[a.replace("{out}", str(out)) for a in template]]


def _one_line_error(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    assert "Traceback" not in output
    return lines[0]


@pytest.mark.parametrize("template", FILE_WRITERS + FOLDER_WRITERS,
                         ids=lambda t: " ".join(t[:2]))
def test_a_missing_parent_folder_is_one_line_and_nothing_is_made(
        store: Path, tmp_path: Path, template: list[str]) -> None:
    out = tmp_path / "missing" / "out.x"
    r = runner.invoke(app, _args(store, template, out))
    assert r.exit_code == 2, r.output
    line = _one_line_error(r.output)
    assert "missing does not exist" in line and "create it first" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("template", FILE_WRITERS, ids=lambda t: " ".join(t[:2]))
def test_a_folder_where_a_file_goes(store: Path, tmp_path: Path, template: list[str]) -> None:
    r = runner.invoke(app, _args(store, template, tmp_path))
    assert r.exit_code == 2, r.output
    assert _one_line_error(r.output) == f"error: cannot write {tmp_path}: it is a folder; " \
        "name a file"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("template", FOLDER_WRITERS, ids=lambda t: " ".join(t[:2]))
def test_a_file_where_a_folder_goes(store: Path, tmp_path: Path, template: list[str]) -> None:
    f = tmp_path / "file"
    f.write_text("keep")
    r = runner.invoke(app, _args(store, template, f))
    assert r.exit_code == 2, r.output
    assert _one_line_error(r.output) == f"error: cannot write into {f}: it is a file, " \
        "not a folder"
    assert f.read_text() == "keep"


@pytest.mark.parametrize("template", FILE_WRITERS + FOLDER_WRITERS,
                         ids=lambda t: " ".join(t[:2]))
def test_writes_land_whole_and_leave_no_temporary_file(
        store: Path, tmp_path: Path, template: list[str]) -> None:
    out = tmp_path / ("out" if template in FOLDER_WRITERS else "out.csv")
    r = runner.invoke(app, _args(store, template, out))
    assert r.exit_code == 0, r.output
    assert out.exists()
    found = [p for p in tmp_path.rglob("*") if p.name.endswith(TEMP_SUFFIX)]
    assert found == []


def test_summary_table_to_a_file_writes_the_table(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.txt"
    r = runner.invoke(app, ["--db", str(store), "summary", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text(encoding="utf-8")
    assert "Summary" in text and "alpha" in text and "beta" in text
    assert "\x1b" not in text  # plain text, no colour codes
    assert "hidden:" not in text  # a file keeps every column
    assert "alpha" not in r.stdout  # the table went to the file, not the terminal


def test_export_streams_to_a_device_and_reports_a_full_one(store: Path,
                                                          tmp_path: Path) -> None:
    full = tmp_path / "full"
    try:
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # a private /dev/full
        with open(full, "wb"):
            pass
    except OSError as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    r = runner.invoke(app, ["--db", str(store), "export", "jsonl", str(full)])
    assert r.exit_code == 2, r.output
    assert _one_line_error(r.output) == f"error: no space left on the device {full}"
    assert stat.S_ISCHR(full.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_export_dash_is_stdout(store: Path) -> None:
    r = runner.invoke(app, ["--db", str(store), "export", "jsonl", "-"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 42 and lines[0]["experiment_id"] == "e-alpha"


@pytest.mark.parametrize("template", [
    ["export", "jsonl", "{out}/x.jsonl"], ["export", "parquet", "{out}/pq"],
    ["export", "eee", "{out}/eee"], ["report", "-o", "{out}/r.html"],
    ["summary", "-o", "{out}/s.txt"], ["atlas", "matrix", "-o", "{out}/m.csv"],
], ids=lambda t: " ".join(t[:2]))
def test_a_full_disk_is_one_line_and_leaves_nothing(
        store: Path, small_tmpfs, template: list[str]) -> None:  # type: ignore[no-untyped-def]
    disk = small_tmpfs("64k")
    _fill(disk / "fill")
    before = sorted(p.name for p in disk.iterdir())
    r = runner.invoke(app, _args(store, template, disk))
    assert r.exit_code == 2, r.output
    line = _one_line_error(r.output)
    assert line.startswith("error: no space left on the device holding "), line
    left = sorted(p.name for p in disk.rglob("*") if p.is_file())
    assert left == before  # no partial file, no temporary file


def _fill(path: Path) -> None:
    """Fill the disk holding ``path`` to the last byte."""
    with open(path, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"x" * 1024)
        except OSError:
            pass
        try:
            while True:
                fh.write(b"x")
        except OSError:
            pass


def test_a_read_only_folder_as_an_unprivileged_user(store: Path, as_nobody) -> None:  # type: ignore[no-untyped-def]
    folder, run = as_nobody
    db = folder / "s.duckdb"
    db.write_bytes(store.read_bytes())
    db.chmod(0o644)
    locked = folder / "locked"
    locked.mkdir(mode=0o755)  # root's: nobody cannot write into it
    cli = [sys.executable, "-m", "evalatlas.cli.main", "--db", str(db)]
    for args, shown in ((["export", "jsonl", str(locked / "x.jsonl")], locked / "x.jsonl"),
                        (["report", "-o", str(locked / "r.html")], locked / "r.html"),
                        (["export", "parquet", str(locked / "pq")], locked / "pq"),
                        (["summary", "-o", str(locked / "s.txt")], locked / "s.txt")):
        out = run([*cli, *args])
        assert out.returncode == 2, out.stderr
        assert _one_line_error(out.stderr) == (f"error: cannot write {shown}: permission "
                                               f"denied (folder {locked})")
    assert list(locked.iterdir()) == []


# --format table|json on the commands that write files (issue #21 point 7): json is an
# envelope of what was written, the format name in any case.
def _json(args: list[str]) -> dict:  # type: ignore[type-arg]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("spelling", ["json", "JSON", "Json"])
def test_export_jsonl_format_json(store: Path, tmp_path: Path, spelling: str) -> None:
    out = tmp_path / "runs.jsonl"
    doc = _json(["--db", str(store), "export", "jsonl", str(out), "--format", spelling])
    assert doc == {"schema": "evalatlas.export-jsonl/1",
                   "rows": [{"path": str(out), "episodes": 40}]}
    lines = out.read_text(encoding="utf-8").splitlines()
    assert sum(1 for x in lines if '"trajectory_id"' in x) == 40
    r = runner.invoke(app, ["--db", str(store), "export", "jsonl", str(out), "-f", "table"])
    assert r.exit_code == 0 and "".join(r.output.split()) == f"wrote40episoderecordsto{out}"
    r = runner.invoke(app, ["--db", str(store), "export", "jsonl", str(out), "-f", "csv"])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_export_jsonl_to_stdout_puts_the_envelope_on_stderr(store: Path) -> None:
    r = runner.invoke(app, ["--db", str(store), "export", "jsonl", "-", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stderr) == {"schema": "evalatlas.export-jsonl/1",
                                    "rows": [{"path": "-", "episodes": 40}]}
    records = [json.loads(x) for x in r.stdout.splitlines()]
    assert sum(1 for x in records if "trajectory_id" in x) == 40


def test_export_parquet_format_json(store: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "pq"
    doc = _json(["--db", str(store), "export", "parquet", str(out), "--format", "JSON"])
    assert doc["schema"] == "evalatlas.export-parquet/1" and doc["directory"] == str(out)
    by_table = {r["table"]: r for r in doc["rows"]}
    assert by_table["episodes"]["rows"] == 40
    for r in doc["rows"]:  # every row names a file that holds that many rows
        assert r["path"] == str(out / f"{r['table']}.parquet")
        assert pq.read_metadata(r["path"]).num_rows == r["rows"]


def test_export_eee_format_json(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "eee"
    doc = _json(["--db", str(store), "export", "eee", str(out), "--validate",
                 "--format", "json"])
    assert doc["schema"] == "evalatlas.export-eee/1"
    assert doc["directory"] == str(out / "data")
    assert doc["skipped"] == [] and doc["problems"] == []
    rows = {r["experiment_id"]: r for r in doc["rows"]}
    assert set(rows) == {"e-alpha", "e-beta"}
    for r in rows.values():
        assert r["samples"] == 20 and r["outcome_unknown"] == 0
        assert Path(r["aggregate"]).is_file() and Path(r["samples_file"]).is_file()
        n = len(Path(r["samples_file"]).read_text(encoding="utf-8").splitlines())
        assert n == 20
        assert r["score"] == json.loads(Path(r["aggregate"]).read_text(encoding="utf-8"))[
            "evaluation_results"][0]["score_details"]["score"]


def test_atlas_matrix_format_json(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.csv"
    doc = _json(["--db", str(store), "atlas", "matrix", "-o", str(out), "--format", "Json"])
    assert doc == {"schema": "evalatlas.atlas-matrix/1", "cell": "success", "drift": "split",
                   "rows": [{"path": str(out), "cells": 40, "agents": 2, "items": 20}]}
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1 + 40  # header + cells


def test_schema_write_format_json(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    doc = _json(["schema", "--write", str(out), "--format", "JSON"])
    assert doc["schema"] == "evalatlas.schema/1" and doc["directory"] == str(out)
    written = sorted(p.name for p in out.iterdir())
    assert sorted(Path(r["path"]).name for r in doc["rows"]) == written
    assert {r["record"] for r in doc["rows"]} >= {"EpisodeRecord"}
    # printed (no --write), the output is the schema itself whatever the format
    r = runner.invoke(app, ["schema", "EpisodeRecord", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.output)["title"] == "EpisodeRecord"
