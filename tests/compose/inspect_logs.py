"""Inspect AI logs derived from the real fixture ``2025-05-12T20-28-13-04-00_popularity.json``
(Inspect's own test log), changed only where a test needs another run: more samples and
epochs, a reducer, a status, a crashed ``.eval`` with only ``_journal/``.

Every field not named here stays as Inspect wrote it, so the adapter reads these as it
reads real logs.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

POPULARITY = "inspect/2025-05-12T20-28-13-04-00_popularity.json"


def popularity(fixtures: Path) -> dict[str, Any]:
    return json.loads((fixtures / POPULARITY).read_text(encoding="utf-8"))


def derived_log(fixtures: Path, *, samples: int, epochs: int, outcomes: list[list[str]],
                status: str = "success", reducer: str = "mean", done: int | None = None,
                task: str = "popularity", run: str = "x") -> dict[str, Any]:
    """``samples`` sample ids x ``epochs`` epochs planned; ``outcomes[i][e]`` is sample
    i's epoch e score ("C" or "I"); the first ``done`` (sample, epoch) pairs in Inspect's
    order (epoch by epoch) are logged (all when None). ``results`` holds accuracy with
    the reducer applied (Inspect's headline) when the status is success."""
    log = popularity(fixtures)
    template = log["samples"][0]
    log["status"] = status
    log["eval"]["task"] = task
    log["eval"]["eval_id"] = f"eval-{run}"
    log["eval"]["run_id"] = f"run-{run}"
    log["eval"]["task_id"] = f"task-{run}"
    log["eval"]["dataset"]["sample_ids"] = list(range(1, samples + 1))
    log["eval"]["config"]["limit"] = samples
    log["eval"]["config"]["epochs"] = epochs
    log["eval"]["config"]["epochs_reducer"] = [reducer]
    order = [(i, e) for e in range(epochs) for i in range(samples)]
    if done is not None:
        order = order[:done]
    out = []
    for i, e in order:
        s = copy.deepcopy(template)
        s["id"], s["epoch"] = i + 1, e + 1
        s["uuid"] = f"{run}-{i}-{e}"
        s["scores"] = {"match": {"value": outcomes[i][e], "answer": "x", "explanation": "x"}}
        out.append(s)
    log["samples"] = out
    log.pop("reductions", None)
    if status == "success":
        per_sample = [[1.0 if v == "C" else 0.0 for v in row] for row in outcomes]
        red = {"max": max, "min": min, "mean": lambda v: sum(v) / len(v)}[reducer]
        acc = sum(red(v) for v in per_sample) / samples
        log["results"] = {"total_samples": samples * epochs,
                          "completed_samples": samples * epochs,
                          "scores": [{"name": "match", "scorer": "match", "reducer": reducer,
                                      "scored_samples": samples, "params": {},
                                      "metrics": {"accuracy": {"name": "accuracy",
                                                               "value": acc, "params": {}}}}]}
    else:
        log.pop("results", None)
    return log


def write_json(log: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def journal_only_eval(fixtures: Path, path: Path) -> Path:
    """The real ``log_read_sample.eval`` with ``header.json``, ``summaries.json`` and
    ``reductions.json`` removed: what a crashed run leaves (spec and finished samples in
    ``_journal/`` only)."""
    src = fixtures / "inspect" / "log_read_sample.eval"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            if info.filename in ("header.json", "summaries.json", "reductions.json"):
                continue
            zout.writestr(info, zin.read(info.filename))
    return path


def graded_log(fixtures: Path) -> dict[str, Any]:
    """The popularity log with a grader through model roles (as
    tests/adapters/test_inspect.py builds it): per sample i the agent's model reports
    $0.001 and ``mockllm/grader`` 100 + i input, 10 output, 110 + i tokens and $0.01."""
    log = popularity(fixtures)
    model = log["eval"]["model"]
    log["eval"]["model_roles"] = {"grader": {"model": "mockllm/grader"}}
    for i, s in enumerate(log["samples"]):
        s["model_usage"][model]["total_cost"] = 0.001
        s["model_usage"]["mockllm/grader"] = {"input_tokens": 100 + i, "output_tokens": 10,
                                              "total_tokens": 110 + i, "total_cost": 0.01}
    return log
