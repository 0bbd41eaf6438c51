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
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
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


def _num(x: Any) -> float | None:
    if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


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
    tasks = {str(r.get("task_id")) for r in data if isinstance(r, dict)}
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
        task, trial = row.get("task_id"), row.get("trial", 0)
        if task is None or not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
            yield Problem(str(path), "entry needs task_id and a trial number >= 0",
                          record=f"#{i}")
            continue
        key = (str(task), trial)
        if key in seen:
            yield Problem(str(path), f"task {task} trial {trial} appears twice; the first "
                          "entry was kept", record=f"#{i}")
            continue
        seen.add(key)
        info = row.get("info") if isinstance(row.get("info"), dict) else {}
        parts = row.get("reward_info_info")
        if parts is None:
            parts = ((info.get("reward_info") or {}).get("info") or {})
        scores = {k: _num(v) for k, v in (parts or {}).items() if k.startswith("r_")}
        extra: dict[str, Any] = {}
        user_cost = _num(row.get("user_cost", info.get("user_cost")))
        if user_cost is not None:
            extra["user_cost_usd"] = user_cost
        if isinstance(parts, dict) and "outputs" in parts:
            extra["outputs"] = json.loads(json.dumps(parts["outputs"]))
        n_steps = row.get("n_traj_messages")
        if n_steps is None and isinstance(row.get("traj"), list):
            n_steps = len(row["traj"])
        episode = {
            "experiment_id": exp.experiment_id, "task_id": str(task), "attempt": trial,
            "trajectory_id": f"task-{task}_trial-{trial}", "reward": _num(row.get("reward")),
            "n_steps": n_steps, "scores": scores, "extra": extra,
        }
        try:
            yield parse_record(EpisodeRecord, episode, file=str(path), record=f"#{i}")
        except InputError as exc:
            yield exc.problem


ADAPTER = Adapter(
    name="tau-bench",
    kind="file",
    detect=_detect,
    read=read_tau_bench,
    priority=25,
    description="tau-bench results (JSON list of task_id, trial, reward, info): "
    "tasks x trials; pass^k as tau-bench reports it",
)
