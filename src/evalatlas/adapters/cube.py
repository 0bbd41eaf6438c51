"""EvalLog directories and cube-harness persisted trajectory directories.

An EvalLog directory has ``experiment_record.json``; a cube-harness experiment directory
has ``episodes/<id>/episode.metadata.json`` (FileStorage V2) and maybe ``status.json``.
Both are claimed here. For each episode directory, an ``episode_record.json`` wins; else
the record is rebuilt from the trajectory metadata the way cube-harness's
``export_eval_log`` does (reference eval-log.md 1.3-1.5), with these differences:

- retried-attempt directories (``<id>.archived_<ts>``) are skipped (upstream quirk 1);
- a missing start time or token count stays ``None`` instead of becoming ``0``;
- ``status.json`` fills ``status``, ``error_type`` and ``error_message``, so a crashed
  episode is not mistaken for a clean failure.

Without ``experiment_record.json`` an experiment record is synthesised: name = directory
name, ``experiment_id`` by the seed's recipe over the resolved directory path, agent
from the trajectories' ``agent_name``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.coerce import Fields
from evalatlas.errors import InputError, Problem
from evalatlas.records.evallog import (
    EPISODE_FILE,
    EXPERIMENT_FILE,
    episode_dirs,
    iter_episode_dir,
)
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.models import (
    CUBE_STATUS_MAP,
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
)
from evalatlas.records.validate import parse_record

METADATA_FILE = "episode.metadata.json"
STATUS_FILE = "status.json"
_EP_INDEX = re.compile(r"_ep(\d+)$")


def _is_experiment_dir(path: Path) -> bool:
    if (path / EXPERIMENT_FILE).is_file():
        return True
    ep_root = path / "episodes"
    if not ep_root.is_dir():
        return False
    for child in ep_root.iterdir():
        if (child / METADATA_FILE).is_file() or (child / EPISODE_FILE).is_file():
            return True
    return False


def _tool_names(metadata: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for schema in metadata.get("action_schemas") or []:
        if not isinstance(schema, dict):
            continue
        fn = schema.get("function")
        name = fn.get("name") if isinstance(fn, dict) else schema.get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def _count_steps(ep_dir: Path) -> int | None:
    steps = ep_dir / "steps"
    if not steps.is_dir():
        return None
    return sum(1 for p in steps.iterdir() if p.name.endswith(".msgpack.zst"))


def episode_from_trajectory(
    ep_dir: Path, experiment_id: str
) -> EpisodeRecord:
    """Rebuild an EpisodeRecord from ``episode.metadata.json`` (+ ``status.json``)."""
    meta_path = ep_dir / METADATA_FILE
    meta = read_json_file(meta_path)
    if not isinstance(meta, dict):
        raise InputError.at(meta_path, "expected a JSON object")
    status: dict[str, Any] = {}
    if (ep_dir / STATUS_FILE).is_file():
        loaded = read_json_file(ep_dir / STATUS_FILE)
        if isinstance(loaded, dict):
            status = loaded
    traj_id = str(meta.get("id") or ep_dir.name)
    # the one coercion rule (adapters/coerce.py): a wrong type quarantines the episode
    # naming the field, a negative count is missing with a note
    f = Fields(meta_path, traj_id)
    md = f.mapping(meta.get("metadata"), "metadata")
    stats = f.mapping(meta.get("summary_stats"), "summary_stats")
    reward_info = f.mapping(meta.get("reward_info"), "reward_info")
    reward = f.number(reward_info.get("reward"), "reward_info.reward")
    if reward is None:
        reward = f.number(stats.get("final_reward"), "summary_stats.final_reward")
    if reward is None:
        reward = f.number(status.get("reward"), "status.json reward")
    if reward is None:
        raise InputError.at(meta_path, "no reward in reward_info, summary_stats or status.json",
                            field="reward_info.reward", record=traj_id)
    start = f.number(meta.get("start_time"), "start_time")
    end = f.number(meta.get("end_time"), "end_time")
    if start is None and end is None and status:
        start = f.number(status.get("started_at"), "status.json started_at")
        end = f.number(status.get("ended_at"), "status.json ended_at")
    wall = end - start if start is not None and end is not None else None
    attempt: int | None = status.get("episode_id") if isinstance(
        status.get("episode_id"), int) else None
    if attempt is None:
        m = _EP_INDEX.search(traj_id)
        attempt = int(m.group(1)) if m else None
    usage = {
        "prompt_tokens": f.count(stats.get("prompt_tokens"), "summary_stats.prompt_tokens"),
        "completion_tokens": f.count(stats.get("completion_tokens"),
                                     "summary_stats.completion_tokens"),
        "cached_tokens": f.count(stats.get("cached_tokens"), "summary_stats.cached_tokens"),
        "cache_creation_tokens": f.count(stats.get("cache_creation_tokens"),
                                         "summary_stats.cache_creation_tokens"),
        "total_cost_usd": f.amount(stats.get("cost"), "summary_stats.cost"),
        "n_llm_calls": f.count(stats.get("total_llm_calls"), "summary_stats.total_llm_calls"),
    }
    raw_status = status.get("status")
    extra: dict[str, Any] = {}
    if "retry_count" in status:
        extra["retry_count"] = status["retry_count"]
    if raw_status:
        extra["cube_status"] = raw_status
    data = {
        "experiment_id": experiment_id,
        "task_id": str(md.get("task_id") or traj_id),
        "tool_names": _tool_names(md),
        "reward": reward,
        "error_type": status.get("error_type"),
        "error_message": status.get("error_message"),
        "n_steps": _count_steps(ep_dir),
        "n_agent_steps": f.count(stats.get("n_agent_steps"), "summary_stats.n_agent_steps"),
        "n_env_steps": f.count(stats.get("n_env_steps"), "summary_stats.n_env_steps"),
        "wall_time_s": wall,
        "usage": {k: v for k, v in usage.items() if v is not None},
        "trajectory_id": traj_id,
        "timestamp": start,
        "attempt": attempt,
        "status": CUBE_STATUS_MAP.get(str(raw_status), "completed") if raw_status else "completed",
        "extra": f.attach(extra),
    }
    return parse_record(EpisodeRecord, data, file=str(meta_path), record=traj_id)


def _synthesise_experiment(root: Path, agent_names: set[str], n_tasks: int) -> ExperimentRecord:
    name = root.resolve().name
    agent_name = ", ".join(sorted(agent_names)) or "unknown"
    return ExperimentRecord(
        experiment_id=experiment_id_for(name, str(root.resolve())),
        experiment_name=name,
        agent=AgentInfo(name=agent_name, config={"agent_name": agent_name}),
        benchmark_name="unknown",
        benchmark_subset=BenchmarkSubset(name="unknown", n_tasks=n_tasks),
        framework_name="cube-harness",
        extra={"synthesised_from": "episode.metadata.json"},
    )


def read_experiment_dir(root: Path) -> Iterator[Item]:
    """Stream one EvalLog / cube experiment directory as records and problems."""
    exp_path = root / EXPERIMENT_FILE
    experiment: ExperimentRecord | None = None
    if exp_path.is_file():
        try:
            experiment = parse_record(ExperimentRecord, read_json_file(exp_path),
                                      file=str(exp_path))
        except InputError as exc:
            yield exc.problem
            yield Problem(str(root), "episodes not read because the experiment record is invalid")
            return
    if experiment is None:
        agents: set[str] = set()
        tasks: set[str] = set()
        for d in episode_dirs(root):
            meta = d / METADATA_FILE
            if meta.is_file():
                try:
                    doc = read_json_file(meta)
                except InputError:
                    continue
                md = doc.get("metadata") if isinstance(doc, dict) else None
                if not isinstance(md, dict):
                    continue
                if md.get("agent_name"):
                    agents.add(str(md["agent_name"]))
                tasks.add(str(md.get("task_id")))
        experiment = _synthesise_experiment(root, agents, len(tasks))
    yield experiment
    yield from iter_episode_dir(root, experiment.experiment_id, fallback=_from_metadata)


def _from_metadata(ep_dir: Path, experiment_id: str) -> EpisodeRecord | None:
    if (ep_dir / METADATA_FILE).is_file():
        return episode_from_trajectory(ep_dir, experiment_id)
    return None


ADAPTER = Adapter(
    name="evallog",
    kind="dir",
    detect=_is_experiment_dir,
    read=read_experiment_dir,
    priority=10,
    rows=True,
    description="EvalLog directory (experiment_record.json) or cube-harness trajectory "
    "directory (episodes/*/episode.metadata.json)",
)
