"""Submissions to ``evalatlas serve`` on a PostgreSQL-catalog lake: ``--workers 1`` vs
``--workers N`` in the same run (issue 24: "with a lake, writers write in parallel").

For each setting, a fresh lake (its own database on one throwaway PostgreSQL server, the
tests' helper) and a fresh server; ``--clients`` concurrent clients (threads, one
``ea.Client`` and submitter token each) each submit ``--files`` JSONL files of
``--episodes`` episodes. Reported per setting: wall seconds, episodes/s, submission
latency p50/p99, CPU seconds of the server and its staging workers, the mean seconds a
submission spent staging (parsing, outside the lake's lock), committing (inside it)
and answering (the whole request), the most submissions that were staging at one moment
(from the workers' own start/end times in the access log), and a check that every
episode is stored once (the lake's ``count(*)`` and distinct keys). The load average is
printed before and after.

Usage (a few minutes on a quiet 2-core machine)::

    .venv/bin/python benchmarks/bench_serve_lake.py --clients 8 --files 5 --episodes 1000 \\
        --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

import evalatlas as ea

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_serve import free_port, pct, write_file  # noqa: E402
from pg_cluster import tests_pg_helpers  # noqa: E402

EVALATLAS = str(Path(sys.executable).with_name("evalatlas"))


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children (the staging workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most intervals open at one moment."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    best = now = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def run(setting: int, files: dict[int, list[Path]], cluster, work: Path,
        args: argparse.Namespace) -> dict:
    conninfo = cluster.create_database(f"serve_w{setting}_{int(time.time())}")
    location = f"ducklake:postgres:{conninfo}"
    data = work / f"data-{setting}"
    data.mkdir()
    env = {**os.environ, "EVALATLAS_TOKENS": str(work / f"tokens-{setting}"),
           "EVALATLAS_DATA_PATH": str(data)}
    ea.open(location, data_path=data).close()  # the lake, empty
    os.environ["EVALATLAS_TOKENS"] = env["EVALATLAS_TOKENS"]
    tokens = [ea.serve.add_token(location, f"client{c:03d}", "submitter")
              for c in range(args.clients)]
    log = work / f"access-{setting}.log"
    port = free_port()
    proc = subprocess.Popen([EVALATLAS, "--db", location, "serve", "--port", str(port),
                             "--rate-limit", "off", "--workers", str(setting),
                             "--access-log", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("server did not start")
        time.sleep(0.2)
    time.sleep(2.0)  # the default leaderboard computed at start is not the figure
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        with ea.Client(url, tokens[c], timeout=900) as cl:
            for path in files[c]:
                t = time.perf_counter()
                try:
                    answer = cl.submit(path)
                    assert answer["episodes"] == args.episodes, answer
                except Exception as exc:  # counted, reported
                    failures.append(f"{path.name}: {exc}")
                with lock:
                    latencies.append(time.perf_counter() - t)

    cpu0 = cpu_s(proc.pid)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(client, range(args.clients)))
    wall = time.perf_counter() - t0
    cpu = cpu_s(proc.pid) - cpu0
    proc.terminate()
    exit_code = proc.wait(120)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    staged = [e for e in entries if "stage" in e]
    spans = [(e["stage"]["started"], e["stage"]["ended"]) for e in staged]
    total = args.clients * args.files * args.episodes
    with ea.open(location, read_only=True) as store:
        n, keys = store.con.execute(
            "SELECT count(*), count(DISTINCT (experiment_id, trajectory_id)) FROM episodes"
        ).fetchone()
    return {"workers": setting, "episodes": total, "wall_s": round(wall, 2),
            "episodes_per_s": round(total / wall), "server_cpu_s": round(cpu, 1),
            "latency_p50_s": round(pct(latencies, 0.5), 3),
            "latency_p99_s": round(pct(latencies, 0.99), 3),
            "mean_staging_s": round(statistics.mean(e - s for s, e in spans), 3),
            "mean_commit_s": round(statistics.mean(
                e["stage"]["commit_s"] for e in staged if e["stage"]["commit_s"] is not None), 3),
            "mean_request_s": round(statistics.mean(e["duration_ms"] for e in staged) / 1000,
                                    3),
            "most_staging_at_once": most_at_once(spans),
            "staging_pids": len({e["stage"]["pid"] for e in staged}),
            "exactly_once": n == keys == total, "n_failures": len(failures),
            "failures": failures[:3], "server_exit": exit_code}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--files", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2, help="the parallel setting")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-serve-lake-"))
    mod = tests_pg_helpers()
    cluster = mod.PgCluster(mod.postgres_bin())
    try:
        rng = random.Random(0)
        files: dict[int, list[Path]] = {}
        (work / "files").mkdir()
        for c in range(args.clients):
            files[c] = []
            for f in range(args.files):
                path = work / "files" / f"client{c:03d}-{f:03d}.jsonl"
                write_file(path, f"agent-{c:03d}", f * args.episodes, args.episodes,
                           args.files * args.episodes, rng)
                files[c].append(path)
        out: dict = {"args": vars(args), "cpus": os.cpu_count(),
                     "load_before": round(os.getloadavg()[0], 1), "runs": []}
        for setting in (1, args.workers):
            out["runs"].append(run(setting, files, cluster, work, args))
            print(json.dumps(out["runs"][-1]), flush=True)
        out["load_after"] = round(os.getloadavg()[0], 1)
        one, many = out["runs"]
        out["speedup"] = round(one["wall_s"] / many["wall_s"], 2)
        print(json.dumps(out, indent=2))
    finally:
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
