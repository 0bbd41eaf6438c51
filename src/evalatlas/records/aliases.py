"""Field-name compatibility with cube-harness's later, EEE-aligned EvalLog names.

cube-harness renamed most EvalLog fields after the RFC (commit ``5215d6a5``, see
``reference/eval-log.md`` 1.1). evalatlas writes the seed's names and reads both. Every
serialised cube object also carries a ``_type`` discriminator, which is dropped here.
"""

from __future__ import annotations

from typing import Any

EXPERIMENT_ALIASES: dict[str, str] = {
    "evaluation_id": "experiment_id",
    "evaluation_timestamp": "timestamp",
    "judge_config": "investigator_llm_config",
}
EPISODE_ALIASES: dict[str, str] = {
    "evaluation_id": "experiment_id",
    "sample_id": "task_id",
    "sample_hash": "task_version_hash",
    "is_correct": "success",
    "score": "reward",
    "error": "error_type",
    "num_turns": "n_steps",
    "judge_output": "findings",
}
USAGE_ALIASES: dict[str, str] = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "input_tokens_cache_read": "cached_tokens",
    "input_tokens_cache_write": "cache_creation_tokens",
}


def drop_type_keys(value: Any) -> Any:
    """Remove cube's ``_type`` discriminators at every depth (quirk 6)."""
    if isinstance(value, dict):
        return {k: drop_type_keys(v) for k, v in value.items() if k != "_type"}
    if isinstance(value, list):
        return [drop_type_keys(v) for v in value]
    return value


def rename(data: dict[str, Any], aliases: dict[str, str], where: str) -> dict[str, Any]:
    """Map alias keys to canonical ones; both present with different values is an error."""
    out = dict(data)
    for old, new in aliases.items():
        if old in out:
            val = out.pop(old)
            if new in out and out[new] != val:
                raise ValueError(
                    f"{where}: both {new!r} and its alias {old!r} are present with different "
                    f"values ({out[new]!r} vs {val!r})"
                )
            out[new] = val
    return out


def normalise_experiment(data: dict[str, Any]) -> dict[str, Any]:
    data = rename(data, EXPERIMENT_ALIASES, "experiment record")
    lib = data.pop("eval_library", None)
    if isinstance(lib, dict) and "framework_version" not in data:
        data["framework_version"] = str(lib.get("version") or "unknown")
        if lib.get("name"):
            data.setdefault("framework_name", lib.get("name"))
    return data


def normalise_episode(data: dict[str, Any]) -> dict[str, Any]:
    data = rename(data, EPISODE_ALIASES, "episode record")
    usage = data.get("usage")
    if isinstance(usage, dict):
        data["usage"] = rename(usage, USAGE_ALIASES, "usage")
    if "task_id" in data and isinstance(data["task_id"], int | float) and not isinstance(
        data["task_id"], bool
    ):
        # cube-harness quirk 4: sample_id was not coerced to str upstream.
        data["task_id"] = str(data["task_id"])
    return data
