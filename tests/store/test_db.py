"""The store connection's SQL functions (``store/db.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import evalatlas as ea
from evalatlas.pricing.names import normalise_model_name
from evalatlas.store.db import MODEL_KEY_SQL, StoreConnection

REPO = Path(__file__).resolve().parents[2]

# long spellings (> 12 bytes: DuckDB keeps such strings out of line, where duckdb 1.5.5's
# Arrow UDFs read them after they were freed, duckdb/duckdb#20606)
SPELLINGS = ["anthropic/claude-sonnet-4-20250514", "openai/neulab/claude-sonnet-4-20250514",
             "openai/gpt-5-2025-08-07", "google/gemini-2.5-pro-preview-06-05",
             "moonshotai/kimi-k2-instruct-0905", "openai/gpt-oss-120b", None]


def test_model_key_groups_every_spelling_once_with_intact_names():
    want: dict[str | None, int] = {}
    n = 28_000
    for i in range(n):
        name = SPELLINGS[i % len(SPELLINGS)]
        key = normalise_model_name(name) if name is not None else None
        want[key] = want.get(key, 0) + 1
    assert want["claude-sonnet-4-20250514"] == 2 * n // len(SPELLINGS)
    with StoreConnection(":memory:") as store:
        store.con.execute(
            "CREATE TEMP TABLE m AS SELECT list_extract(?, (i % ?)::INTEGER + 1) AS llm_model, "
            "i AS task FROM range(?) r(i)", [SPELLINGS, len(SPELLINGS), n])
        for _ in range(5):  # the freed-buffer failure showed in 9 of 10 runs
            rows = store.query(f"SELECT {MODEL_KEY_SQL}(llm_model) AS k, task, count(*) AS c "
                               "FROM m GROUP BY k, task ORDER BY k, task")
            got: dict[str | None, int] = {}
            for r in rows:
                got[r["k"]] = got.get(r["k"], 0) + r["c"]
            assert got == want


def test_summary_by_model_keys_are_intact_run_after_run(fixtures: Path, tmp_path: Path):
    """The real case: SWE-bench Pro's 11,575 episodes of 11 model spellings. With the Arrow
    UDF on duckdb 1.5.5, 9 of 10 in-process runs returned keys such as
    ``\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00onnet-4-5`` (or failed with a KeyError)."""
    db = tmp_path / "s.duckdb"
    with ea.open(db) as store:
        store.ingest(fixtures / "swebench-pro")
    with ea.open(db, read_only=True) as store:
        want = {normalise_model_name(m) for m in store.episodes()["llm_model"].dropna()}
        for _ in range(5):
            models = [r["model"] for r in ea.summary(store, "model").rows]
            assert set(models) == want, models


# --- opening and closing a file store (issue 27: the write path's fixed costs) -------------

_KILLED_AFTER_COMMIT = """
import os, sys
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths
store = StoreConnection(sys.argv[1])
ingest_paths(store, [sys.argv[2]])
store.con.execute("INSERT INTO meta VALUES ('after', 'the ingest')")  # in the log only
os._exit(0)  # a crash after the commits: no close, no checkpoint
"""


def _stored(db: Path) -> dict[str, int]:
    with StoreConnection(db, read_only=True) as s:
        return {t: s.count(t) for t in ("experiments", "episodes", "ingest_batches", "files")}


def test_close_leaves_the_store_in_its_file_and_a_kill_loses_no_commit(
        fixtures: Path, tmp_path: Path):
    """Closing a writer checkpoints its write-ahead log into the store file, even a small
    one (a store is one file to copy; keeping a small log to save the close's ~0.03 s was
    measured and not done, see BENCHMARKS.md "Adapters, third pass"); a process killed
    after its commits, before any close, loses nothing: DuckDB replays the log."""
    import os
    import subprocess
    import sys

    from evalatlas.store.ingest import ingest_paths

    src = fixtures / "tau-bench"
    closed, killed = tmp_path / "closed.duckdb", tmp_path / "killed.duckdb"
    with StoreConnection(closed) as s:
        ingest_paths(s, [src])
        view = s.cursor_view()  # a view's close leaves the writer's instance open
        view.close()
        assert s.count("episodes") == 200
    wal = Path(f"{closed}.wal")
    assert not wal.exists() or wal.stat().st_size == 0
    want = _stored(closed)
    assert want["episodes"] == 200 and want["ingest_batches"] >= 1
    subprocess.run([sys.executable, "-c", _KILLED_AFTER_COMMIT, str(killed), str(src)],
                   check=True, env={**os.environ})
    assert Path(f"{killed}.wal").stat().st_size > 0  # the last commit: in the log only
    assert _stored(killed) == want
    with StoreConnection(killed, read_only=True) as s:
        assert s.query("SELECT value FROM meta WHERE key = 'after'") == [
            {"value": "the ingest"}]


def test_an_ingests_last_batch_commits_into_the_store_file(fixtures: Path, tmp_path: Path):
    """The last batch of an ingest (and the input files it remembers, in the same
    transaction) is committed with a checkpoint: the rows are in the store file and the
    write-ahead log is empty before the store is closed (the close has nothing left to
    copy); earlier batches of a long ingest commit to the log as before."""
    from evalatlas.store.ingest import ingest_paths

    db = tmp_path / "s.duckdb"
    with StoreConnection(db) as s:
        real, asked = s.write_batch, []

        def spy(**kw):
            asked.append(kw["checkpoint"])
            return real(**kw)

        s.write_batch = spy  # type: ignore[method-assign]
        rep = ingest_paths(s, [fixtures / "swebench-verified"], batch_size=4000)
        assert asked == [False, False, True] and rep.batches == 3
        assert s.count("episodes") == 10_000
        wal = Path(f"{db}.wal")
        assert not wal.exists() or wal.stat().st_size == 0
        assert s.con.execute("SELECT current_setting('checkpoint_threshold')").fetchall() \
            != [("0 bytes",)]  # the setting is restored after the commit
    with StoreConnection(db, read_only=True) as s:
        assert s.count("episodes") == 10_000 and s.count("ingest_batches") == 3


def test_ingest_runs_single_threaded_and_restores_the_setting(fixtures: Path, tmp_path: Path):
    """An ingest's statements run with DuckDB's ``threads`` 1 (its worker threads cost more
    CPU than a batch's statements share) and the store's setting is back afterwards, an
    error inside the block included; the rows stored are the same either way."""
    import pytest

    from evalatlas.store.ingest import ingest_paths

    seen: list[int] = []
    with StoreConnection(tmp_path / "a.duckdb") as s:
        s.con.execute("SET threads = 3")
        real = s.write_batch

        def spy(**kw):
            seen.append(s.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
            return real(**kw)

        s.write_batch = spy  # type: ignore[method-assign]
        ingest_paths(s, [fixtures / "swebench-verified"])
        assert seen and set(seen) == {1}
        assert s.con.execute("SELECT current_setting('threads')").fetchall() == [(3,)]
        with pytest.raises(RuntimeError), s.one_thread():
            assert s.con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]
            raise RuntimeError("inside")
        assert s.con.execute("SELECT current_setting('threads')").fetchall() == [(3,)]
        one = s.query("SELECT count(*) AS n, sum(reward) AS r FROM episodes")
    with StoreConnection(tmp_path / "b.duckdb") as s:
        s.con.execute("SET threads = 1")
        ingest_paths(s, [fixtures / "swebench-verified"])
        assert s.query("SELECT count(*) AS n, sum(reward) AS r FROM episodes") == one
        assert s.con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]


def _budget_mib(store: StoreConnection) -> float:
    # current_setting shows e.g. "953.6 MiB" or "2.9 GiB"
    value, unit = store.con.execute(
        "SELECT current_setting('memory_limit')").fetchall()[0][0].split()
    return float(value) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]


def test_read_budget_is_larger_inside_the_block_and_restored_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalatlas.store import db as db_mod

    monkeypatch.delenv(db_mod.ENV_MEMORY, raising=False)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        before = _budget_mib(store)
        assert 900 < before < 1000  # the 1 GB default (953.6 MiB)
        with store.read_budget():
            inside = _budget_mib(store)
        ram_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20
        want = min(db_mod.READ_MEMORY_LIMIT_MIB, int(ram_mib * 0.4))
        assert abs(inside - want) <= want * 0.01
        assert _budget_mib(store) == before
    # the summary's scan reads within it and leaves the budget as it found it
    with ea.open(tmp_path / "s.duckdb") as store:
        store.ingest(REPO / "examples")
        before = _budget_mib(store)
        ea.summary(store)
        assert _budget_mib(store) == before


def test_read_budget_keeps_the_users_budget(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from evalatlas.store import db as db_mod

    monkeypatch.setenv(db_mod.ENV_MEMORY, "512MB")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        before = _budget_mib(store)
        assert 480 < before < 500  # 512 MB = 488.2 MiB
        with store.read_budget():
            assert _budget_mib(store) == before


def _spill(store: StoreConnection) -> None:
    """A table larger than a small budget: DuckDB writes its blocks to its spill folder."""
    store.con.execute("SET memory_limit = '48MB'")
    store.con.execute("CREATE TEMP TABLE big AS SELECT range AS i, md5(range::VARCHAR) AS s "
                      "FROM range(2000000)")


def test_each_store_spills_into_a_folder_of_its_own(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Two DuckDB instances in one folder shared DuckDB's default spill folder (``.tmp``
    there, or ``<file>.tmp``): the same file names, and the one that made the folder
    removed it at close, under the other's feet ("Could not read enough bytes from file
    .tmp/duckdb_temp_storage_..."; two summaries of one lake). Now each instance has its
    own, and closing one leaves the other's blocks readable."""
    monkeypatch.chdir(tmp_path)
    StoreConnection(tmp_path / "s.duckdb").close()
    first = StoreConnection(":memory:")
    second = StoreConnection(":memory:")
    readers = [StoreConnection(tmp_path / "s.duckdb", read_only=True) for _ in range(2)]
    folders = [s.con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
               for s in (first, second, *readers)]
    assert len(set(folders)) == 3  # two readers of a file in one process: one instance
    assert not any(Path(f).resolve().parent == tmp_path.resolve() and Path(f).name == ".tmp"
                   for f in folders)
    assert all(Path(f).name.startswith("s.duckdb.tmp-") for f in folders[2:])
    _spill(second)  # the second makes its folder first, then the first spills too
    _spill(first)
    assert Path(folders[1]).is_dir() and Path(folders[0]).is_dir()
    second.close()
    assert not Path(folders[1]).exists()  # DuckDB removes the folder it made
    assert first.con.execute("SELECT count(*), sum(length(s)) FROM big").fetchone() == (
        2_000_000, 64_000_000)
    first.close()
    for reader in readers:
        reader.close()
    assert not Path(folders[0]).exists() and not (tmp_path / ".tmp").exists()


def test_remembered_files_are_upserted_by_path_into_an_empty_table_or_not(
        tmp_path: Path) -> None:
    """The first files of a store go in by a plain INSERT (the table is empty), later
    ones replace the row of their path: one row per path, the newest values."""
    with StoreConnection(tmp_path / "s.duckdb") as store:
        store.remember_files([("/a", 1, 10, "h1"), ("/b", 2, 20, "h2")])
        store.remember_files([("/a", 3, 30, "h3"), ("/c", 4, 40, "h4")])
        rows = store.con.execute(
            "SELECT path, size, mtime_ns, sha256 FROM files ORDER BY path").fetchall()
    assert rows == [("/a", 3, 30, "h3"), ("/b", 2, 20, "h2"), ("/c", 4, 40, "h4")]
