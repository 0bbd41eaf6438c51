"""The DuckDB-native JSONL path stores exactly what the per-record path stores."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from evalatlas.pricing import fill_missing_cost
from evalatlas.records import UsageSummary
from evalatlas.store.db import StoreConnection
from evalatlas.store.export import iter_episodes
from evalatlas.store.ingest import ingest_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from synth import episode_dict


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _records(n: int = 300) -> list[dict]:
    rng = random.Random(3)
    out = []
    for i in range(n):
        r = episode_dict(i, rng, n_agents=3, n_tasks=50)
        if i % 3 == 0:  # no reported cost: must be priced from tokens
            del r["usage"]["total_cost_usd"]
        if i % 5 == 0:  # no model on the episode: the experiment's model applies
            del r["usage"]["model"]
            r["usage"].pop("total_cost_usd", None)
        if i % 7 == 0:
            r["scores"] = {"impl_rate": None, "judge": 3.0}
            r["findings"] = {"feasible": True, "outcome": "almost"}
        out.append(r)
    return out


def _experiment_line(eid: str, model: str) -> dict:
    return {"experiment_id": eid, "experiment_name": eid, "benchmark_name": "b",
            "benchmark_subset": {"name": "b", "n_tasks": 50},
            "agent": {"name": eid, "llm_model": model, "config": {"model": model}}}


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    episodes = _write(tmp_path / "episodes.jsonl", _records())
    exps = _write(tmp_path / "experiments.jsonl",
                  [_experiment_line(f"exp{i:04d}", "gpt-4o") for i in range(3)])
    return episodes, exps


def _stored(db: Path, exps: Path, episodes: Path, fast: bool) -> list:
    with StoreConnection(db) as store:
        ingest_paths(store, [exps], fast=False)
        rep = ingest_paths(store, [episodes], fast=fast)
        assert rep.fast_path_files == (1 if fast else 0), rep.fast_path_declined
        return list(iter_episodes(store))


def test_fast_and_exact_paths_store_the_same_records(tmp_path: Path, data) -> None:
    episodes, exps = data
    fast = _stored(tmp_path / "f.duckdb", exps, episodes, fast=True)
    exact = _stored(tmp_path / "e.duckdb", exps, episodes, fast=False)
    assert len(fast) == 300
    assert fast == exact
    computed = [e for e in fast if (e.usage.cost_source or "").startswith("computed: ")]
    assert computed, "costs were filled from pricing"


def test_vectorised_cost_fill_equals_fill_missing_cost(tmp_path: Path, data) -> None:
    episodes, exps = data
    with StoreConnection(tmp_path / "f.duckdb") as store:
        ingest_paths(store, [exps], fast=False)
        ingest_paths(store, [episodes], fast=True)
        rows = store.query("SELECT prompt_tokens, completion_tokens, cached_tokens, "
                           "cache_creation_tokens, llm_model, cost_usd FROM episodes "
                           "WHERE starts_with(cost_source, 'computed')")
    assert rows
    for r in rows:
        u = UsageSummary(prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
                         cached_tokens=r["cached_tokens"],
                         cache_creation_tokens=r["cache_creation_tokens"])
        assert fill_missing_cost(u, r["llm_model"]).total_cost_usd == pytest.approx(
            r["cost_usd"], rel=1e-12)


def test_late_experiment_record_fills_model_and_cost(tmp_path: Path, data) -> None:
    episodes, exps = data
    with StoreConnection(tmp_path / "f.duckdb") as store:
        ingest_paths(store, [episodes], fast=True)
        before = store.query("SELECT count(*) AS n FROM episodes WHERE llm_model IS NULL")[0]["n"]
        ingest_paths(store, [exps], fast=False)
        after = store.query("SELECT count(*) AS n FROM episodes WHERE llm_model IS NULL")[0]["n"]
        unpriced = store.query("SELECT count(*) AS n FROM episodes WHERE cost_usd IS NULL")
    assert before == 60 and after == 0
    assert unpriced[0]["n"] == 0


@pytest.mark.parametrize("mutate, reason, rejected", [
    (lambda r: r.update(rewrad=1), "'rewrad'", 1),
    (lambda r: r.update(score=r.pop("reward")), "'score'", 0),  # alias: valid, exact path
    (lambda r: r["usage"].update(_type="x"), "'_type' in usage", 0),  # dropped by exact path
    (lambda r: r.update(n_steps="many"), 'n_steps is VARCHAR', 1),
    (lambda r: r["usage"].update(prompt_tokens=-1), "negative value", 1),
    (lambda r: r.update(trajectory_id="../x"), "unsafe trajectory_id", 1),
    (lambda r: r.update(success=not r["success"]), "success contradicts reward", 1),
    (lambda r: r.update(status="weird"), "unknown status", 1),
    (lambda r: r.pop("task_id"), "missing required field", 1),
])
def test_anything_unclean_goes_through_the_exact_path(
    tmp_path: Path, mutate, reason: str, rejected: int
) -> None:
    recs = _records(20)
    mutate(recs[7])
    path = _write(tmp_path / "x.jsonl", recs)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True)
        assert rep.fast_path_files == 0
        assert reason in rep.fast_path_declined[0]
        # ... and the exact path then ingested the good ones and quarantined the bad one.
        assert (rep.episodes, rep.rejected) == (20 - rejected, rejected)
        assert store.count("episodes") == 20 - rejected


def test_blank_line_and_duplicates_decline(tmp_path: Path) -> None:
    recs = _records(10)
    p = tmp_path / "b.jsonl"
    p.write_text(json.dumps(recs[0]) + "\n\n" + "".join(json.dumps(r) + "\n" for r in recs[1:]))
    d = _write(tmp_path / "d.jsonl", [*recs, recs[3]])
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [p, d], fast=True)
    assert rep.fast_path_files == 0
    assert "blank lines" in rep.fast_path_declined[0]
    assert "duplicate trajectory_id" in rep.fast_path_declined[1]


def test_fast_path_replaces_episodes_stored_before(tmp_path: Path) -> None:
    """A changed file ingested again replaces its episodes (the delete runs because the
    store already held episodes); a fresh store skips the delete and stores the same."""
    recs = _records(40)
    path = _write(tmp_path / "e.jsonl", recs)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        first = ingest_paths(store, [path], fast=True)
        for r in recs[:10]:
            r["reward"], r["success"] = 1.0 - r["reward"], not r["success"]
        _write(path, recs)
        again = ingest_paths(store, [path], fast=True, force=True)
        rewards = dict(store.con.execute(
            "SELECT trajectory_id || '/' || experiment_id, reward FROM episodes").fetchall())
        assert store.count("episodes") == 40
    assert first.fast_path_files == again.fast_path_files == 1
    assert rewards == {f"{r['trajectory_id']}/{r['experiment_id']}": r["reward"] for r in recs}


def test_fast_path_restores_the_store_settings(tmp_path: Path, data) -> None:
    """The fast path lowers DuckDB's memory budget and raises the checkpoint threshold
    while it writes; both are the store's own again afterwards."""
    episodes, _ = data
    with StoreConnection(tmp_path / "s.duckdb") as store:
        def settings() -> list:
            return store.con.execute(
                "SELECT current_setting('memory_limit'), "
                "current_setting('checkpoint_threshold')").fetchall()

        before = settings()
        rep = ingest_paths(store, [episodes], fast=True)
        assert rep.fast_path_files == 1
        assert settings() == before


