"""Turning FC-Eval results (any input format) into evalatlas records.

Shared by the FC-Eval run-directory, ASV and website-table adapters so that all three
map onto the record contract the same way:

- one :class:`ExperimentRecord` per ``agent:model`` and source (run directory, ASV
  directory or CSV file): ``AgentInfo.name = "agent:model"``, ``llm_model = model``,
  labels ``{"agent", "model", "agent_model"}``; agents are keyed by the full
  ``agent:model`` string (upstream drops models with dots and lets two agents with the
  same name collide; evalatlas does neither);
- one :class:`EpisodeRecord` per agent per task attempt. ``reward`` is correctness, not
  speed: 1.0 when the patch passed pytest and the snapshot check, else 0.0 (so
  ``success = reward > 0`` means "correct patch", as upstream's ``success``). The speed
  numbers are scores: ``task_speedup``, ``agent_advantage``,
  ``advantage_level1..4``, ``speedup_percentage``, ``num_benchmarks``,
  ``num_valid_benchmarks``, ``beat_oracle_share``. ``extra`` holds
  ``fallback_to_baseline``, ``pytest`` and ``snapshot`` summaries, the failed flags,
  ``trajectory_length`` and ``correctness_known``;
- one :class:`Measurement` per benchmark with samples (when known), medians, the
  effective speedups (after the fallback), ``advantage``, ``valid`` and
  ``fallback_to_baseline``; the measured speedups of a fallen-back agent are kept in
  ``extra["measured_speedup_agent"]``.

When the input carries no correctness information (ASV results alone, the website
table) ``extra["correctness_known"]`` is False and ``reward`` / ``success`` are null: the
outcome is unknown, not a failure (``summary`` counts such episodes apart).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from evalatlas.adapters.coerce import number, or_none
from evalatlas.errors import InputError, Problem
from evalatlas.metrics.speedup import deconstruct_benchmark, task_metrics
from evalatlas.metrics.speedup_summary import beat_oracle_share
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
    Measurement,
)
from evalatlas.records.validate import parse_record

BENCHMARK_NAME = "formulacode"


def split_agent_key(key: str) -> tuple[str, str | None]:
    """``"agent:model"`` -> ``("agent", "model")``; the model may contain ``:`` or dots."""
    agent, sep, model = key.partition(":")
    return agent, (model if sep and model else None)


def is_nop(key: str) -> bool:
    return split_agent_key(key)[0] == "nop"


def is_oracle(key: str) -> bool:
    """``oracle:*``; also ``*:oracle``, the website table's name for the oracle rows."""
    agent, model = split_agent_key(key)
    return agent == "oracle" or model == "oracle"


@dataclass
class BenchmarkResult:
    """One benchmark of one agent: samples and/or speedups, before any fallback."""

    name: str
    speedup_agent: float | None = None
    speedup_oracle: float | None = None
    valid: bool = False
    reason: str | None = None
    baseline_samples: list[float] | None = None
    oracle_samples: list[float] | None = None
    agent_samples: list[float] | None = None
    baseline_time: float | None = None
    oracle_time: float | None = None
    agent_time: float | None = None
    unit: str | None = "seconds"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentTrial:
    """Everything an input says about one agent's attempt at one task."""

    agent_key: str
    task_id: str
    trajectory_id: str
    attempt: int | None = None
    benchmarks: list[BenchmarkResult] = field(default_factory=list)
    num_benchmarks: int | None = None
    pytest_failed: bool | None = None
    snapshot_failed: bool | None = None
    pytest_summary: dict[str, Any] | None = None
    snapshot_summary: dict[str, Any] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    trajectory_length: int | None = None
    wall_time_s: float | None = None
    timestamp: float | None = None
    source: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def experiment_for(
    agent_key: str, source: str, source_name: str, *, framework: str, n_tasks: int,
    extra: dict[str, Any] | None = None,
) -> ExperimentRecord:
    """The experiment of one ``agent:model`` within one source (directory or file)."""
    agent, model = split_agent_key(agent_key)
    name = f"{source_name} {agent_key}"
    labels = {"agent": agent, "agent_model": agent_key, "source": source_name}
    if model:
        labels["model"] = model
    return ExperimentRecord(
        experiment_id=experiment_id_for(name, source),
        experiment_name=name,
        framework_name=framework,
        agent=AgentInfo(name=agent_key, llm_model=model, config_type=agent,
                        config={"agent": agent, "model": model}),
        benchmark_name=BENCHMARK_NAME,
        benchmark_subset=BenchmarkSubset(name="all", n_tasks=n_tasks),
        labels=labels,
        extra=extra or {},
    )


