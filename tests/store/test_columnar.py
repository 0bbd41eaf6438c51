"""store/columnar.py and the ingest's columnar write of adapters' episodes: the stored rows
equal the exact path's (pydantic validation of every record, row tuples checked and
redacted one by one) on every fixture folder; located problems and redaction as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalatlas.adapters.registry import all_adapters
from evalatlas.records import validate
from evalatlas.records.models import EpisodeRecord
from evalatlas.store import db as store_db
from evalatlas.store import ingest as ingest_mod
from evalatlas.store.columnar import arrow_rows, batch_problems
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
from evalatlas.store.rows import _EPISODE_CELLS, _j, episode_row
from evalatlas.store.schema import EPISODE_COLUMNS

TABLES = {
    "experiments": "experiment_id",
    "episodes": "experiment_id, trajectory_id",
    "measurements": "experiment_id, trajectory_id, benchmark",
    "quarantine": "source_file, line, record, field, reason",
}


def test_cells_are_the_episodes_columns_in_order() -> None:
    assert [c for c, _, _ in _EPISODE_CELLS] == EPISODE_COLUMNS


def episode_columns(eps: list[EpisodeRecord], sources: list[str], batch: int
                    ) -> dict[str, list[Any]]:
    rows = [episode_row(ep, src, batch) for ep, src in zip(eps, sources, strict=True)]
    return dict(zip(EPISODE_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))


def test_episode_row_reads_each_cell_where_the_spec_says() -> None:
    ep = EpisodeRecord.model_validate({
        "experiment_id": "e", "task_id": "t", "trajectory_id": "x", "reward": 0.5,
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "model": "m"},
        "judge_usage": {"total_cost_usd": 0.1}, "scores": {"a": 1.0},
        "extra": {"k": [1]}, "tool_names": ["bash"], "attempt": 2,
        "verifier": {"ref": "r"}, "findings": {"difficulty": "hard", "x": 1}})
    row = episode_row(ep, "src", 7)
    for (column, where, name), cell in zip(_EPISODE_CELLS, row, strict=True):
        if where == "e":
            want = getattr(ep, name)
        elif where == "u":
            want = getattr(ep.usage, name)
        elif where == "j":
            want = _j(getattr(ep, name))
        else:
            want = "src" if where == "s" else 7
        assert cell == want, column
    assert row[EPISODE_COLUMNS.index("llm_model")] == "m"
    assert row[EPISODE_COLUMNS.index("total_tokens")] == 5


class _Counting:
    """Wraps EpisodeRecord's pydantic validator to count validations (model_validate
    and the constructor both go through it)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def validate_python(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner.validate_python(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _dump(store: StoreConnection) -> dict[str, list[tuple]]:
    out = {}
    for table, order in TABLES.items():
        described = [r[:2] for r in store.con.execute(f"DESCRIBE {table}").fetchall()
                     if r[0] not in ("ingest_batch", "rejected_at", "batch_id", "problem_key")]
        rows = store.con.execute(f"SELECT {', '.join(c for c, _ in described)} FROM {table} "
                                 f"ORDER BY {order}").fetchall()
        out[table] = [tuple(json.loads(v) if t == "JSON" and v is not None else v
                            for (_, t), v in zip(described, row, strict=True))
                      for row in rows]
    return out


def _ingest(db: Path, folder: Path) -> dict[str, list[tuple]]:
    with StoreConnection(db) as store:
        ingest_paths(store, [folder])
        return _dump(store)


def test_every_fixture_folder_stores_what_the_exact_path_stores(
        fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per fixture folder: ingested through the columnar path (every batch as Arrow, even
    small ones) with no pydantic validation of an episode, and through the exact path
    (every episode validated by pydantic, rows checked and redacted one by one): the
    same rows in every table."""
    folders = sorted(p for p in fixtures.iterdir() if p.is_dir())
    all_adapters()  # imported first: a module may build a template record at import
    counting = _Counting(EpisodeRecord.__pydantic_validator__)
    columnar = {}
    handed: list[str] = []  # sources whose episodes came as checked rows, one per row
    real_checked_row = ingest_mod.checked_row

    def checked_row(ep: Any, source: str | None, batch: int) -> tuple:
        handed.append(str(source))
        return real_checked_row(ep, source, batch)

    with monkeypatch.context() as m:
        m.setattr(ingest_mod, "SMALL_BATCH", 0)
        m.setattr(EpisodeRecord, "__pydantic_validator__", counting)
        m.setattr(ingest_mod, "checked_row", checked_row)
        for folder in folders:
            columnar[folder.name] = _ingest(tmp_path / f"c-{folder.name}.duckdb", folder)
    assert counting.calls == 0
    # the adapters that hand over rows (no EpisodeRecord built) did so for their folders
    assert sum("swebench-verified" in s for s in handed) == 10_000
    assert sum("terminal-bench" in s for s in handed) == 4_000
    with monkeypatch.context() as m:
        m.setattr(validate, "strict_episode", lambda data: None)  # always validate
        m.setattr(validate, "checked_episode", lambda data: None)  # (rows too)
        m.setattr(ingest_mod, "SMALL_BATCH", 10**9)  # row tuples, checked one by one
        m.setattr(ingest_mod, "arrow_rows", None)  # (never called)
        for folder in folders:
            exact = _ingest(tmp_path / f"x-{folder.name}.duckdb", folder)
            assert columnar[folder.name] == exact, folder.name
    total = sum(len(t["episodes"]) for t in columnar.values())
    assert total > 25_000
    assert len(columnar["swebench-verified"]["episodes"]) == 10_000
    assert len(columnar["terminal-bench"]["episodes"]) == 4_000


def _episode(i: int, **fields: Any) -> EpisodeRecord:
    return EpisodeRecord(experiment_id="e", task_id=f"t{i}", trajectory_id=f"t{i}",
                         reward=float(i % 2), **fields)


def test_a_value_no_column_holds_fails_the_conversion_and_is_named() -> None:
    eps = [_episode(0), _episode(1, seed=2**63), _episode(2, error_message="bad \ud800"),
           _episode(3, tool_names=["ok", "\udc00"]), _episode(4, attempt=2**31)]
    cols = episode_columns(eps, ["f"] * len(eps), 1)
    rows = list(zip(*cols.values(), strict=True))
    with StoreConnection(":memory:") as store:
        schema = store.arrow_schema("episodes", EPISODE_COLUMNS)
        for i, row in enumerate(rows):  # each bad row alone fails the one conversion
            assert (arrow_rows(schema, [row]) is None) == (i > 0), i
        assert arrow_rows(schema, rows) is None
        table = arrow_rows(schema, rows[:1])
        assert table is not None and table.num_rows == 1
        assert table.schema == schema and table.to_pylist()[0] == dict(
            zip(EPISODE_COLUMNS, rows[0], strict=True))
    bad = batch_problems("episodes", cols)
    assert sorted(bad) == [1, 2, 3, 4]
    assert bad[1][0] == "seed" and "does not fit the store's BIGINT" in bad[1][1]
    assert bad[2][0] == "error_message" and "lone surrogate" in bad[2][1]
    assert bad[3][0] == "tool_names"
    assert bad[4][0] == "attempt" and "INTEGER" in bad[4][1]


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("small", [0, 10**9])
def test_a_bad_row_in_a_big_batch_is_quarantined_with_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small: int) -> None:
    """The exact JSONL path (an adapter's path too): 600 episodes, one with a seed no
    BIGINT holds and one with a secret; the bad one is quarantined with file, line,
    record, field and reason, the 599 others stored, the secret redacted (Arrow batch
    and row tuples alike)."""
    monkeypatch.setattr(ingest_mod, "SMALL_BATCH", small)
    recs = [{"experiment_id": "e", "task_id": f"t{i}", "trajectory_id": f"t{i}",
             "reward": 1.0} for i in range(600)]
    recs[17]["seed"] = 2**64
    recs[40]["output_text"] = "the key is sk-proj-CANARYabcdefghijklmnop1234"
    recs[41]["extra"] = {"api_key": "hunter2hunter2"}
    src = _jsonl(tmp_path / "eps.jsonl", recs)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        report = ingest_paths(store, [src], fast=False)
        assert report.episodes == 599 and report.rejected == 1
        q = store.query("SELECT source_file, line, record, field, reason FROM quarantine")
        assert q == [{"source_file": str(src), "line": 18, "record": "t17",
                      "field": "seed", "reason": q[0]["reason"]}]
        assert "does not fit the store's BIGINT column" in q[0]["reason"]
        assert store.count("episodes") == 599
        out, extra = store.con.execute(
            "SELECT output_text, (SELECT extra FROM episodes WHERE trajectory_id = 't41') "
            "FROM episodes WHERE trajectory_id = 't40'").fetchone()
        assert "CANARY" not in out and "REDACTED" in out
        assert "hunter2" not in extra
        n, = store.con.execute("SELECT sum(n_episodes) FROM ingest_batches").fetchone()
        assert n == 599


def test_reingest_replaces_and_skips_as_before(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_db, "SMALL_BATCH", store_db.SMALL_BATCH)
    recs = [{"experiment_id": "e", "task_id": f"t{i}", "trajectory_id": f"t{i}",
             "reward": 0.0} for i in range(700)]
    src = _jsonl(tmp_path / "a.jsonl", recs)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        ingest_paths(store, [src], fast=False)
        again = ingest_paths(store, [src], fast=False)
        assert again.unchanged == [str(src)] and store.count("episodes") == 700
        forced = ingest_paths(store, [src], fast=False, force=True)
        assert forced.episodes == 700 and store.count("episodes") == 700


def test_text_repeats_counts_distinct_texts_per_column() -> None:
    import pyarrow as pa

    from evalatlas.store.columnar import text_repeats

    def table(**cols: list[Any]) -> pa.Table:
        return pa.table(cols)

    rows = 80
    assert text_repeats(table(a=[f"t{i % 10}" for i in range(rows)],  # 8 rows a value
                              n=[None] * rows, x=list(range(rows))))
    assert not text_repeats(table(a=[f"t{i % 11}" for i in range(rows)]))  # under 8
    assert not text_repeats(table(a=["same"] * rows, b=[f"id{i}" for i in range(rows)]))
    # a list column's items count, not its lists
    assert not text_repeats(table(a=[[f"t{i}", "bash"] for i in range(rows)]))
    assert text_repeats(table(a=[["bash", "python"] for _ in range(rows)]))
    assert not text_repeats(table(a=pa.array([], pa.string())))


def test_a_commit_without_fsst_stores_the_same_segments_where_texts_repeat(
        fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SWE-bench Verified batch (500 instance ids x 20 systems) is committed without
    FSST's analysis, and its store is what the commit with it makes: the same
    compression for every segment of every table (so FSST was not chosen anyway; the
    file's size is not compared: DuckDB's block allocation varies by a block from run
    to run); Terminal-Bench's batch (a distinct id per trial) keeps it."""
    import duckdb

    from evalatlas.store import columnar

    asked: list[bool] = []
    real = store_db.StoreConnection._commit_checkpointed

    def commit(self: StoreConnection, *, fsst: bool = True) -> None:
        asked.append(fsst)
        real(self, fsst=fsst)

    monkeypatch.setattr(store_db.StoreConnection, "_commit_checkpointed", commit)

    def segments(path: Path) -> list[tuple]:
        con = duckdb.connect(str(path), read_only=True)
        try:
            return [(t, *r) for t in TABLES for r in con.execute(
                "SELECT column_name, segment_type, compression, count(*) FROM "
                f"pragma_storage_info('{t}') GROUP BY ALL ORDER BY ALL").fetchall()]
        finally:
            con.close()

    folder = fixtures / "swebench-verified"
    _ingest(tmp_path / "without.duckdb", folder)
    assert asked == [False]
    monkeypatch.setattr(store_db, "text_repeats", lambda table: False)
    _ingest(tmp_path / "with.duckdb", folder)
    assert asked == [False, True]
    without, with_ = segments(tmp_path / "without.duckdb"), segments(tmp_path / "with.duckdb")
    assert without == with_
    assert not any("fsst" in str(r[3]).lower() for r in with_)
    monkeypatch.setattr(store_db, "text_repeats", columnar.text_repeats)
    _ingest(tmp_path / "tb.duckdb", fixtures / "terminal-bench")
    assert asked[-1] is True


def test_the_models_update_is_skipped_only_on_a_store_without_records(
        fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new store's first columnar batch has its episodes' models filled before the
    insert by the completion step's rule, so the step's UPDATE is skipped there (the
    rows equal the exact path's: test above); once the store holds records it runs
    (an episode of an experiment stored earlier gets that experiment's model there)."""
    from evalatlas.store import costs

    calls: list[int] = []
    real = costs._fill_models

    def fill(store: Any, scope: str, params: list[object]) -> None:
        calls.append(params[0])  # type: ignore[arg-type]  # the batch id
        real(store, scope, params)

    monkeypatch.setattr(costs, "_fill_models", fill)
    monkeypatch.setattr(ingest_mod, "SMALL_BATCH", 0)  # every batch as Arrow
    path = tmp_path / "s.duckdb"
    _ingest(path, fixtures / "swebench-verified")
    assert calls == []
    _ingest(path, fixtures / "swebench-java-verified")
    assert len(calls) == 1
    with StoreConnection(path, read_only=True) as store:
        filled, unfilled = store.con.execute(
            "SELECT count(*) FILTER (e.llm_model = x.llm_model), "
            "count(*) FILTER (e.llm_model IS DISTINCT FROM x.llm_model) FROM episodes e "
            "JOIN experiments x USING (experiment_id) "
            "WHERE e.usage_model IS NULL AND x.llm_model IS NOT NULL").fetchone()
    assert filled >= 10_000
    assert unfilled == 0
