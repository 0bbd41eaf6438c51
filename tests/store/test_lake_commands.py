"""Every command on a lake gives the file store's ``--format json`` rows (issue 23: "every
command works on a lake exactly as on a file"), on the demo data, on a local catalog and
on PostgreSQL: compare, tiers, speedups, atlas fit and the stored fit's tables, report,
export (jsonl, parquet), quarantine and judge (against the local fake OpenAI server of
tests/judge). Summary, agents and failures are in tests/store/test_lake.py."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from tests.store.lake_helpers import cli, runner, same, without_lake

from evalatlas.cli.main import app
from evalatlas.store import lake as lake_mod

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from fake_openai import FakeOpenAI, answer_verdict

if lake_mod._extension_file("ducklake") is None:  # evalatlas[lake] for this DuckDB
    pytest.skip("needs evalatlas[lake] (duckdb-extension-ducklake built for this DuckDB)",
                allow_module_level=True)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(params=["file-catalog", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, Path | None]:
    """The demo ingested into a file store and into a lake: (file, lake, data path)."""
    if request.param == "postgres":
        lake, data = request.getfixturevalue("pg_lake")
    else:
        lake, data = f"ducklake:{tmp_path / 'demo.ducklake'}", None
    file_db = str(tmp_path / "demo.duckdb")
    bad = tmp_path / "bad.jsonl"  # two lines quarantined, so quarantine has rows
    bad.write_text('{"experiment_id": "x", "task_id": 3}\nnot json\n')
    for db in (file_db, lake):
        extra = ["--data-path", str(data)] if data and db == lake else []
        cli(db, "ingest", str(EXAMPLES), data_path=data if db == lake else None)
        r = runner.invoke(app, ["--db", db, *extra, "ingest", str(bad)])
        assert r.exit_code == 1 and "rejected 2 records" in r.output, r.output
    return file_db, lake, data


def _both(file_db: str, lake: str, *cmd: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One command's JSON on each store; the lake's names the snapshot it read."""
    a = cli(file_db, *cmd, "--format", "json")
    b = cli(lake, *cmd, "--format", "json")
    assert "lake" not in a, cmd
    assert b["lake"]["location"].startswith("ducklake:"), cmd
    return a, without_lake(b)


