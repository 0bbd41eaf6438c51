"""Load on ``evalatlas serve`` (issue 24), all on 127.0.0.1, bounded in count and time.

1. Submissions: ``--clients`` concurrent clients (threads, each its own ``ea.Client``
   and submitter token) each submit ``--files`` JSONL files of ``--episodes`` episodes
   (zstd-compressed by the client, as ``evalatlas submit`` does) to one server. Reported:
   wall time, episodes/s, submission latency p50/p99, the server's peak RSS (its
   ``VmHWM``), and a check that every episode is stored exactly once (the leaderboard's
   episode count per agent and the number of submissions). Baseline in the same run:
   ``evalatlas ingest`` of the same files into a fresh store (a subprocess; wall time).
2. Leaderboard: a store of ``--board-episodes`` episodes (one JSONL file ingested
   locally), served; the server computes the default leaderboard at start (reported:
   ``first_answer_s``, until the first GET is answered), then ``--readers`` concurrent
   clients each GET ``/v1/leaderboard`` ``--reads`` times, all starting together.
   Reported: p50/p99 and the server's CPU per request, with ``/healthz`` the same way as
   a reference in the same run; then one submission, and how long the first GET after it
   took (the previous answer, labelled stale) and until the recomputed answer was served.

Usage (the issue's full size)::

    .venv/bin/python benchmarks/bench_serve.py --clients 50 --files 20 --episodes 1000 \\
        --board-episodes 1000000 --readers 200 --reads 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
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
from measure import peak_kb

EVALATLAS = str(Path(sys.executable).with_name("evalatlas"))


def experiment(agent: str, n_tasks: int) -> str:
    return json.dumps({
        "experiment_id": agent, "experiment_name": agent, "timestamp": 1_763_000_000.0,
        "framework_version": "b-1", "framework_name": "bench-serve",
        "agent": {"name": agent, "config_type": "B", "config": {"name": agent},
                  "llm_model": "gpt-4o-mini", "framework_version": "b-1"},
        "benchmark_name": "loadbench", "benchmark_version": "1",
        "benchmark_subset": {"name": "loadbench", "n_tasks": n_tasks}})


def write_file(path: Path, agent: str, first: int, n: int, n_tasks: int, rng: random.Random
               ) -> None:
    """``n`` episodes of ``agent``: tasks ``first..first+n`` (distinct across files)."""
    lines = [experiment(agent, n_tasks)]
    for i in range(first, first + n):
        lines.append(json.dumps({
            "experiment_id": agent, "task_id": f"task-{i:07d}", "task_version_hash": "v1",
            "seed": 0, "split": "test", "reward": 1.0 if rng.random() < 0.4 else 0.0,
            "trajectory_id": f"task-{i:07d}_ep0", "attempt": 0, "status": "completed",
            "timestamp": 1_763_000_100.0, "n_steps": rng.randint(3, 40),
            "wall_time_s": round(rng.uniform(5, 300), 2),
            "usage": {"prompt_tokens": rng.randint(1000, 30000),
                      "completion_tokens": rng.randint(100, 3000), "n_llm_calls": 5,
                      "model": "gpt-4o-mini"}}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([EVALATLAS, "--db", str(db), "serve", "--port", str(port),
                             "--rate-limit", "off", "--access-log", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start")


def peak_rss_mb(pid: int) -> float:
    return peak_kb(pid) / 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def stop(proc: subprocess.Popen) -> int:
    proc.terminate()
    return proc.wait(60)


def submissions(work: Path, args: argparse.Namespace) -> dict:
    data = work / "files"
    data.mkdir()
    rng = random.Random(0)
    n_tasks = args.files * args.episodes
    files: dict[int, list[Path]] = {}
    for c in range(args.clients):
        files[c] = []
        for f in range(args.files):
            path = data / f"client{c:03d}-{f:03d}.jsonl"
            write_file(path, f"agent-{c:03d}", f * args.episodes, args.episodes, n_tasks, rng)
            files[c].append(path)
    total = args.clients * args.files * args.episodes

    local_db = work / "local.duckdb"
    t0 = time.perf_counter()
    subprocess.run([EVALATLAS, "--db", str(local_db), "ingest", str(data)], check=True,
                   capture_output=True)
    local_s = time.perf_counter() - t0

    db = work / "served.duckdb"
    tokens = [ea.serve.add_token(db, f"client{c:03d}", "submitter")
              for c in range(args.clients)]
    admin = ea.serve.add_token(db, "bench-admin", "admin")
    proc, url = start_server(db, work / "access.log")
    latencies: list[float] = []
    lock = threading.Lock()
    failures: list[str] = []

    def client(c: int) -> None:
        with ea.Client(url, tokens[c], timeout=600) as cl:
            for path in files[c]:
                t = time.perf_counter()
                try:
                    answer = cl.submit(path)
                    assert answer["episodes"] == args.episodes, answer
                except Exception as exc:  # counted, reported
                    failures.append(f"{path.name}: {exc}")
                with lock:
                    latencies.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        list(pool.map(client, range(args.clients)))
    served_s = time.perf_counter() - t0
    rss = peak_rss_mb(proc.pid)
    with ea.Client(url, admin) as cl:
        board = cl.leaderboard(fresh=True)  # every write committed before it
        n_submissions = len(cl.submissions()["rows"])
    stored = {r["agent"]: r["episodes"] for r in board["rows"]}
    exit_code = stop(proc)
    exactly_once = (n_submissions == args.clients * args.files
                    and sum(stored.values()) == total
                    and all(v == args.files * args.episodes for v in stored.values())
                    and len(stored) == args.clients)
    return {"episodes": total, "files": args.clients * args.files,
            "local_ingest_s": round(local_s, 2), "served_s": round(served_s, 2),
            "local_eps_per_s": round(total / local_s), "served_eps_per_s": round(
                total / served_s), "throughput_ratio": round(local_s / served_s, 2),
            "latency_p50_s": round(pct(latencies, 0.5), 3),
            "latency_p99_s": round(pct(latencies, 0.99), 3),
            "server_peak_rss_mb": round(rss), "exactly_once": exactly_once,
            "failures": failures[:5], "n_failures": len(failures),
            "submissions": n_submissions, "server_exit": exit_code}


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds the server process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def many_gets(url: str, headers: dict, path: str, readers: int, reads: int) -> list[float]:
    """``readers`` clients each GET ``path`` ``reads`` times, all starting together."""
    times: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(readers)

    def reader(_: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=300) as c:
            barrier.wait()  # all at once
            for _ in range(reads):
                t = time.perf_counter()
                r = c.get(path)
                assert r.status_code == 200, r.text
                with lock:
                    times.append(time.perf_counter() - t)

    with ThreadPoolExecutor(readers) as pool:
        list(pool.map(reader, range(readers)))
    return times


def leaderboard(work: Path, args: argparse.Namespace) -> dict:
    big = work / "board.jsonl"
    rng = random.Random(1)
    per_agent = args.board_episodes // 20
    with big.open("w", encoding="utf-8") as fh:
        for a in range(20):
            part = work / "part.jsonl"
            write_file(part, f"board-agent-{a:02d}", 0, per_agent, per_agent, rng)
            fh.write(part.read_text(encoding="utf-8"))
    db = work / "board.duckdb"
    subprocess.run([EVALATLAS, "--db", str(db), "ingest", str(big)], check=True,
                   capture_output=True)
    token = ea.serve.add_token(db, "reader", "reader")
    submitter = ea.serve.add_token(db, "late-submitter", "submitter")
    proc, url = start_server(db, work / "board-access.log")
    headers = {"Authorization": f"Bearer {token}"}
    # the default leaderboard is computed at start; the first GET waits for it
    t0 = time.perf_counter()
    assert httpx.get(url + "/v1/leaderboard", headers=headers, timeout=600).status_code == 200
    first = time.perf_counter() - t0
    cpu0 = server_cpu_s(proc.pid)
    times = many_gets(url, headers, "/v1/leaderboard", args.readers, args.reads)
    cpu_board = server_cpu_s(proc.pid) - cpu0
    cpu0 = server_cpu_s(proc.pid)  # reference in the same run: FastAPI's cheapest route
    health = many_gets(url, headers, "/healthz", args.readers, args.reads)
    cpu_health = server_cpu_s(proc.pid) - cpu0
    # a write: readers get the previous answer at once (labelled) until it is recomputed
    late = work / "late.jsonl"
    write_file(late, "late-agent", 0, 100, 100, rng)
    with ea.Client(url, submitter, timeout=600) as cl:
        cl.submit(late)
    t0 = time.perf_counter()
    after = httpx.get(url + "/v1/leaderboard", headers=headers, timeout=600)
    after_write_s = time.perf_counter() - t0
    stale_after_write = after.headers["x-evalatlas-stale"]
    while after.headers["x-evalatlas-stale"] == "true":
        time.sleep(0.2)
        after = httpx.get(url + "/v1/leaderboard", headers=headers, timeout=600)
    recomputed_s = time.perf_counter() - t0
    assert "late-agent" in {r["agent"] for r in after.json()["rows"]}
    rss = peak_rss_mb(proc.pid)
    stop(proc)
    n = len(times)
    return {"store_episodes": per_agent * 20, "requests": n,
            "first_answer_s": round(first, 3),
            "p50_s": round(statistics.median(times), 3), "p99_s": round(pct(times, 0.99), 3),
            "server_cpu_ms_per_request": round(cpu_board / n * 1000, 3),
            "healthz_p50_s": round(statistics.median(health), 3),
            "healthz_p99_s": round(pct(health, 0.99), 3),
            "healthz_server_cpu_ms_per_request": round(cpu_health / len(health) * 1000, 3),
            "first_get_after_write_s": round(after_write_s, 3),
            "first_get_after_write_stale": stale_after_write,
            "recomputed_after_write_s": round(recomputed_s, 3),
            "server_peak_rss_mb": round(rss)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--board-episodes", type=int, default=1_000_000)
    ap.add_argument("--readers", type=int, default=200)
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--skip", choices=("submissions", "leaderboard"), default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        out = {"args": vars(args), "cpus": os.cpu_count(),
               "load_before": os.getloadavg()[0]}
        if args.skip != "submissions":
            out["submissions"] = submissions(work, args)
            print(json.dumps(out["submissions"]), flush=True)
        if args.skip != "leaderboard":
            out["leaderboard"] = leaderboard(work, args)
            print(json.dumps(out["leaderboard"]), flush=True)
        out["load_after"] = os.getloadavg()[0]
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
