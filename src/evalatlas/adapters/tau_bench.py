"""tau-bench results: a JSON list of ``EnvRunResult`` (task_id, trial, reward, info, traj).

Upstream (sierra-research/tau-bench ``run.py``) writes one file per run with one entry
per (task, trial); ``historical_trajectories/<agent>-<env>.json`` are such files. The
reduced fixture keeps ``task_id``, ``trial``, ``reward``, ``user_cost``,
``reward_info_info`` (``info.reward_info.info``) and ``n_traj_messages``; the full
upstream entries (``info``, ``traj``) are read too.

One experiment per file (agent = the file name before the environment, e.g. ``gpt-4o``
in ``gpt-4o-airline.json``; benchmark ``tau-bench-<env>``), one episode per entry:
``task_id`` -> task, ``trial`` -> attempt, ``reward`` (0/1) -> reward; the reward's
parts (``r_actions``, ``r_outputs``) -> named scores.

Cost: tau-bench's results keep only the **user simulator's** cost (``info.user_cost``;
the agent's ``total_cost`` is dropped by ``run.py``), so it goes to
``extra["user_cost_usd"]`` and the agent's cost stays unknown rather than being
mislabelled. ``n_traj_messages`` (or ``len(traj)``) -> ``n_steps``.

tau-bench's headline metric pass^k (``display_metrics``: per task ``C(c, k) / C(n, k)``,
mean over tasks, k = 1..trials) is :func:`evalatlas.metrics.outcomes.pass_hat_k`; the
reward counts as a success when within 1e-6 of 1, which for its 0/1 rewards is
``reward > 0``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import Fields, describe
from evalatlas.errors import InputError, Problem
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.models import AgentInfo, BenchmarkSubset, EpisodeRecord, ExperimentRecord
from evalatlas.records.validate import parse_record

_ID_NAMESPACE = "tau-bench"
_ENVS = ("airline", "retail")
_HEAD = re.compile(rb'^\s*\[\s*\{[^\[\]]{0,400}?"task_id"')


def _detect(path: Path) -> bool:
    """A ``.json`` list whose first entry has ``task_id``, ``trial`` and ``reward``."""
    if not path.name.lower().endswith(".json") or path.is_dir():
        return False
    head = head_bytes(path, 4096)
    first = head.split(b"}", 1)[0]
    return bool(_HEAD.match(head)) and b'"trial"' in first and b'"reward"' in head


def _names(path: Path) -> tuple[str, str | None]:
    """``(agent, env)`` from ``<agent>-<env>[.reduced].json``."""
    stem = path.name.removesuffix(".json").removesuffix(".reduced")
    for env in _ENVS:
        if stem.endswith(f"-{env}"):
            return stem[: -len(env) - 1] or stem, env
    return stem, None


def read_tau_bench(path: Path) -> Iterator[Item]:
    try:
        data = read_json_file(path)
    except InputError as exc:
        yield exc.problem
        return
    if not isinstance(data, list):
        yield Problem(str(path), "expected a JSON list of tau-bench results")
        return
    agent, env = _names(path)
    benchmark = f"tau-bench-{env}" if env else "tau-bench"
    tasks = {str(r.get("task_id")) for r in data
             if isinstance(r, dict) and isinstance(r.get("task_id"), str | int)}
    exp = ExperimentRecord(
        experiment_id=experiment_id_for(path.name, _ID_NAMESPACE),
        experiment_name=path.name.removesuffix(".json"),
        framework_name="tau-bench",
        agent=AgentInfo(name=agent, config={"agent": agent, "env": env},
                        llm_model=agent),
        benchmark_name=benchmark,
        benchmark_subset=BenchmarkSubset(name=env or "tau-bench", n_tasks=len(tasks)),
        labels={"env": env} if env else {},
    )
    yield exp
    seen: set[tuple[str, int]] = set()
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            yield Problem(str(path), "entry is not an object", record=f"#{i}")
            continue
        try:
            episode = _episode(row, exp.experiment_id, seen, str(path), f"#{i}")
        except InputError as exc:
            yield exc.problem
            continue
        try:
            yield parse_record(EpisodeRecord, episode, file=str(path), record=f"#{i}")
        except InputError as exc:
            yield exc.problem


def _episode(row: dict[str, Any], experiment_id: str, seen: set[tuple[str, int]],
             file: str, record: str) -> dict[str, Any]:
    """One entry as an episode dict, every value through the one coercion rule
    (:mod:`evalatlas.adapters.coerce`): tau-bench writes numbers as JSON numbers, so a
    reward ``"1.0"`` or ``true`` is refused (the entry is quarantined naming the field),
    a ``NaN``/``Infinity`` reward is an unknown outcome with a note, a negative cost or
    step count is missing with a note."""
    f = Fields(file, record)
    task = f.required(f.identifier(row.get("task_id"), "task_id"), "task_id", "a task id")
    trial = f.required(f.count(row.get("trial", 0), "trial"), "trial", "a trial number >= 0")
    key = (task, trial)
    if key in seen:
        raise InputError.at(file, f"task {task} trial {trial} appears twice; the first "
                            "entry was kept", field="trial", record=record)
    seen.add(key)
    info = row.get("info")
    if info is None:
        info = {}
    elif not isinstance(info, dict):
        raise InputError.at(file, f"{describe(info)}, expected an object", field="info",
                            record=record)
    if "reward_info_info" in row:
        parts, where = row["reward_info_info"], "reward_info_info"
    else:
        reward_info = info.get("reward_info")
        parts = reward_info.get("info") if isinstance(reward_info, dict) else None
        where = "info.reward_info.info"
    if parts is None:
        parts = {}
    elif not isinstance(parts, dict):
        raise InputError.at(file, f"{describe(parts)}, expected an object of reward parts",
                            field=where, record=record)
    scores = {k: f.number(v, f"{where}.{k}") for k, v in parts.items()
              if isinstance(k, str) and k.startswith("r_")}
    extra: dict[str, Any] = {}
    user_cost = f.amount(row.get("user_cost", info.get("user_cost")), "user_cost")
    if user_cost is not None:
        extra["user_cost_usd"] = user_cost
    if "outputs" in parts:
        extra["outputs"] = json.loads(json.dumps(parts["outputs"]))
    n_steps = f.count(row.get("n_traj_messages"), "n_traj_messages")
    if n_steps is None and isinstance(row.get("traj"), list):
        n_steps = len(row["traj"])
    return {
        "experiment_id": experiment_id, "task_id": task, "attempt": trial,
        "trajectory_id": f"task-{task}_trial-{trial}",
        "reward": f.number(row.get("reward"), "reward"),
        "n_steps": n_steps, "scores": scores, "extra": f.attach(extra),
    }


ADAPTER = Adapter(
    name="tau-bench",
    kind="file",
    detect=_detect,
    read=read_tau_bench,
    priority=25,
    description="tau-bench results (JSON list of task_id, trial, reward, info): "
    "tasks x trials; pass^k as tau-bench reports it",
)
