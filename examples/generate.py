"""Generate the bundled example data set: 3 agents x 20 tasks x 3 attempts.

Deterministic (fixed seed), so the committed files are reproducible:

    python examples/generate.py            # rewrites examples/evallogs and examples/jsonl

Two agents are written as EvalLog directories (seed 002 layout), the third as a JSONL
file (one experiment record line, then one EpisodeRecord per line), so `evalatlas
ingest examples/` exercises both formats. Successes follow a one-parameter IRT model
(agent ability minus task difficulty), so agents really differ and tasks really vary in
difficulty; a few episodes time out or crash, and one agent reports tokens but no cost
(the store prices it from its model name).
"""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

from evalatlas.records import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    EvalLog,
    ExperimentRecord,
    UsageSummary,
    experiment_id_for,
    task_version_hash_for,
)
from evalatlas.records.evallog import record_json

HERE = Path(__file__).resolve().parent
SEED = 20261122
N_TASKS = 20
N_ATTEMPTS = 3
BENCHMARK = "toybench"

AGENTS = [
    # name, model, ability, $/1M input, $/1M output (None: cost not reported)
    ("react-gpt-4o", "gpt-4o", 0.8, 5.0, 15.0),
    ("planner-sonnet", "claude-sonnet-4", 1.4, 3.0, 15.0),
    ("tiny-mini", "gpt-4o-mini", -0.3, None, None),
]


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def build(rng: random.Random) -> list[EvalLog]:
    difficulties = [rng.gauss(0.0, 1.2) for _ in range(N_TASKS)]
    logs = []
    for name, model, ability, p_in, p_out in AGENTS:
        exp_name = f"{name}-{BENCHMARK}"
        out_dir = f"examples/evallogs/{exp_name}"
        agent = AgentInfo(
            name=name,
            config_type="ExampleAgentConfig",
            config={"name": name, "model": model, "temperature": 0.0, "max_steps": 30,
                    "api_key": "sk-example-not-a-real-key-000000000000"},
            llm_model=model,
            framework_version="example-1.0",
        )
        exp = ExperimentRecord(
            experiment_id=experiment_id_for(exp_name, out_dir),
            experiment_name=exp_name,
            timestamp=1_763_000_000.0,
            framework_version="example-1.0",
            framework_name="evalatlas-examples",
            agent=agent,
            benchmark_name=BENCHMARK,
            benchmark_version="1.0",
            benchmark_subset=BenchmarkSubset(name=BENCHMARK, n_tasks=N_TASKS),
            labels={"tier": {0.8: "T1", 1.4: "T2", -0.3: "T0"}[ability],
                    "family": model.split("-")[0]},
        )
        episodes = []
        for t, b in enumerate(difficulties):
            task_id = f"toy-{t:03d}"
            task_hash = task_version_hash_for({"task_id": task_id, "difficulty": round(b, 3)})
            for a in range(N_ATTEMPTS):
                roll = rng.random()
                status, error_type, error_message = "completed", None, None
                if roll < 0.04:
                    status, error_type = "timeout", "TimeoutError"
                    error_message = "step limit of 600 s"
                elif roll < 0.07:
                    status, error_type, error_message = "error", "ToolCrash", "browser died"
                success = status == "completed" and rng.random() < _sigmoid(ability - b)
                steps = rng.randint(4, 30)
                prompt = rng.randint(3_000, 40_000)
                completion = rng.randint(200, 3_000)
                cost = None
                if p_in is not None:
                    cost = round((prompt * p_in + completion * p_out) / 1e6, 6)
                episodes.append(EpisodeRecord(
                    experiment_id=exp.experiment_id,
                    task_id=task_id,
                    task_version_hash=task_hash,
                    seed=a,
                    split="test",
                    tool_names=["bash", "edit_file", "submit"],
                    reward=1.0 if success else 0.0,
                    error_type=error_type,
                    error_message=error_message,
                    n_steps=2 * steps + 1,
                    n_agent_steps=steps,
                    n_env_steps=steps + 1,
                    wall_time_s=round(rng.uniform(20, 400), 2),
                    usage=UsageSummary(prompt_tokens=prompt, completion_tokens=completion,
                                       total_cost_usd=cost, n_llm_calls=steps, model=model),
                    trajectory_id=f"{task_id}_ep{a}",
                    timestamp=1_763_000_100.0 + 1000 * t + 10 * a,
                    attempt=a,
                    status=status,
                ))
        logs.append(EvalLog(experiment=exp, episodes=episodes))
    return logs


def main() -> None:
    logs = build(random.Random(SEED))
    for sub in ("evallogs", "jsonl"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    for log in logs[:2]:
        log.save(HERE / "evallogs" / log.experiment.experiment_name)
    jsonl = HERE / "jsonl" / f"{logs[2].experiment.experiment_name}.jsonl"
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    lines = [record_json(logs[2].experiment)] + [record_json(ep) for ep in logs[2].episodes]
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    n = sum(len(log.episodes) for log in logs)
    print(f"wrote {len(logs)} experiments, {n} episodes under {HERE}")


if __name__ == "__main__":
    main()
