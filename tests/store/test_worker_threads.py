"""DuckDB's worker threads around a store's writes (``store/worker_threads.py``): a
writable store starts on one thread, writes stay on one, and the number before is back
at the next use of the connection outside a write, of the store or of a view of it."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb

from evalatlas.store.db import StoreConnection
from evalatlas.store.worker_threads import RESTORE_DEFAULT, WorkerThreads

DEFAULT = duckdb.connect().execute("SELECT current_setting('threads')").fetchall()[0][0]

EPISODES = "\n".join(
    f'{{"experiment_id": "e", "trajectory_id": "t{i}", '
    f'"task_id": "k{i % 5}", "reward": {i % 2}}}'
    for i in range(40)) + "\n"


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])


def test_an_ingest_into_a_new_store_never_leaves_one_thread(tmp_path: Path) -> None:
    """Connected, schema made and rows written on one thread, with no switch between:
    the restore to DuckDB's default is owed and paid by the first read."""
    from evalatlas.store.ingest import ingest_paths

    src = tmp_path / "runs.jsonl"
    src.write_text(EPISODES)
    with StoreConnection(tmp_path / "s.duckdb") as s:
        assert _threads(s._con) == 1 and s._threads.owed == RESTORE_DEFAULT
        rep = ingest_paths(s, [src])
        assert rep.episodes == 40
        assert _threads(s._con) == 1 and s._threads.owed == RESTORE_DEFAULT
        assert _threads(s.con) == DEFAULT  # the first use outside a write pays
        assert s._threads.owed is None
        assert s.count("episodes") == 40


def test_a_write_block_keeps_one_thread_for_every_use_inside_it(tmp_path: Path) -> None:
    """Inside a write block ``con`` pays nothing (nested blocks too); after it the number
    the user had set is owed, then restored."""
    with StoreConnection(tmp_path / "s.duckdb") as s:
        s.con.execute("SET threads = 3")
        with s.one_thread():
            assert _threads(s.con) == 1
            with s.one_thread():
                assert _threads(s.con) == 1
            assert _threads(s.con) == 1  # the inner block's end restores nothing
        assert s._threads.owed == "SET threads = 3"
        assert _threads(s.con) == 3 and s._threads.owed is None


def test_a_store_the_user_set_to_one_thread_stays_so(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as s:
        s.con.execute("SET threads = 1")
        with s.one_thread():
            pass
        assert s._threads.owed is None and _threads(s.con) == 1


def test_a_view_pays_what_a_write_left_owed(tmp_path: Path) -> None:
    """A cursor view shares the instance (one setting) and the owed restore: its first
    read restores the threads for both."""
    with StoreConnection(tmp_path / "s.duckdb") as s:
        view = s.cursor_view()
        try:
            assert view._threads is s._threads
            with s.one_thread():
                assert _threads(view.con) == 1  # a write is under way: no restore
            assert s._threads.owed is not None
            assert _threads(view.con) == DEFAULT and s._threads.owed is None
            assert _threads(s._con) == DEFAULT
        finally:
            view.close()


def test_asking_whether_a_store_is_closed_pays_nothing(tmp_path: Path) -> None:
    with StoreConnection(tmp_path / "s.duckdb") as s:
        assert not s.closed and repr(s).endswith("(open)>")
        assert s._threads.owed == RESTORE_DEFAULT and _threads(s._con) == 1


def test_read_only_and_closed_stores_owe_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    StoreConnection(db).close()
    with StoreConnection(db, read_only=True) as s:
        assert s._threads.owed is None and _threads(s.con) == DEFAULT
    s = StoreConnection(db)
    s.close()  # closing pays nothing (no worker started to be stopped again)
    assert s._threads.owed is None and s.closed


def test_a_payment_waits_for_the_write_blocks_of_other_threads() -> None:
    """``pay`` from a reader while another thread's write block runs leaves the restore
    owed; the block's end keeps it owed, and the next payment runs it once."""
    con = duckdb.connect()
    threads = WorkerThreads(RESTORE_DEFAULT)
    con.execute("SET threads = 1")
    inside, done = threading.Event(), threading.Event()

    def writer() -> None:
        with threads.single(con.cursor()):
            inside.set()
            done.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(10)
        threads.pay(con)
        assert threads.owed == RESTORE_DEFAULT and _threads(con) == 1
    finally:
        done.set()
        t.join(10)
    assert threads.depth == 0 and threads.owed == RESTORE_DEFAULT
    threads.pay(con)
    assert threads.owed is None and _threads(con) == DEFAULT
