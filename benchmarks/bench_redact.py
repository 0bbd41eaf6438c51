"""Cost of redaction at ingest: the same file ingested with and without it.

Baseline in the same run: ingest with the redaction step replaced by a no-op. Exact path
(the columnar batch: :func:`evalatlas.store.redaction.arrow_row_gate` flags rows in
Arrow, :func:`~evalatlas.store.redaction.redact_rows` redacts those in Python; small
batches: ``redact_rows`` on every row) and fast path (the same gate and redaction over
each staged chunk, :func:`~evalatlas.store.redaction.redact_arrow`). The no-op is a gate
that flags nothing. Episodes carry free text (question, answer with "tokens" in it, an extra
dict) but no secret, the common case.

    python benchmarks/bench_redact.py --exact 50000 --fast 300000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import evalatlas.store.db as db_module
import evalatlas.store.redaction as redaction_module
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import ingest_paths


def write_episodes(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "experiment_id": "e", "task_id": f"t{i % 500}", "trajectory_id": f"a{i}",
                "reward": (i % 3) / 2,
                "input_text": f"Question {i}: what is the capital of France? Answer briefly.",
                "output_text": f"The answer is Paris, computed with {i} prompt tokens.",
                "usage": {"prompt_tokens": 100 + i % 7, "completion_tokens": 20,
                          "model": "gpt-4o-mini"},
                "extra": {"note": "ok", "max_tokens": 512}}) + "\n")


def _no_arrow_gate(rows: Any, columns: dict[str, str]) -> Any:
    return np.zeros(rows.num_rows, dtype=bool)


def ingest_seconds(src: Path, workdir: Path, *, fast: bool, redact: bool) -> float:
    """Seconds to ingest ``src`` into a new store; ``redact=False``: every redaction step
    (the row gate of both paths, and the small batches' Python pass) is a no-op."""
    saved = db_module.redact_rows, redaction_module.arrow_row_gate
    if not redact:
        db_module.redact_rows = lambda table, columns, types, rows, **_: rows
        redaction_module.arrow_row_gate = _no_arrow_gate  # both paths' gate
    store_path = workdir / f"s-{fast}-{redact}.duckdb"
    store_path.unlink(missing_ok=True)
    try:
        t0 = time.perf_counter()
        with StoreConnection(store_path) as store:
            ingest_paths(store, [src], fast=fast)
        return time.perf_counter() - t0
    finally:
        db_module.redact_rows, redaction_module.arrow_row_gate = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exact", type=int, default=50_000, help="episodes, exact path")
    ap.add_argument("--fast", type=int, default=300_000, help="episodes, fast path")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        warm = work / "warm.jsonl"  # imports and DuckDB's first start, outside the clock
        write_episodes(warm, 2_000)
        for fast in (False, True):
            ingest_seconds(warm, work, fast=fast, redact=True)
        for name, n, fast in (("exact", args.exact, False), ("fast", args.fast, True)):
            src = work / f"{name}.jsonl"
            write_episodes(src, n)
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.repeats):  # interleaved, so load drifts hit both alike
                for redact in (False, True):
                    times[redact].append(ingest_seconds(src, work, fast=fast, redact=redact))
            base, red = statistics.median(times[False]), statistics.median(times[True])
            print(f"{name:5s} path, {n:,} episodes: without redaction {base:.2f} s, "
                  f"with {red:.2f} s (median of {args.repeats}); ratio {red / base:.2f}x")


if __name__ == "__main__":
    main()
