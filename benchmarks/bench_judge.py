"""Judge throughput and runner overhead.

    .venv/bin/python benchmarks/bench_judge.py [--calls 1000] [--delay 0.2] [--concurrency 16]
                                               [--episodes 300]

1. ``--calls`` answer-judge calls (distinct prompts, cache off) against the scripted local
   OpenAI-compatible server (tests/judge/fake_openai.py) answering after ``--delay``
   seconds, at most ``--concurrency`` in flight. Ideal time = calls x delay / concurrency;
   target: within 1.2x of it.
2. Runner overhead per episode: the no-op framework over a synthetic scenario of
   ``--episodes`` questions, concurrency 1, without and with the DuckDB store; overhead =
   (wall time - time inside query) / episodes. Reports medians of 3 repeats.
"""

from __future__ import annotations

import argparse
import asyncio
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

from fake_openai import FakeOpenAI  # noqa: E402

from evalatlas.adapters.frameworks import Document, Question, Scenario  # noqa: E402
from evalatlas.judge.answer import SourceText, judge_answer  # noqa: E402
from evalatlas.judge.client import JudgeClient, JudgeConfig  # noqa: E402
from evalatlas.runner.engine import RunConfig, run_scenario  # noqa: E402
from evalatlas.runner.examples.echo import NoopFramework  # noqa: E402
from evalatlas.runner.loading import FrameworkHandle  # noqa: E402
from evalatlas.store.db import StoreConnection  # noqa: E402


def _serve(queue: mp.Queue, stop: Any, delay: float) -> None:
    with FakeOpenAI(delay_s=delay) as srv:
        queue.put(srv.base_url)
        stop.wait()


def bench_judge(calls: int, delay: float, concurrency: int) -> dict[str, float]:
    """The server runs in its own process so it does not share the client's GIL."""
    os.environ.pop("OPENAI_API_KEY", None)
    queue: mp.Queue = mp.Queue()
    stop = mp.Event()
    proc = mp.Process(target=_serve, args=(queue, stop, delay), daemon=True)
    proc.start()
    try:
        base_url = queue.get(timeout=30)
        client = JudgeClient(JudgeConfig(model="bench", base_url=base_url, cache_dir=None,
                                         concurrency=concurrency, timeout_s=30))
        cpu_ms = [0.0]

        async def go() -> tuple[float, int]:
            try:
                cpu0 = time.process_time()
                t0 = time.perf_counter()
                results = await asyncio.gather(*(
                    judge_answer(client, f"question {i}?", "expected", f"answer {i}",
                                 [SourceText("doc.md", "text")]) for i in range(calls)))
                cpu_ms[0] = (time.process_time() - cpu0) / calls * 1000
                return time.perf_counter() - t0, sum(1 for r in results if r.ok)
            finally:
                await client.aclose()

        elapsed, ok = asyncio.run(go())
    finally:
        stop.set()
        proc.join(timeout=10)
    ideal = calls * delay / concurrency
    return {"elapsed_s": elapsed, "ideal_s": ideal, "ratio": elapsed / ideal, "ok": ok,
            "client_cpu_ms_per_call": cpu_ms[0]}


def _scenario(n: int, root: Path) -> Scenario:
    return Scenario(name="synthetic", root=root, modes={"baseline": {}},
                    documents=[Document(source="a.md", path=root / "a.md", text="alpha")],
                    questions=[Question(id=f"q{i}", text=f"question {i}",
                                        expected_answer="alpha", expected_sources=["a.md"])
                               for i in range(n)])


def bench_runner(episodes: int, with_store: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cfg = RunConfig(output_dir=root / "runs", skip_code_quality=True)
        handle = FrameworkHandle("noop", NoopFramework(), "python", None)

        async def go() -> float:
            if with_store:
                with StoreConnection(root / "b.duckdb") as store:
                    s = await run_scenario(_scenario(episodes, root), handle, cfg, store=store)
            else:
                s = await run_scenario(_scenario(episodes, root), handle, cfg)
            return s.overhead_s / s.done

        return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=300)
    a = ap.parse_args()
    j = bench_judge(a.calls, a.delay, a.concurrency)
    print(f"judge: {a.calls} calls, delay {a.delay}s, concurrency {a.concurrency}: "
          f"{j['elapsed_s']:.2f} s (ideal {j['ideal_s']:.2f} s, ratio {j['ratio']:.3f}), "
          f"{j['ok']} ok; client CPU {j['client_cpu_ms_per_call']:.2f} ms/call; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for store in (False, True):
        per = statistics.median(bench_runner(a.episodes, store) for _ in range(3))
        print(f"runner overhead ({'EvalLog dir + store' if store else 'EvalLog dir only'}): "
              f"{per * 1000:.2f} ms/episode (median of 3, {a.episodes} episodes)")


if __name__ == "__main__":
    main()