def _verdict(request: dict[str, Any]) -> str:
    """A verdict that depends on the episode judged (its prompt), so a lake that fed the
    judge other episodes, or stored a verdict on the wrong one, shows."""
    text = json.dumps(request["messages"], sort_keys=True)
    n = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return answer_verdict(1 + n % 5, 1 + n // 5 % 5, 1 + n // 25 % 5)


BATCH_COLUMNS = ("ingest_batch", "batch_id", "batch")
"""A PostgreSQL-catalog lake numbers ingest batches by the microsecond they started
(unique across writers, docs/scale-out.md), a file store 1, 2, 3 ..."""


def _table(path: Path, batch_ids: bool) -> list[tuple[Any, ...]]:
    """A Parquet file's rows, sorted (the order rows are stored in is no promise), their
    times left out (when each store read the input), and their batch ids unless
    ``batch_ids``."""
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{path}')")
    keep = [i for i, c in enumerate(rel.columns) if batch_ids or c not in BATCH_COLUMNS]
    rows = [tuple(r[i] for i in keep if not isinstance(r[i], datetime))
            for r in rel.fetchall()]
    return sorted(rows, key=repr)


def _batchless(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the batch ids of its rows left out (see :data:`BATCH_COLUMNS`)."""
    doc["rows"] = [{k: v for k, v in r.items() if k not in BATCH_COLUMNS}
                   for r in doc["rows"]]
    return doc


def _untimed(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the seconds a fit took (in its notes) left out."""
    doc["notes"] = [re.sub(r"; [0-9.]+ s$", "", n) for n in doc.get("notes", [])]
    return doc


def test_analysis_commands_give_the_file_store_rows(stores: tuple[str, str, Path | None]
                                                    ) -> None:
    file_db, lake, _ = stores
    many_writers = lake.startswith("ducklake:postgres:")
    agents = [r["name"] for r in cli(file_db, "agents", "--format", "json")["rows"]]
    assert len(agents) == 3
    for cmd in [("compare", agents[0], agents[1]), ("compare", *agents), ("tiers",),
                ("speedups",), ("quarantine",), ("summary", "--by", "agent,task")]:
        a, b = _both(file_db, lake, *cmd)
        # the demo has no measurements: speedups has no rows, on both stores
        assert bool(a["rows"]) is (cmd[0] != "speedups"), cmd
        if cmd[0] == "quarantine" and many_writers:
            assert all(r["batch"] > 10**15 for r in b["rows"])  # microseconds since 1970
            a, b = _batchless(a), _batchless(b)
        same(a, b, "/".join(cmd))


def test_atlas_fit_and_the_stored_fit_give_the_file_store_rows(
        stores: tuple[str, str, Path | None]) -> None:
    file_db, lake, _ = stores
    a, b = _both(file_db, lake, "atlas", "fit", "--model", "1pl")
    for doc in (a, b):  # how long the fit took
        assert doc["diagnostics"].pop("seconds") >= 0
    same(a, b, "atlas fit")
    for cmd in [("atlas", "abilities"), ("atlas", "items")]:
        a, b = _both(file_db, lake, *cmd)
        assert a["rows"], cmd
        same(_untimed(a), _untimed(b), " ".join(cmd))


def test_report_json_gives_the_file_store_specs_and_data(
        stores: tuple[str, str, Path | None], tmp_path: Path) -> None:
    file_db, lake, _ = stores
    docs = []
    for name, db in (("file", file_db), ("lake", lake)):
        out = tmp_path / f"{name}.json"
        r = runner.invoke(app, ["--db", db, "report", "--format", "json", "-o", str(out)])
        assert r.exit_code == 0, r.output
        doc = json.loads(out.read_text())
        doc["data"].pop("generated")  # the minute it was made
        docs.append(doc)
    a, b = docs
    assert "lake" not in a["data"] and isinstance(b["data"].pop("lake")["snapshot"], int)
    assert a["data"]["sections"] and a["views"]
    same(a, b, "report")


def test_export_writes_the_same_records_and_tables(stores: tuple[str, str, Path | None],
                                                   tmp_path: Path) -> None:
    file_db, lake, _ = stores
    batch_ids = not lake.startswith("ducklake:postgres:")
    out = {}
    for name, db in (("file", file_db), ("lake", lake)):
        cli(db, "export", "jsonl", str(tmp_path / f"{name}.jsonl"))
        (tmp_path / name).mkdir()
        cli(db, "export", "parquet", str(tmp_path / name))
        lines = (tmp_path / f"{name}.jsonl").read_text().splitlines()
        out[name] = sorted(lines)
    assert len(out["file"]) == 183 and out["file"] == out["lake"]
    tables = sorted(p.name for p in (tmp_path / "file").glob("*.parquet"))
    assert "episodes.parquet" in tables
    assert tables == sorted(p.name for p in (tmp_path / "lake").glob("*.parquet"))
    for name in tables:
        if name == "ingest_batches.parquet":  # batch ids and times differ by design
            continue
        a = _table(tmp_path / "file" / name, batch_ids)
        b = _table(tmp_path / "lake" / name, batch_ids)
        assert a == b, name


def test_judge_gives_the_file_store_verdicts(stores: tuple[str, str, Path | None],
                                             tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    file_db, lake, _ = stores
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    counts = []
    with FakeOpenAI(responder=_verdict) as srv:
        for name, db in (("file", file_db), ("lake", lake)):
            doc = cli(db, "judge", "--judge-model", "judge-a", "--judge-base-url",
                      srv.base_url, "--judge-cache-dir", str(tmp_path / f"cache-{name}"),
                      "--format", "json")
            counts.append(without_lake(doc)["rows"])
        calls = len(srv.requests)
    assert counts[0] == counts[1] and counts[0][0]["judged"] > 0
    assert calls == 2 * counts[0][0]["judged"]  # each store judged its own episodes
    sql = ("SELECT experiment_id, trajectory_id, reward, success, outcome_source, "
           "scores, judge_usage FROM episodes ORDER BY experiment_id, trajectory_id")
    for cmd in [("summary", "--by", "agent"), ("compare", "--score", "judge.correctness")]:
        if cmd[0] == "compare":
            agents = [r["name"] for r in cli(file_db, "agents", "--format", "json")["rows"]]
            cmd = (*cmd, agents[0], agents[1])
        a, b = _both(file_db, lake, *cmd)
        same(a, b, "/".join(cmd))
    import evalatlas as ea

    with ea.open(file_db, read_only=True) as f, ea.open(lake, read_only=True) as k:
        rows_f, rows_k = f.query(sql), k.query(sql)
    assert len(rows_f) == 180
    for x, y in zip(rows_f, rows_k, strict=True):
        x["scores"], y["scores"] = json.loads(x["scores"]), json.loads(y["scores"])
        same(x, y, f"{x['experiment_id']}/{x['trajectory_id']}")