def test_key_hash_does_not_collide_on_regular_ids() -> None:
    """DuckDB's 64-bit ``hash(a, b)`` gives 96,000 values for these 100,000 keys; every
    collision would send a chunk through the slow exact path."""
    import duckdb

    from evalatlas.store.fast_jsonl import key_hash

    keys = ("SELECT 'exp0001' AS experiment_id, "
            "printf('task-%05d_c%dep%d', i // 50, (i // 10) % 5, i % 10) AS trajectory_id "
            "FROM range(100000) r(i)")
    con = duckdb.connect()
    weak, ours = con.execute(
        f"SELECT count(DISTINCT hash(experiment_id, trajectory_id)), "
        f"count(DISTINCT {key_hash()}) FROM ({keys})").fetchone()
    assert weak < 100_000  # the reason for key_hash
    assert ours == 100_000
    # and of the benchmark's shape, at 1M keys (50 experiments x 20,000 episodes)
    bench = ("SELECT printf('exp%04d', i % 50) AS experiment_id, "
             "printf('task-%05d_ep%d', (i // 50) % 2000, i // 100000) AS trajectory_id "
             "FROM range(1000000) r(i)")
    keys_1m, ours_1m = con.execute(
        f"SELECT count(DISTINCT (experiment_id, trajectory_id)), count(DISTINCT {key_hash()}) "
        f"FROM ({bench})").fetchone()
    assert keys_1m == ours_1m == 1_000_000


