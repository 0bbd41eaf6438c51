"""Reading Inspect AI logs: evalatlas's adapter vs ``inspect_ai.analysis.samples_df()``.

Both in-process on the same ``.eval`` logs (interpreter start-up and imports excluded),
median of several runs each, the two readers interleaved run by run. The logs are
generated here with Inspect's ``mockllm`` model (no network): ``--samples`` samples x
``--epochs`` epochs x 2 scorers (``match``, ``includes``), zstd members as Inspect writes
them. Before timing, the per-sample scores (both scorers, as floats) and token counts of
the two readers are compared and must be identical.

Needs the ``bench`` extra (``pip install -e ".[bench]"``: inspect-ai). Run:

    python benchmarks/bench_inspect.py --samples 1000 --epochs 4 --runs 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def generate(log_dir: Path, samples: int, epochs: int) -> Path:
    """One log of the mockllm toy task (cached in ``log_dir``)."""
    existing = sorted(log_dir.glob("*.eval"))
    if existing:
        return existing[-1]
    import inspect_ai.model._model as model_mod
    import inspect_ai.model._tokens as tokens_mod

    # mockllm never calls a tokenizer, but Inspect's context accounting downloads one;
    # a length estimate keeps the run offline (token counts come from mockllm's usage)
    def count(text: str) -> int:
        return max(1, len(text) // 4)

    tokens_mod.count_text_tokens = count
    model_mod.count_text_tokens = count
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import generate as gen

    dataset = [Sample(input=f"question {i}", target="Default" if i % 3 else "nothing",
                      id=i) for i in range(samples)]
    task = Task(dataset=dataset, solver=gen(), scorer=[match(), includes()], epochs=epochs,
                name="bench_toy")
    eval(task, model="mockllm/model", log_dir=str(log_dir), display="none",
         max_connections=64, max_samples=256, log_samples=True)
    return sorted(log_dir.glob("*.eval"))[-1]


def evalatlas_rows(path: Path) -> dict[tuple[str, int], tuple]:
    from evalatlas.adapters.inspect import read_inspect
    from evalatlas.records.models import EpisodeRecord

    out = {}
    for item in read_inspect(path):
        if isinstance(item, EpisodeRecord):
            out[(item.task_id, item.attempt + 1)] = (
                item.scores.get("match"), item.scores.get("includes"),
                item.usage.prompt_tokens, item.usage.completion_tokens,
                item.usage.total_tokens)
    return out


def inspect_rows(path: Path) -> dict[tuple[str, int], tuple]:
    import json

    from inspect_ai.analysis import samples_df

    df = samples_df(str(path), quiet=True)
    out = {}
    to_float = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
    for r in df.to_dict("records"):
        usage = json.loads(r["model_usage"]) if isinstance(r["model_usage"], str) \
            else r["model_usage"]
        u = usage["mockllm/model"]
        out[(str(r["id"]), int(r["epoch"]))] = (
            to_float[r["score_match"]], to_float[r["score_includes"]],
            u["input_tokens"], u["output_tokens"], u["total_tokens"])
    return out


def timed(runs: int, path: Path) -> dict[str, tuple[float, float]]:
    """Median wall and median CPU seconds of each reader, the two interleaved run by run
    (ours, theirs, ours, ...) so that load from other processes falls on both alike. CPU:
    this process, all threads; steadier when the machine is shared."""
    readers = {"evalatlas": evalatlas_rows, "samples_df": inspect_rows}
    wall: dict[str, list[float]] = {k: [] for k in readers}
    cpu: dict[str, list[float]] = {k: [] for k in readers}
    for _ in range(runs):
        for name, fn in readers.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn(path)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in readers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--log-dir", type=Path, default=None,
                    help="Reuse/keep generated logs here (default: a temporary folder).")
    args = ap.parse_args()
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    path = generate(log_dir, args.samples, args.epochs)
    print(f"log: {path} ({path.stat().st_size / 1e6:.1f} MB, generated/reused in "
          f"{time.perf_counter() - t0:.0f} s)")
    ours, theirs = evalatlas_rows(path), inspect_rows(path)  # also warms both readers
    n = args.samples * args.epochs
    assert len(ours) == len(theirs) == n, (len(ours), len(theirs), n)
    assert ours == theirs, "per-sample scores or tokens differ"
    print(f"identical per-sample scores (match, includes) and tokens for {n:,} samples")
    times = timed(args.runs, path)
    t_ours, t_theirs = times["evalatlas"], times["samples_df"]
    load = os.getloadavg()
    print(f"{args.runs} interleaved runs each; load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} on {os.cpu_count()} cores")
    print(f"evalatlas read_inspect:            median wall {t_ours[0] * 1000:8.1f} ms, "
          f"CPU {t_ours[1] * 1000:8.1f} ms")
    print(f"inspect_ai.analysis.samples_df():  median wall {t_theirs[0] * 1000:8.1f} ms, "
          f"CPU {t_theirs[1] * 1000:8.1f} ms")
    print(f"ratio: wall {t_theirs[0] / t_ours[0]:.1f}x, CPU {t_theirs[1] / t_ours[1]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
