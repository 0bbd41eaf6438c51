"""Flat rows (store tables, evalatlas's Parquet export) back to records.

The inverse of :mod:`evalatlas.store.rows`: usage flattened to columns, JSON columns as
text, ``format_version`` per row (rows from before it existed are version 1). Kept in the
contract layer so an adapter can read an evalatlas Parquet export without the store.
"""

from __future__ import annotations

import json
from typing import Any

from evalatlas.records.models import (
    FORMAT_VERSION,
    AgentInfo,
    EpisodeRecord,
    ExperimentRecord,
    Measurement,
    UsageSummary,
)


def _uj(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


def experiment_from_row(row: dict[str, Any]) -> ExperimentRecord:
    return ExperimentRecord(
        experiment_id=row["experiment_id"],
        experiment_name=row["experiment_name"],
        timestamp=row["timestamp"],
        framework_name=row["framework_name"],
        framework_version=row["framework_version"],
        agent=AgentInfo.model_validate(_uj(row["agent"])),
        benchmark_name=row["benchmark_name"],
        benchmark_version=row["benchmark_version"],
        benchmark_subset={
            "name": row["subset_name"],
            "n_tasks": row["subset_n_tasks"],
            "filter": row["subset_filter"],
        },
        investigator_llm_config=_uj(row["investigator_llm_config"]),
        labels=_uj(row["labels"]) or {},
        extra=_uj(row["extra"]) or {},
        published_metrics=_uj(row.get("published_metrics")) or [],
        format_version=row.get("format_version") or FORMAT_VERSION,
    )


def episode_from_row(row: dict[str, Any]) -> EpisodeRecord:
    usage = UsageSummary.model_construct(
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        total_tokens=row["total_tokens"],
        cached_tokens=row["cached_tokens"],
        cache_creation_tokens=row["cache_creation_tokens"],
        reasoning_tokens=row["reasoning_tokens"],
        total_cost_usd=row["cost_usd"],
        cost_source=row["cost_source"],
        n_llm_calls=row["n_llm_calls"],
        model=row["usage_model"],
    )
    judge = _uj(row["judge_usage"])
    return EpisodeRecord.model_validate(
        {
            "experiment_id": row["experiment_id"],
            "task_id": row["task_id"],
            "task_version_hash": row["task_version_hash"],
            "seed": row["seed"],
            "split": row["split"],
            "task_description": row["task_description"],
            "tool_names": row["tool_names"] or [],
            "success": row["success"],
            "reward": row["reward"],
            "outcome_source": row.get("outcome_source"),
            "error_type": row["error_type"],
            "n_steps": row["n_steps"],
            "n_agent_steps": row["n_agent_steps"],
            "n_env_steps": row["n_env_steps"],
            "wall_time_s": row["wall_time_s"],
            "usage": usage.model_dump(),
            "trajectory_id": row["trajectory_id"],
            "timestamp": row["timestamp"],
            "verifier": _uj(row["verifier"]),
            "findings": _uj(row["findings"]),
            "attempt": row["attempt"],
            "status": row["status"],
            "error_message": row["error_message"],
            "scores": _uj(row["scores"]) or {},
            "input_text": row["input_text"],
            "output_text": row["output_text"],
            "expected_text": row["expected_text"],
            "retrieved_sources": row["retrieved_sources"],
            "expected_sources": row["expected_sources"],
            "judge_usage": judge,
            "investigation_metadata": _uj(row["investigation_metadata"]),
            "extra": _uj(row["extra"]) or {},
            "format_version": row.get("format_version") or FORMAT_VERSION,
        }
    )


def measurement_from_row(row: dict[str, Any]) -> Measurement:
    data = {k: row[k] for k in Measurement.model_fields if k in row}
    data["extra"] = _uj(row.get("extra")) or {}
    data["format_version"] = row.get("format_version") or FORMAT_VERSION
    return Measurement.model_validate(data)
