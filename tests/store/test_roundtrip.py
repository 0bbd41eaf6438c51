"""Lossless round trips: export -> ingest into a fresh store -> export again is identical.

For the demo data and every fixture format (one store holding them all): ``export
jsonl`` (experiment records, episodes, measurements) gives the same bytes again, and
``export parquet`` gives the same rows (read by DuckDB, pandas and polars without
evalatlas). Every exported record carries ``format_version``.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import evalatlas.api as ea
from evalatlas.adapters.registry import detect
from evalatlas.records.models import FORMAT_VERSION
from evalatlas.store.export import RECORD_TABLES, export_jsonl, export_parquet

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"


def _inputs() -> list[Path]:
    """The demo data and every fixture format (read when a test runs, never at import:
    a clone without ../shared must still collect)."""
    return [REPO / "examples", *(p for p in sorted(FIXTURES.iterdir()) if p.is_dir())]


@pytest.fixture(scope="module")
def original(tmp_path_factory, fixtures: Path) -> Path:
    d = tmp_path_factory.mktemp("rt")
    with ea.open(d / "a.duckdb") as store:
        rep = store.ingest(*_inputs())
        assert rep.rejected == 0, rep.problems[:5]
        counts = {t: store.count(t) for t in RECORD_TABLES}
    # SWE-Bench Pro holds 16 runs (7 of its 23 source runs are the same run twice)
    assert counts["experiments"] >= 80 and counts["episodes"] >= 25_000
    assert counts["measurements"] > 0
    return d


def test_jsonl_export_ingest_export_is_byte_identical(original: Path) -> None:
    first, second = original / "1.jsonl", original / "2.jsonl"
    with ea.open(original / "a.duckdb", read_only=True) as store:
        export_jsonl(store, first)
    lines = first.read_text(encoding="utf-8").splitlines()
    kinds = [json.loads(x) for x in lines[:1]] + [json.loads(lines[-1])]
    assert "agent" in kinds[0] and "benchmark" in kinds[1]  # experiments first, measurements last
    assert all(json.loads(x)["format_version"] == FORMAT_VERSION for x in lines[:50])
    with ea.open(original / "b.duckdb") as store:
        rep = store.ingest(first)
        assert rep.rejected == 0, rep.problems[:5]
        export_jsonl(store, second)
    assert first.read_bytes() == second.read_bytes()


def _rows(path: Path) -> list[tuple]:
    return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall()


def test_parquet_export_ingest_export_gives_the_same_rows(original: Path) -> None:
    one, two = original / "p1", original / "p2"
    with ea.open(original / "a.duckdb", read_only=True) as store:
        export_parquet(store, one)
    assert detect(one).name == "evalatlas-parquet"
    with ea.open(original / "c.duckdb") as store:
        rep = store.ingest(one)
        assert rep.rejected == 0, rep.problems[:5]
        export_parquet(store, two)
    for table in RECORD_TABLES:
        a, b = _rows(one / f"{table}.parquet"), _rows(two / f"{table}.parquet")
        assert len(a) > 0 and a == b, table
    # readable without evalatlas
    import pandas as pd

    df = pd.read_parquet(one / "episodes.parquet")
    assert "format_version" in df.columns and (df["format_version"] == FORMAT_VERSION).all()
    polars = pytest.importorskip("polars", reason="polars not installed: pandas and DuckDB "
                                 "were checked")
    assert polars.read_parquet(one / "experiments.parquet").height == len(
        _rows(one / "experiments.parquet"))


def test_every_fixture_folder_ingests_with_nothing_quarantined(original: Path) -> None:
    # the module fixture ingested every folder together (rejected == 0); here each folder
    # alone into a fresh store, as a new user would: something ingested, nothing rejected
    folders = _inputs()[1:]
    assert len(folders) >= 10, [p.name for p in folders]
    for folder in folders:
        with ea.open(original / f"fx-{folder.name}.duckdb") as store:
            rep = store.ingest(folder)
            assert rep.rejected == 0 and rep.problems == [], (folder.name, rep.problems[:3])
            assert rep.experiments > 0 and rep.episodes > 0, folder.name
    # frameworks/: the three Markdown comparison reports (the scenario specs beside them
    # are inputs, not results): 4 frameworks each, one episode per framework x question
    with ea.open(original / "fx-frameworks.duckdb", read_only=True) as store:
        assert store.count("experiments") == 12 and store.count("episodes") == 4 * (7 + 9 + 10)