@pytest.mark.usefixtures("chunked_only")
def test_regular_ids_over_many_chunks_stay_on_the_fast_path(tmp_path: Path) -> None:
    """100,000 short episodes with ids shaped like the benchmark's, in 4 MiB chunks:
    every chunk commits on the fast path and every episode is stored once."""
    n = 100_000
    path = tmp_path / "regular.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "experiment_id": "exp0001", "task_id": f"task-{i // 50:05d}",
                "trajectory_id": f"task-{i // 50:05d}_c{(i // 10) % 5}ep{i % 10}",
                "reward": float(i % 2), "success": bool(i % 2),
                "extra": {"pad": "x" * 60}}) + "\n")
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True, fast_min_bytes=0, chunk_bytes=4 << 20)
        assert store.count("episodes") == n
    assert rep.fast_path_files == 1, rep.fast_path_declined
    assert rep.fast_path_chunks >= 3 and rep.rejected == 0


def _small_episodes(path: Path, n: int, **usage: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            rec = {"experiment_id": "e", "task_id": f"t{i % 100}", "trajectory_id": f"r{i}",
                   "reward": float(i % 2)}
            if usage:
                rec["usage"] = {**usage, "model": "gpt-4o"}
            fh.write(json.dumps(rec) + "\n")
    return path


@pytest.mark.usefixtures("chunked_only")
def test_groups_of_chunks_write_whole_row_groups(tmp_path: Path) -> None:
    """Two row groups and 10 rows, in 4 MiB chunks: each group of chunks is one batch and
    one DuckDB row group, written straight into the file (the WAL stays small: only the
    rows that go to the WAL are copied twice)."""
    from evalatlas.adapters.jsonl_stream import ROW_GROUP_LINES

    n = 2 * ROW_GROUP_LINES + 10
    path = _small_episodes(tmp_path / "e.jsonl", n)
    db = tmp_path / "s.duckdb"
    with StoreConnection(db) as store:
        rep = ingest_paths(store, [path], fast=True, chunk_bytes=4 << 20)
        batches = store.con.execute(
            "SELECT n_episodes FROM ingest_batches ORDER BY batch_id").fetchall()
        groups = store.con.execute(
            "SELECT max(start + count) - min(start) FROM pragma_storage_info('episodes') "
            "WHERE column_name = 'reward' GROUP BY row_group_id ORDER BY row_group_id"
        ).fetchall()
        wal = Path(str(db) + ".wal")
        wal_bytes = wal.stat().st_size if wal.exists() else 0
        assert store.count("episodes") == n
    assert rep.fast_path_chunks > 3 and not rep.fast_path_declined
    assert batches == groups == [(ROW_GROUP_LINES,), (ROW_GROUP_LINES,), (10,)]
    assert wal_bytes < 1 << 20

def _fast_and_exact(tmp_path: Path, path: Path, chunk_bytes: int
                    ) -> tuple[Any, list[Any], list[Any], list[int]]:
    """``path`` ingested by the fast path (chunks of ``chunk_bytes``) and by the exact
    path, each into a store of its own: the fast ingest's report, both stores' episodes
    by trajectory id, and the fast store's episodes per batch (batches with episodes,
    in order)."""
    with StoreConnection(tmp_path / "fast.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True, chunk_bytes=chunk_bytes)
        fast = sorted(iter_episodes(store), key=lambda e: e.trajectory_id)
        sizes = [b["n_episodes"] for b in store.query(
            "SELECT n_episodes FROM ingest_batches WHERE n_episodes > 0 ORDER BY batch_id")]
    with StoreConnection(tmp_path / "exact.duckdb") as store:
        ingest_paths(store, [path], fast=False)
        exact = sorted(iter_episodes(store), key=lambda e: e.trajectory_id)
    return rep, fast, exact, sizes



def _fail_the_second_group(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row groups of 1,024 lines, and the second group's write failing (its pricing
    raises a disk error); returns the batch ids the pricing was called with."""
    import duckdb

    from evalatlas.adapters import jsonl_stream
    from evalatlas.pricing import Pricing
    from evalatlas.store.fast_jsonl import commit

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 1024)
    real = commit.complete_batch
    calls: list[int] = []

    def failing(store: StoreConnection, batch_id: int, rows: list, pricing: Pricing) -> None:
        calls.append(batch_id)
        if len(calls) == 2:
            raise duckdb.IOException("disk full (test)")
        real(store, batch_id, rows, pricing)

    monkeypatch.setattr(commit, "complete_batch", failing)
    return calls


@pytest.mark.usefixtures("chunked_only")
def test_a_failed_group_write_is_rolled_back_and_redone_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When writing a group fails (here: pricing it), nothing of it stays; its chunks go
    through the exact path, and the store ends equal to an exact ingest."""
    calls = _fail_the_second_group(monkeypatch)
    path = _small_episodes(tmp_path / "e.jsonl", 5000, prompt_tokens=100,
                           completion_tokens=10)
    rep, fast, exact, sizes = _fast_and_exact(tmp_path, path, 40_000)
    assert len(calls) >= 3  # groups after the failed one take the fast path again
    declined = [d for d in rep.fast_path_declined if "disk full (test)" in d]
    assert len(declined) > 1  # every chunk of the failed group, each by its first line
    assert sizes[0] == 1024 and sum(sizes) == 5000
    assert fast == exact
    assert all(e.usage.total_cost_usd is not None for e in fast)


def test_no_staged_chunk_outlives_the_ingest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk's staged rows (an Arrow table registered on the store connection while
    its group is written) are unregistered once written, once their group's write
    failed, and when a chunk is sent to the exact path: after the ingest the connection
    holds no view of a staged chunk, and the store equals an exact ingest."""
    _fail_the_second_group(monkeypatch)
    records = [json.loads(line) for line in _small_episodes(
        tmp_path / "e.jsonl", 5000, prompt_tokens=100, completion_tokens=10).read_text()
        .splitlines()]
    records[4200]["trajectory_id"] = records[4100]["trajectory_id"]  # a declined chunk
    path = _write(tmp_path / "d.jsonl", records)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True, chunk_bytes=40_000)
        left = store.con.execute(
            "SELECT view_name FROM duckdb_views() WHERE starts_with(view_name, '_fast')"
        ).fetchall()
        stored = store.con.execute("SELECT count(*) FROM episodes").fetchall()[0][0]
    assert any("disk full (test)" in d for d in rep.fast_path_declined)
    assert any("duplicate trajectory_id" in d for d in rep.fast_path_declined)
    assert left == []
    assert stored == 4999 and rep.rejected == 1


def test_chunk_directories_of_killed_ingests_are_removed(tmp_path: Path) -> None:
    """A killed ingest leaves its chunk files behind; the next one removes them, but
    never a directory of a live process or one not named by the fast path."""
    import os
    import subprocess

    from evalatlas.store.fast_jsonl import remove_stale_chunk_dirs

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    dead = tmp_path / f"evalatlas-chunk-{done.pid}-x1"
    live = tmp_path / f"evalatlas-chunk-{os.getpid()}-x2"
    others = [tmp_path / "evalatlas-chunk-abc", tmp_path / "evalatlas-chunk-0-x3",
              tmp_path / "unrelated-1-x"]
    for d in (dead, live, *others):
        d.mkdir()
        (d / "chunk-0.jsonl").write_text("{}\n")
    assert remove_stale_chunk_dirs(str(tmp_path)) == [str(dead)]
    assert not dead.exists() and live.exists() and all(d.exists() for d in others)


@pytest.mark.usefixtures("chunked_only")
def test_a_failed_check_before_a_group_sends_only_that_chunk_to_the_exact_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DuckDB error in the duplicate check that admits a chunk to its group declines
    that chunk alone; the group it would have joined is still written."""
    import duckdb

    from evalatlas.adapters import jsonl_stream
    from evalatlas.store import fast_jsonl

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 1024)
    real = fast_jsonl.FastJsonl.insert
    calls = []

    def failing(self: fast_jsonl.FastJsonl, prep: fast_jsonl.Prepared) -> None:
        calls.append(prep.chunk.first_line)
        if len(calls) == 2:
            raise duckdb.OutOfMemoryException("no memory (test)")
        real(self, prep)

    monkeypatch.setattr(fast_jsonl.FastJsonl, "insert", failing)
    path = _small_episodes(tmp_path / "e.jsonl", 3000)
    rep, fast, exact, _ = _fast_and_exact(tmp_path, path, 40_000)
    assert [d for d in rep.fast_path_declined if "no memory (test)" in d] == [
        f"{path}:{calls[1]}: no memory (test)"]
    assert rep.fast_path_chunks == len(calls) - 1
    assert fast == exact and len(fast) == 3000


