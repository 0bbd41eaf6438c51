"""One name per benchmark and per model: a small table, user-extendable.

Harnesses spell the same benchmark differently (Terminal-Bench runs with and without a
dataset name, ``swebench-verified`` vs ``SWE-bench Verified``) and leaderboards name
runs, not models (SWE-Bench Pro: ``claude-45sonnet-10132025``, ``Claude 4.5 Sonnet -
10132025``). Records keep the source's spelling (``extra["original_names"]``) and carry
the canonical one, so one benchmark is one group in ``summary --by benchmark``.

- :data:`BENCHMARKS`: canonical name -> aliases and the number of tasks of the full
  benchmark (used to show coverage, "tasks 51 / 500").
- :data:`MODELS`: canonical model -> regular expressions matched against a run or model
  label (lower case, separators ``_``/space as ``-``), first match wins.

Extend both with a JSON file named by ``$EVALATLAS_NAMES``:
``{"benchmarks": {"my-bench": {"aliases": ["mybench"], "tasks": 120}},
"models": {"my-model": ["^my-?model"]}}``; user entries come first.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

ENV_NAMES = "EVALATLAS_NAMES"

BENCHMARKS: dict[str, dict[str, Any]] = {
    "swe-bench-verified": {"tasks": 500, "aliases": [
        "swe-bench verified", "swebench-verified", "swe-bench_verified", "swebench verified",
        "princeton-nlp/swe-bench_verified", "swe-bench-verified"]},
    "swe-bench-lite": {"tasks": 300, "aliases": [
        "swe-bench lite", "swebench-lite", "princeton-nlp/swe-bench_lite"]},
    "swe-bench-pro": {"tasks": 731, "aliases": [
        "swe-bench pro", "swebench-pro", "swe-bench_pro", "scaleai/swe-bench_pro"]},
    # Terminal-Bench 1's leaderboard dataset; its harness omits the dataset name in some
    # single-run submissions (same 80 tasks)
    "terminal-bench-core": {"tasks": 80, "aliases": [
        "terminal-bench", "terminal-bench-core@0.1.1", "terminal-bench-core:0.1.1",
        "terminalbench", "tb-core"]},
    "tau-bench-airline": {"tasks": 50, "aliases": ["tau-bench airline", "taubench-airline"]},
    "tau-bench-retail": {"tasks": 115, "aliases": ["tau-bench retail", "taubench-retail"]},
}

MODELS: dict[str, list[str]] = {
    "claude-3-7-sonnet": [r"claude-?3[.-]?7-?sonnet", r"claude-?sonnet-?3[.-]7"],
    "claude-sonnet-4-5": [r"claude-?4[.-]?5-?sonnet", r"claude-?sonnet-?4[.-]5"],
    "claude-haiku-4-5": [r"claude-?4[.-]?5-?haiku", r"claude-?haiku-?4[.-]5"],
    "claude-opus-4-1": [r"claude-?opus-?4[.-]1", r"claude-?4[.-]?1-?opus"],
    "claude-sonnet-4": [r"claude-?4-?sonnet", r"claude-?sonnet-?4(?![.-]?5)"],
    "gpt-5-codex": [r"gpt-?5-?codex"],
    "gpt-5": [r"gpt-?5(?!\d)"],
    "gpt-4o": [r"gpt-?4o"],
    "gpt-oss": [r"gpt-?oss"],
    "gemini-2.5-pro": [r"gemini-?2[.-]5-?pro"],
    "kimi-k2": [r"kimi"],
    "glm-4.5": [r"glm-?4[.-]5"],
}


def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


@lru_cache(maxsize=4)
def _user_table(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{ENV_NAMES}={path}: expected a JSON object")
    return data


def _tables() -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    user = _user_table(os.environ.get(ENV_NAMES))
    return ({**(user.get("benchmarks") or {}), **BENCHMARKS},
            {**(user.get("models") or {}), **MODELS})


def canonical_benchmark(name: str | None) -> str | None:
    """The table's name for a benchmark spelling (unknown names: unchanged)."""
    if name is None:
        return None
    key = _key(name)
    benchmarks, _ = _tables()
    for canonical, entry in benchmarks.items():
        if key == canonical or key in {_key(a) for a in entry.get("aliases", [])}:
            return canonical
    return name


def benchmark_tasks(name: str | None) -> int | None:
    """Tasks of the full benchmark, when the table knows it."""
    if name is None:
        return None
    benchmarks, _ = _tables()
    entry = benchmarks.get(canonical_benchmark(name) or "")
    tasks = entry.get("tasks") if entry else None
    return int(tasks) if isinstance(tasks, int) else None


def model_from_label(label: str | None) -> str | None:
    """The canonical model a run or model label names (``Claude 4.5 Sonnet - 10132025``
    -> ``claude-sonnet-4-5``); None when no entry matches."""
    if not label:
        return None
    key = _key(label)
    _, models = _tables()
    for canonical, patterns in models.items():
        if any(re.search(p, key) for p in patterns):
            return canonical
    return None
