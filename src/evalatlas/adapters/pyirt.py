"""py-irt response matrices: JSON lines ``{"subject_id": ..., "responses": {item: 0|1}}``.

The format py-irt (Lalor & Rodriguez) reads and many papers publish their agent x task
matrices in. One line per subject (agent); each becomes one experiment (agent name =
``subject_id``) with one episode per response (``task_id`` = item id, ``reward`` = the
response, ``success`` = response > 0, ``attempt`` 0). The benchmark is named after the
file (``leaderboard.jsonlines`` -> ``leaderboard``) unless ``ingest --benchmark`` says
otherwise; ``benchmark_subset.n_tasks`` is the number of distinct items in the file.
Responses that are not numbers (or booleans) are reported as problems; a line that is
not an object with those two keys is reported and skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import number, or_none
from evalatlas.errors import InputError, Problem
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.models import AgentInfo, BenchmarkSubset, EpisodeRecord, ExperimentRecord
from evalatlas.records.validate import parse_record

SUFFIXES = (".jsonlines", ".jsonl", ".ndjson")
_NAMESPACE = "py-irt"


def _detect(path: Path) -> bool:
    """A JSON-lines file whose first record has ``subject_id`` and ``responses``."""
    if path.is_dir() or not path.name.lower().endswith(SUFFIXES):
        return False
    first = next((ln for ln in head_bytes(path, 64 * 1024).split(b"\n") if ln.strip()), b"")
    try:
        data = json.loads(first)
    except ValueError:
        return False
    return isinstance(data, dict) and "subject_id" in data and isinstance(
        data.get("responses"), dict)


def _benchmark_name(path: Path) -> str:
    name = path.name
    for suffix in SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw)
            except ValueError as exc:
                yield lineno, exc


def _response(value: Any) -> float | None:
    """A response: py-irt writes 0/1 or true/false (booleans are documented responses
    here); any other value by the one coercion rule, None when refused."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return or_none(number, value)


def read_pyirt(path: Path) -> Iterator[Item]:
    benchmark = _benchmark_name(path)
    items: set[str] = set()
    try:
        for _, data in _lines(path):
            if isinstance(data, dict) and isinstance(data.get("responses"), dict):
                items.update(str(k) for k in data["responses"])
    except OSError as exc:
        yield Problem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    seen: set[str] = set()
    for lineno, data in _lines(path):
        if isinstance(data, Exception):
            yield Problem(str(path), f"not JSON: {data}", line=lineno)
            continue
        if not (isinstance(data, dict) and "subject_id" in data
                and isinstance(data.get("responses"), dict)):
            yield Problem(str(path), "expected an object with subject_id and responses",
                          line=lineno)
            continue
        subject = str(data["subject_id"])
        if subject in seen:
            yield Problem(str(path), f"subject {subject!r} appears again; its later line "
                          "replaces the earlier responses", line=lineno, record=subject)
        seen.add(subject)
        exp_id = experiment_id_for(subject, f"{_NAMESPACE}:{path.name}")
        yield ExperimentRecord(
            experiment_id=exp_id, experiment_name=subject, framework_name="py-irt",
            agent=AgentInfo(name=subject, config={"subject_id": subject, "source": "py-irt"}),
            benchmark_name=benchmark,
            benchmark_subset=BenchmarkSubset(name=benchmark, n_tasks=len(items)),
        )
        for task, value in data["responses"].items():
            reward = _response(value)
            if reward is None:
                yield Problem(str(path), f"response {value!r} is not a number",
                              field=f"responses.{task}", line=lineno, record=subject)
                continue
            traj = hashlib.sha256(f"{subject}\x1f{task}".encode()).hexdigest()[:24]
            try:
                yield parse_record(EpisodeRecord, {
                    "experiment_id": exp_id, "task_id": str(task), "trajectory_id": traj,
                    "attempt": 0, "reward": reward}, file=str(path), line=lineno,
                    record=subject)
            except InputError as exc:
                yield exc.problem


ADAPTER = Adapter(
    name="pyirt",
    kind="file",
    detect=_detect,
    read=read_pyirt,
    priority=18,
    description="py-irt response matrix (JSON lines: subject_id + responses)",
)