def _mixed_small(path: Path, n: int, every: int) -> Path:
    """``n`` usage-less episodes of experiments e0..e2, with the experiment record of
    one of them before every ``every`` episodes (as concatenated files have them)."""
    with path.open("w") as fh:
        for i in range(n):
            if i % every == 0:
                fh.write(json.dumps(_experiment_line(f"e{(i // every) % 3}",
                                                     f"model-{i // every}")) + "\n")
            fh.write(json.dumps({"experiment_id": f"e{i % 3}", "task_id": f"t{i % 100}",
                                 "trajectory_id": f"r{i}", "reward": float(i % 2)}) + "\n")
    return path


@pytest.mark.usefixtures("chunked_only")
def test_a_mixed_files_groups_still_fill_row_groups(tmp_path: Path) -> None:
    """Experiment records among the lines neither flush the open group nor leave it
    short of a row group (DuckDB then writes its rows through the WAL, or merges
    partial row groups at a checkpoint, compressing them again): each batch is exactly
    a row group, so is each stored row group, and every episode has its experiment's
    model (the last record of its experiment in the file, as in file order)."""
    from evalatlas.adapters.jsonl_stream import ROW_GROUP_LINES

    n = 3 * ROW_GROUP_LINES
    every = 20_000
    path = _mixed_small(tmp_path / "m.jsonl", n, every)
    with StoreConnection(tmp_path / "s.duckdb") as store:
        rep = ingest_paths(store, [path], fast=True, chunk_bytes=4 << 20)
        sizes = [r[0] for r in store.con.execute(
            "SELECT n_episodes FROM ingest_batches WHERE n_episodes > 0 "
            "ORDER BY batch_id").fetchall()]
        row_groups = store.con.execute(
            "SELECT sum(count) FROM pragma_storage_info('episodes') WHERE column_name = "
            "'reward' AND segment_type = 'DOUBLE' GROUP BY row_group_id ORDER BY row_group_id"
        ).fetchall()
        models = dict(store.con.execute(
            "SELECT experiment_id, list(DISTINCT llm_model) FROM episodes GROUP BY 1"
        ).fetchall())
        assert store.count("episodes") == n
    assert not rep.fast_path_declined and rep.experiments == n // every + 1
    assert rep.fast_path_chunks > 6  # groups of several chunks, some ending inside one
    assert sizes == [ROW_GROUP_LINES] * 3
    assert row_groups == [(ROW_GROUP_LINES,)] * 3
    last = {f"e{k % 3}": f"model-{k}" for k in range(n // every + 1)}
    assert models == {e: [m] for e, m in last.items()}


@pytest.mark.parametrize("way", ["whole", "chunked"])
def test_a_mixed_file_stores_what_the_exact_path_stores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str,
        request: pytest.FixtureRequest) -> None:
    """Small row groups, many chunks, experiment records in most of them: the same
    episodes, experiments and models as the exact path, in groups of several chunks
    (``chunked``), or in one statement with the experiment records written beside it
    (``whole``, the fast path's first try)."""
    from evalatlas.adapters import jsonl_stream

    if way == "chunked":
        request.getfixturevalue("chunked_only")

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 1024)
    path = _mixed_small(tmp_path / "m.jsonl", 6000, 700)
    stored = {}
    for fast in (True, False):
        with StoreConnection(tmp_path / f"{fast}.duckdb") as store:
            rep = ingest_paths(store, [path], fast=fast, fast_min_bytes=0,
                               chunk_bytes=20_000)
            stored[fast] = (sorted(iter_episodes(store), key=lambda e: e.trajectory_id),
                            store.query("SELECT * EXCLUDE (ingest_batch) FROM experiments "
                                        "ORDER BY experiment_id"),
                            store.query("SELECT llm_model, count(*) AS n FROM episodes "
                                        "GROUP BY 1 ORDER BY 1"))
            if fast and way == "whole":
                assert rep.fast_path_chunks == 1 and not rep.fast_path_declined
                assert store.query("SELECT sum(n_episodes) AS n FROM ingest_batches"
                                   ) == [{"n": 6000}]
            elif fast:
                assert rep.fast_path_chunks > 10 and not rep.fast_path_declined
                sizes = [r["n_episodes"] for r in store.query(
                    "SELECT n_episodes FROM ingest_batches WHERE n_episodes > 0 "
                    "ORDER BY batch_id")]
                assert set(sizes[:-1]) == {1024} and sum(sizes) == 6000, sizes
    assert stored[True] == stored[False]
    assert len(stored[True][0]) == 6000


