"""``evalatlas serve --workers N`` on a PostgreSQL lake: submissions are staged in
parallel worker processes and committed one short lake transaction each (issue 24:
"with a lake, writers write in parallel"); the kept leaderboard follows the lake's
newest snapshot, whoever wrote it. A real uvicorn, a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from data import write_jsonl
from server import EXAMPLES, Server, cli

import evalatlas as ea

pytest.importorskip("duckdb_extension_ducklake")


def _pg_module():
    """tests/store/conftest.py's throwaway PostgreSQL server (initdb on a free port)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "store" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_staging_pg_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pg_lake(tmp_path_factory):
    pg = _pg_module()
    bindir = pg.postgres_bin()
    if bindir is None:
        if pg.in_ci():
            pytest.fail("PostgreSQL binaries not found; CI installs postgresql (.ci/run)")
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found")
    tmp = tmp_path_factory.mktemp("staged")
    cluster = pg.PgCluster(bindir)
    try:
        location = f"ducklake:postgres:{cluster.create_database('staged')}"
        env = {"EVALATLAS_TOKENS": str(tmp / "lake.tokens"),
               "EVALATLAS_DATA_PATH": str(tmp / "data")}
        (tmp / "data").mkdir()
        full_env = {**os.environ, **env}
        with ea.open(location, data_path=tmp / "data") as store:  # creates the lake
            from evalatlas.store.ingest import ingest_paths

            ingest_paths(store, [EXAMPLES])
        token = json.loads(cli(location, "tokens", "add", "sub", "--role", "submitter",
                               "--format", "json", env=full_env).stdout)["token"]
        yield tmp, location, env, token
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def served(pg_lake):
    tmp, location, env, token = pg_lake
    server = Server(tmp / "pg", "--rate-limit", "off", "--workers", "2", env=env,
                    location=location)
    try:
        yield server, tmp, location, env, token
    finally:
        assert server.stop() == 0, server.stderr.read_text()


def _stage_events(server: Server) -> dict[int, dict]:
    """The access log's ``stage`` (worker pid, started, ended) and status of each
    staged submission, by the line's number."""
    out = {}
    for i, line in enumerate(server.log.read_text().splitlines()):
        entry = json.loads(line)
        if "stage" in entry:
            out[i] = {"status": entry["status"], **entry["stage"]}
    return out


def _new_stage_events(server: Server, before: set[int], n: int) -> list[dict]:
    """The staged submissions' events not in ``before``, once ``n`` of them are in the
    access log (the server writes a request's line after it has sent the response, so a
    client can have its answer before the line is there), or those found in 60 s."""
    deadline = time.monotonic() + 60
    while True:
        events = [e for i, e in _stage_events(server).items() if i not in before]
        if len(events) >= n or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def _lake_counts(location: str, env: dict[str, str], agent: str) -> tuple[int, int]:
    """(episodes, distinct keys) of ``agent``'s experiment in the lake, read by this
    process (another DuckDB instance than the server's)."""
    with ea.open(location, read_only=True) as store:
        row = store.con.execute(
            "SELECT count(*), count(DISTINCT (e.experiment_id, e.trajectory_id)) FROM "
            "episodes e JOIN experiments x USING (experiment_id) WHERE x.agent_name = ?",
            [agent]).fetchone()
    return int(row[0]), int(row[1])


def _post(server: Server, token: str, path: Path):
    with server.client(token) as client:
        return client.post("/v1/submissions", params={"name": path.name},
                           content=path.read_bytes())


def test_two_submissions_are_parsed_at_once_and_each_episode_stored_once(served):
    server, tmp, location, env, token = served
    files = [write_jsonl(tmp / f"par{i}.jsonl", f"par{i}", n_tasks=750, attempts=2, bad=2,
                         seed=i) for i in range(2)]
    before = set(_stage_events(server))
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda p: _post(server, token, p), files))
    assert [a.status_code for a in answers] == [201, 201], [a.text for a in answers]
    assert [(a.json()["episodes"], a.json()["rejected"]) for a in answers] == [(1500, 2)] * 2
    events = _new_stage_events(server, before, 2)
    assert len(events) == 2 and {e["status"] for e in events} == {201}
    first, second = sorted(events, key=lambda e: e["started"])
    # recorded by the workers themselves: two processes, each parsing while the other did
    assert first["pid"] != second["pid"]
    assert second["started"] < first["ended"], events
    for i in range(2):
        assert _lake_counts(location, env, f"par{i}") == (1500, 1500)


def test_the_same_upload_twice_at_once_is_stored_once(served):
    server, tmp, location, env, token = served
    path = write_jsonl(tmp / "twice.jsonl", "twice", n_tasks=400, attempts=2)
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda p: _post(server, token, p), [path, path]))
    assert sorted(a.status_code for a in answers) == [200, 201], [a.text for a in answers]
    assert len({a.json()["submission_id"] for a in answers}) == 1
    assert _lake_counts(location, env, "twice") == (800, 800)
    with server.client(token) as client:
        mine = client.get("/v1/submissions").json()["rows"]
    assert [r["name"] for r in mine].count("twice.jsonl") == 1


