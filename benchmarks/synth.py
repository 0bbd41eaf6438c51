"""Synthetic episode records of realistic size (~1 KB each: usage, labels, tools)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def episode_dict(i: int, rng: random.Random, n_agents: int = 50, n_tasks: int = 2000) -> dict:
    agent = i % n_agents
    task = (i // n_agents) % n_tasks
    attempt = i // (n_agents * n_tasks)
    reward = 1.0 if rng.random() < 0.5 else 0.0
    prompt = rng.randint(1000, 90000)
    completion = rng.randint(100, 9000)
    return {
        "experiment_id": f"exp{agent:04d}",
        "task_id": f"task-{task:05d}",
        "task_version_hash": f"{task:064x}",
        "seed": attempt,
        "split": "test",
        "task_description": "Fix the failing test in the repository and make the build pass.",
        "tool_names": ["bash", "edit_file", "view_file", "search", "submit"],
        "success": reward > 0,
        "reward": reward,
        "error_type": "TimeoutError" if rng.random() < 0.03 else None,
        "n_steps": 41,
        "n_agent_steps": 20,
        "n_env_steps": 21,
        "wall_time_s": round(rng.uniform(10, 900), 3),
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion, "cached_tokens": prompt // 3,
                  "cache_creation_tokens": 0, "total_cost_usd": round(prompt * 3e-6, 6),
                  "n_llm_calls": 20, "model": "claude-sonnet-4"},
        "trajectory_id": f"task-{task:05d}_ep{attempt}",
        "timestamp": 1763000000.0 + i,
        "verifier": None,
        "findings": None,
        "attempt": attempt,
        "status": "completed",
        "scores": {"impl_rate": round(rng.random(), 4)},
        "extra": {"harness": "synthetic", "host": f"worker-{agent % 8}"},
    }


def write_jsonl(path: Path, n: int, seed: int = 0, **kw: int) -> Path:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(episode_dict(i, rng, **kw)) + "\n")
    return path
