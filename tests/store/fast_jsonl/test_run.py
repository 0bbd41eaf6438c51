"""DuckDB's budget while the fast path runs: small for short lines, larger for long ones."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import evalatlas.store.fast_jsonl.run as run
from evalatlas.store.db import DEFAULT_MEMORY_LIMIT, ENV_MEMORY, StoreConnection
from evalatlas.store.ingest import ingest_paths


def test_budget_by_the_first_chunks_line_length() -> None:
    assert run.budget_mb(55_000_000, 61_440) == run.SHORT_MEMORY_LIMIT_MB  # ~900 B a line
    assert run.budget_mb(55_000_000, 14_000) == run.LONG_MEMORY_LIMIT_MB  # ~3.9 KB a line
    assert run.budget_mb(run.LONG_LINE_BYTES * 10 - 1, 10) == run.SHORT_MEMORY_LIMIT_MB
    assert run.budget_mb(run.LONG_LINE_BYTES * 10, 10) == run.LONG_MEMORY_LIMIT_MB
    assert run.budget_mb(0, 0) == run.LONG_MEMORY_LIMIT_MB


@pytest.mark.usefixtures("chunked_only")
@pytest.mark.parametrize("long_lines", [False, True])
def test_the_budget_is_set_from_the_first_chunk_and_restored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_lines: bool) -> None:
    monkeypatch.delenv(ENV_MEMORY, raising=False)
    text = "x" * (3000 if long_lines else 10)
    src = tmp_path / "e.jsonl"
    src.write_text("".join(json.dumps({
        "experiment_id": "e", "trajectory_id": f"t{i}", "task_id": "k", "success": True,
        "reward": 1.0, "task_description": text}) + "\n" for i in range(300)))
    seen: list[str] = []
    insert = run.FastJsonl.insert

    def spy(self: run.FastJsonl, prep: run.Prepared) -> None:
        insert(self, prep)
        seen.append(self.con.execute("SELECT current_setting('memory_limit')"
                                     ).fetchall()[0][0])

    monkeypatch.setattr(run.FastJsonl, "insert", spy)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [src], fast_min_bytes=0)
        assert (rep.episodes, rep.fast_path_chunks) == (300, 1)
        want = run.LONG_MEMORY_LIMIT_MB if long_lines else run.SHORT_MEMORY_LIMIT_MB
        limit = store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert seen == [_shown(f"{want}MB")]  # from the first chunk on
    assert limit == _shown(DEFAULT_MEMORY_LIMIT)  # restored after the ingest


def _shown(limit: str) -> str:
    """How DuckDB shows the memory limit ``limit`` (``192MB`` reads ``183.1 MiB``)."""
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{limit}'")
    return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
