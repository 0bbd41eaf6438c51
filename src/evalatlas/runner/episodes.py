"""Records of a framework run, following the framework-comparison episode convention.

One :class:`ExperimentRecord` per framework x scenario x mode; one
:class:`EpisodeRecord` per question x run (``trajectory_id = f"{qid}__run{run}"``).

Reward: :func:`evalatlas.metrics.outcomes.reward_from_correctness` (the 1-5 judge scale
mapped to 0-1 and clamped there, so success means correctness > 1) when a correctness
score exists; ``0.0`` for timeouts and errors (the seed scores a timed-out question 0);
``None`` (an unknown outcome, not a failure) with ``extra["reward_missing"] = True`` when
the judge failed or no judge ran. Metrics read
``scores["correctness"]`` (None-aware).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from evalatlas.adapters.frameworks import Scenario, trajectory_id_for
from evalatlas.metrics.outcomes import reward_from_correctness
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
    UsageSummary,
)


def experiment_for(
    scenario: Scenario, framework: str, mode: str, run_dir: Path, *,
    model: str | None, settings: dict[str, Any],
) -> ExperimentRecord:
    """The experiment record of one framework x scenario x mode."""
    name = f"{framework}/{scenario.name}/{mode}"
    return ExperimentRecord(
        experiment_id=experiment_id_for(name, str(run_dir)),
        experiment_name=name,
        timestamp=time.time(),
        framework_name="evalatlas-runner",
        agent=AgentInfo(name=framework, config={"framework": framework, "mode": mode,
                                                **settings}, llm_model=model),
        benchmark_name=scenario.name,
        benchmark_version=scenario.version,
        benchmark_subset=BenchmarkSubset(name=scenario.name, n_tasks=len(scenario.questions)),
        labels={"framework": framework, "scenario": scenario.name, "mode": mode,
                "profile": scenario.profile},
        extra={"scenario_type": scenario.scenario_type},
    )


def episode_for(
    experiment_id: str,
    *,
    question_id: str,
    run: int,
    question: str,
    expected: str | None,
    expected_sources: list[str],
    status: str,
    answer: str | None,
    sources: list[str] | None,
    wall_time_s: float,
    usage: UsageSummary | None,
    judge_usage: UsageSummary | None,
    scores: dict[str, float | None],
    error_type: str | None = None,
    error_message: str | None = None,
    extra: dict[str, Any] | None = None,
) -> EpisodeRecord:
    """One episode; reward from ``scores["correctness"]`` as the module docstring says."""
    extra = dict(extra or {})
    reward = reward_from_correctness(scores.get("correctness")) if status == "completed" \
        else 0.0
    if reward is None:
        extra["reward_missing"] = True
    source = None
    if reward is not None:  # the runner's own 0 for a failure; else the judge's verdict
        judge_model = extra.get("judge_model")
        source = ("harness" if status != "completed"
                  else f"judge:{judge_model}" if judge_model else "judge")
    return EpisodeRecord(
        experiment_id=experiment_id,
        task_id=question_id,
        trajectory_id=trajectory_id_for(question_id, run),
        attempt=run,
        reward=reward,
        outcome_source=source,
        status=status,
        error_type=error_type,
        error_message=error_message,
        wall_time_s=wall_time_s,
        timestamp=time.time(),
        usage=usage or UsageSummary(),
        judge_usage=judge_usage,
        scores=scores,
        input_text=question,
        output_text=answer,
        expected_text=expected or None,
        retrieved_sources=sources,
        expected_sources=list(expected_sources),
        extra=extra,
    )