def _finite(v: float | None) -> float | None:
    return or_none(number, v)  # the one coercion rule: not finite is missing


def trial_records(
    trial: AgentTrial, experiment_id: str, file: str
) -> Iterator[EpisodeRecord | Measurement | Problem]:
    """The episode and measurements of one trial (fallback applied as the seed says)."""
    file = trial.source or file
    known = trial.pytest_failed is not None and trial.snapshot_failed is not None
    names = [b.name for b in trial.benchmarks]
    sa = [b.speedup_agent if b.valid else None for b in trial.benchmarks]
    so = [b.speedup_oracle if b.valid else None for b in trial.benchmarks]
    tm = task_metrics(
        names, sa, so,
        pytest_failed=bool(trial.pytest_failed), snapshot_failed=bool(trial.snapshot_failed),
        is_nop=is_nop(trial.agent_key), num_benchmarks=trial.num_benchmarks,
        pytest_summary=trial.pytest_summary, snapshot_summary=trial.snapshot_summary,
        task_cost_usd=trial.cost_usd, trajectory_length=trial.trajectory_length,
    )
    per = tm.per_benchmark_speedups
    success = tm.success if known else None
    usage: dict[str, Any] = {"model": split_agent_key(trial.agent_key)[1]}
    if trial.prompt_tokens is not None:
        usage["prompt_tokens"] = trial.prompt_tokens
    if trial.completion_tokens is not None:
        usage["completion_tokens"] = trial.completion_tokens
    if trial.cost_usd is not None:
        usage["total_cost_usd"] = trial.cost_usd
    extra = {
        "agent_model": trial.agent_key,
        "correctness_known": known,
        "fallback_to_baseline": tm.fallback_to_baseline,
        "pytest_failed": trial.pytest_failed,
        "snapshot_failed": trial.snapshot_failed,
        "pytest": trial.pytest_summary,
        "snapshot": trial.snapshot_summary,
        "trajectory_length": trial.trajectory_length,
        **trial.extra,
    }
    scores = {
        "task_speedup": tm.task_speedup,
        "speedup_percentage": (tm.task_speedup - 1.0) * 100.0,
        "agent_advantage": tm.agent_advantage,
        "advantage_level1": tm.agent_advantage_level1,
        "advantage_level2": tm.agent_advantage_level2,
        "advantage_level3": tm.agent_advantage_level3,
        "advantage_level4": tm.agent_advantage_level4,
        "num_benchmarks": float(tm.num_benchmarks),
        "num_valid_benchmarks": float(tm.num_valid_benchmarks),
        "beat_oracle_share": beat_oracle_share(e["advantage"] for e in per.values()),
    }
    data = {
        "experiment_id": experiment_id,
        "task_id": trial.task_id,
        "trajectory_id": trial.trajectory_id,
        "attempt": trial.attempt,
        "reward": None if success is None else (1.0 if success else 0.0),
        "success": success,
        "n_steps": trial.trajectory_length,
        "wall_time_s": trial.wall_time_s,
        "timestamp": trial.timestamp,
        "usage": usage,
        "scores": scores,
        "extra": extra,
    }
    try:
        yield parse_record(EpisodeRecord, data, file=file, record=trial.trajectory_id)
    except InputError as exc:
        yield exc.problem
        return
    for b in trial.benchmarks:
        module, cls, func, params = deconstruct_benchmark(b.name)
        eff = per.get(b.name) if b.valid else None
        mextra = dict(b.extra)
        if b.reason:
            mextra["invalid_reason"] = b.reason
        if eff is not None and tm.fallback_to_baseline:
            mextra["measured_speedup_agent"] = b.speedup_agent
        mdata = {
            "experiment_id": experiment_id, "trajectory_id": trial.trajectory_id,
            "benchmark": b.name, "module": module, "class_name": cls, "function": func,
            "params": params, "unit": b.unit,
            "baseline_samples": b.baseline_samples, "agent_samples": b.agent_samples,
            "oracle_samples": b.oracle_samples,
            "baseline_time": _finite(b.baseline_time), "agent_time": _finite(b.agent_time),
            "oracle_time": _finite(b.oracle_time),
            "speedup_agent": eff["agent/nop"] if eff else None,
            "speedup_oracle": eff["oracle/nop"] if eff else None,
            "advantage": eff["advantage"] if eff else None,
            "valid": b.valid,
            "fallback_to_baseline": bool(eff and eff.get("fallback_to_baseline")),
            "extra": mextra,
        }
        try:
            yield parse_record(Measurement, mdata, file=file, record=f"{trial.trajectory_id} "
                               f"benchmark {b.name}")
        except InputError as exc:
            yield exc.problem