def _agents(answer) -> dict[str, int]:
    return {r["agent"]: r["episodes"] for r in answer.json()["rows"]}


def _ingest_here(location: str, path: Path) -> None:
    """A write by another process than the server: this one (its own DuckDB instance,
    the lake's commit lock), as ``evalatlas ingest`` on another machine would."""
    from evalatlas.store.ingest import ingest_paths

    with ea.open(location) as store:
        ingest_paths(store, [path])


def test_the_leaderboard_follows_writes_by_another_process(served):
    server, tmp, location, _, token = served
    with server.client(token) as client:
        assert "outsider" not in _agents(client.get("/v1/leaderboard"))  # asked: kept
        _ingest_here(location, write_jsonl(tmp / "out.jsonl", "outsider", n_tasks=7,
                                           attempts=1))
        # without fresh: the kept answer is recomputed once the server sees the lake's
        # new snapshot (polled every second), not only after a write of its own
        deadline = time.monotonic() + 60
        while True:
            got = client.get("/v1/leaderboard")
            if _agents(got).get("outsider") == 7 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert _agents(got).get("outsider") == 7, got.headers
        with ea.open(location, read_only=True) as store:
            snapshot = store.snapshot
        assert int(got.headers["X-Evalatlas-Answer-Version"]) == got.json()["lake"]["snapshot"]
        assert got.json()["lake"]["snapshot"] == snapshot  # versions are lake snapshots
        # fresh=true reads the newest snapshot itself: another process's write is in it
        _ingest_here(location, write_jsonl(tmp / "out2.jsonl", "outsider2", n_tasks=3,
                                           attempts=1))
        fresh = client.get("/v1/leaderboard", params={"fresh": True})
        assert _agents(fresh).get("outsider2") == 3
        assert fresh.headers["X-Evalatlas-Stale"] == "false"


def test_a_staging_worker_that_dies_is_replaced(served):
    """A worker killed (the OOM killer, an operator) breaks Python's process pool; the
    server starts new workers, and submissions go on (one caught staging at that moment
    is answered 503, retried by the client)."""
    server, tmp, location, env, token = served
    workers = {p for p in _children(server.proc.pid) if _is_worker(p)}
    assert len(workers) == 2
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    time.sleep(1.0)
    first = _post(server, token, write_jsonl(tmp / "w1.jsonl", "after-kill-1", n_tasks=5))
    assert first.status_code in (201, 503), first.text
    again = _post(server, token, write_jsonl(tmp / "w2.jsonl", "after-kill-2", n_tasks=5))
    assert again.status_code == 201, again.text
    assert _lake_counts(location, env, "after-kill-2") == (10, 10)
    assert not workers & {p for p in _children(server.proc.pid) if _running(p)}


def _is_worker(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_kill_9_while_staging_leaves_the_lake_and_no_worker_behind(pg_lake):
    from evalatlas.serve.staging import STAGE_NAME

    tmp, location, env, token = pg_lake
    spool = tmp / "kill-spool"
    server = Server(tmp / "kill", "--rate-limit", "off", "--workers", "2", "--spool",
                    str(spool), env=env, location=location)
    try:
        assert _post(server, token, write_jsonl(tmp / "warm.jsonl", "warm", n_tasks=5)
                     ).status_code == 201  # the workers are up
        workers = _children(server.proc.pid)
        assert len(workers) >= 2  # the staging workers (and the spawn's tracker)
        with ea.open(location, read_only=True) as store:
            before = (store.snapshot, store.count("episodes"))
        big = write_jsonl(tmp / "big.jsonl", "killed", n_tasks=40000, attempts=1)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_post, server, token, big)
            # killed once a worker is staging it (its stage file exists): a fixed sleep
            # raced a fast machine, where the whole submission had committed by then
            deadline = time.monotonic() + 60
            while not any(spool.glob(f"**/{STAGE_NAME}")) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert any(spool.glob(f"**/{STAGE_NAME}")), "the upload was never staged"
            server.stop(signal.SIGKILL)
            with pytest.raises(httpx.TransportError):  # the connection dies with it
                pending.result(timeout=60)
    finally:
        if server.proc.poll() is None:
            server.stop(signal.SIGKILL)
    deadline = time.monotonic() + 20
    alive = set(workers)
    while alive and time.monotonic() < deadline:
        alive = {p for p in alive if _running(p)}
        time.sleep(0.2)
    assert not alive, f"staging workers {alive} outlived their server"
    with ea.open(location, read_only=True) as store:
        assert (store.snapshot, store.count("episodes")) == before
    assert any(spool.iterdir())  # the killed server's upload and stage are left ...
    restarted = Server(tmp / "kill", "--rate-limit", "off", "--spool", str(spool), env=env,
                       location=location)
    try:
        assert not any(spool.iterdir())  # ... and removed when it starts again
        after = write_jsonl(tmp / "after.jsonl", "after", n_tasks=5)
        assert _post(restarted, token, after).status_code == 201
    finally:
        assert restarted.stop() == 0
    assert _lake_counts(location, env, "killed") == (0, 0)
    assert _lake_counts(location, env, "after") == (10, 10)


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its dead parent's reaper) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
