"""Small, valid submission files for the serve tests (JSONL records, written directly)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def experiment_line(agent: str, benchmark: str = "servebench", n_tasks: int = 10
                    ) -> tuple[str, str]:
    """(experiment_id, the experiment record line) of ``agent`` on ``benchmark``."""
    exp_id = f"{agent}-{benchmark}"
    rec = {"experiment_id": exp_id, "experiment_name": exp_id, "timestamp": 1_763_000_000.0,
           "framework_version": "t-1", "framework_name": "serve-tests",
           "agent": {"name": agent, "config_type": "T", "config": {"name": agent},
                     "llm_model": "gpt-4o-mini", "framework_version": "t-1"},
           "benchmark_name": benchmark, "benchmark_version": "1",
           "benchmark_subset": {"name": benchmark, "n_tasks": n_tasks}}
    return exp_id, json.dumps(rec)


def episode_line(exp_id: str, task: int, attempt: int, success: bool) -> str:
    return json.dumps({
        "experiment_id": exp_id, "task_id": f"t-{task:04d}", "task_version_hash": "v1",
        "seed": attempt, "split": "test", "reward": 1.0 if success else 0.0,
        "trajectory_id": f"t-{task:04d}_ep{attempt}", "attempt": attempt,
        "status": "completed", "timestamp": 1_763_000_100.0 + task})


def write_jsonl(path: Path, agent: str, n_tasks: int = 10, attempts: int = 2, *,
                p: float = 0.5, seed: int = 0, bad: int = 0, first_task: int = 0,
                benchmark: str = "servebench") -> Path:
    """An experiment line, ``n_tasks * attempts`` episodes, and ``bad`` invalid lines."""
    rng = random.Random(seed)
    exp_id, exp = experiment_line(agent, benchmark, first_task + n_tasks)
    lines = [exp]
    for t in range(first_task, first_task + n_tasks):
        for a in range(attempts):
            lines.append(episode_line(exp_id, t, a, rng.random() < p))
    for i in range(bad):
        lines.append(json.dumps({"experiment_id": exp_id, "task_id": f"bad-{i}",
                                 "reward": "not a number", "trajectory_id": f"bad-{i}"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
