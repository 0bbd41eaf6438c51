"""Investigator throughput, with the answer judge over the same episodes as the baseline.

    .venv/bin/python benchmarks/bench_investigate.py [--episodes 500] [--delay 0.2]
                                                     [--concurrency 16] [--repeats 3]

A fresh store of ``--episodes`` failed episodes (distinct tasks, 2,000-character agent
outputs) per repeat; ``evalatlas investigate``'s code (``ea.investigate``: selection,
prompt, validation, findings written in batches) against the scripted OpenAI-compatible
server (tests/judge/fake_openai.py, its own process on 127.0.0.1) answering after
``--delay`` seconds, at most ``--concurrency`` calls in flight, cache off; then, in the
same run, ``ea.judge_episodes`` (the answer judge) over the same episodes. Ideal time =
episodes x delay / concurrency. Prints medians of ``--repeats``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "judge"))

from fake_openai import FakeOpenAI, default_responder  # noqa: E402

import evalatlas as ea  # noqa: E402


def _responder(request: dict[str, Any]) -> str:
    if "investigator" in request["messages"][0]["content"]:
        return json.dumps({"difficulty": "medium", "feasible": True,
                           "failure_category": "wrong_answer",
                           "failure_root_cause": "The agent returned a wrong value.",
                           "evidence": "wrong"})
    return default_responder(request)


def _serve(queue: mp.Queue, stop: Any, delay: float) -> None:
    with FakeOpenAI(delay_s=delay, responder=_responder) as srv:
        queue.put(srv.base_url)
        stop.wait()


def _store(path: Path, n: int) -> None:
    exp = {"experiment_id": "bench", "experiment_name": "bench", "benchmark_name": "b",
           "agent": {"name": "a", "config": {}},
           "benchmark_subset": {"name": "b", "n_tasks": n}}
    lines = [json.dumps(exp)]
    for i in range(n):
        lines.append(json.dumps({
            "experiment_id": "bench", "task_id": f"t{i}", "trajectory_id": f"t{i}_0",
            "reward": 0.0, "task_description": f"Compute item {i}.",
            "input_text": f"Compute item {i}.", "expected_text": str(i),
            "output_text": (f"step {i} " * 250)[:2000]}))
    src = path.with_suffix(".jsonl")
    src.write_text("\n".join(lines) + "\n")
    with ea.open(path) as s:
        s.ingest(src)


def _timed(base_url: str, db: Path, concurrency: int, what: str) -> float:
    client = ea.JudgeClient(ea.JudgeConfig(model="bench", base_url=base_url, cache_dir=None,
                                           concurrency=concurrency, timeout_s=30))

    async def go() -> float:
        try:
            with ea.open(db) as store:
                t0 = time.perf_counter()
                if what == "investigate":
                    res = await ea.investigate(store, client)
                    assert res.rows[0]["not_investigated"] == 0, res.notes
                else:
                    counts = await ea.judge_episodes(store, client)
                    assert counts["failed"] == 0, counts
                return time.perf_counter() - t0
        finally:
            await client.aclose()

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=500)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    queue: mp.Queue = mp.Queue()
    stop = mp.Event()
    proc = mp.Process(target=_serve, args=(queue, stop, a.delay), daemon=True)
    proc.start()
    times: dict[str, list[float]] = {"investigate": [], "judge": []}
    try:
        base_url = queue.get(timeout=30)
        for _ in range(a.repeats):
            for what in ("investigate", "judge"):  # interleaved: the same load for both
                with tempfile.TemporaryDirectory() as tmp:
                    db = Path(tmp) / "b.duckdb"
                    _store(db, a.episodes)
                    times[what].append(_timed(base_url, db, a.concurrency, what))
    finally:
        stop.set()
        proc.join(timeout=10)
    ideal = a.episodes * a.delay / a.concurrency
    for what, ts in times.items():
        med = statistics.median(ts)
        print(f"{what}: {a.episodes} episodes, delay {a.delay}s, concurrency "
              f"{a.concurrency}: median {med:.2f} s of {len(ts)} (ideal {ideal:.2f} s, "
              f"ratio {med / ideal:.3f}); runs {', '.join(f'{t:.2f}' for t in ts)}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