@pytest.mark.usefixtures("chunked_only")
def test_a_failed_group_that_starts_inside_a_chunk_redoes_only_its_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mixed file's group may start with the rest of a chunk whose first rows the
    group before wrote; when writing it fails, only that rest (and its other chunks)
    takes the exact path: no episode is stored twice or reported as a duplicate of
    itself, and the store equals an exact ingest."""
    import duckdb

    from evalatlas.adapters import jsonl_stream
    from evalatlas.pricing import Pricing
    from evalatlas.store.fast_jsonl import commit

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 1024)
    real = commit.complete_batch
    calls = []

    def failing(store: StoreConnection, batch_id: int, rows: list, pricing: Pricing) -> None:
        if rows:  # an experiment's batch (the exact path)
            return real(store, batch_id, rows, pricing)
        calls.append(batch_id)
        if len(calls) == 2:
            raise duckdb.IOException("disk full (test)")
        return real(store, batch_id, rows, pricing)

    monkeypatch.setattr(commit, "complete_batch", failing)
    path = tmp_path / "m.jsonl"
    with path.open("w") as fh:
        for i in range(5000):
            if i % 300 == 0:
                fh.write(json.dumps(_experiment_line(f"e{i % 3}", "gpt-4o")) + "\n")
            fh.write(json.dumps({"experiment_id": f"e{i % 3}", "task_id": f"t{i % 100}",
                                 "trajectory_id": f"r{i}", "reward": float(i % 2),
                                 "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
                     + "\n")
    rep, fast, exact, sizes = _fast_and_exact(tmp_path, path, 20_000)
    lost = [d for d in rep.fast_path_declined if "disk full (test)" in d]
    firsts = [int(d.split(":")[1]) for d in lost]
    assert lost and rep.rejected == 0, rep.fast_path_declined
    # the first group wrote 1,024 episodes and the 4 experiment records among them
    # (lines 1-1028), so the failed one began inside a chunk: with the rest of it
    assert firsts[0] == 1029 and firsts[1] - firsts[0] < firsts[2] - firsts[1], firsts
    assert sizes[0] == 1024 and sum(sizes) == 5000
    assert fast == exact and len(fast) == 5000


@pytest.mark.parametrize("where", ["stored before", "same file"])
def test_a_reward_outside_a_declared_narrower_range_is_quarantined_as_exactly(
        tmp_path: Path, where: str) -> None:
    """An experiment that declares ``extra.reward_range = [0, 0.5]``: its episodes with a
    reward of 0.7 are quarantined by both paths (the fast path's own check is [0, 1]),
    the others stored, whether the experiment was stored by an earlier ingest or comes
    first in the same file."""
    exp = {**_experiment_line("e1", "gpt-4o"), "extra": {"reward_range": [0, 0.5]}}
    eps = [{"experiment_id": "e1", "task_id": f"t{i}", "trajectory_id": f"r{i}",
            "reward": 0.7 if i % 4 == 0 else 0.25} for i in range(40)]
    path = _write(tmp_path / "e.jsonl", ([exp] if where == "same file" else []) + eps)
    exps = _write(tmp_path / "x.jsonl", [exp])
    stored = {}
    for fast in (True, False):
        with StoreConnection(tmp_path / f"{fast}.duckdb") as store:
            if where == "stored before":
                ingest_paths(store, [exps], fast=False)
            rep = ingest_paths(store, [path], fast=fast, fast_min_bytes=0)
            stored[fast] = (sorted(iter_episodes(store), key=lambda e: e.trajectory_id),
                            store.query("SELECT line, record, field FROM quarantine "
                                        "ORDER BY line"))
            if fast:
                assert any("declared reward_range: 10" in d for d in rep.fast_path_declined)
    assert stored[True] == stored[False]
    assert len(stored[True][0]) == 30 and len(stored[True][1]) == 10
    assert {q["field"] for q in stored[True][1]} == {"reward"}
