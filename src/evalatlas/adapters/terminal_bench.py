"""Terminal-Bench harness run output (``results.json`` with every trial).

A *submission* (one leaderboard entry) is either one run with ``n_attempts`` > 1
(trial names ``<task>.<k>-of-<n>``) or several single-attempt runs, each in its own
sub-folder with its own ``results.json`` (and optional ``run_metadata.json``). The
adapter claims the submission folder: a folder holding a Terminal-Bench
``results.json`` itself or in an immediate sub-folder. A ``results.json`` named on the
command line is read as a submission of one run.

Mapping:

- **one experiment per submission** (name = folder name; agent = ``agent_name`` and
  ``model_name`` of ``run_metadata.json``; labels ``submission``, ``dataset``);
- **one episode per trial**: ``attempt`` = run index x n_attempts + (k - 1), runs in
  folder-name order, so the five single-attempt runs become attempts 0-4 of each task;
- **reward** 1 when ``is_resolved`` is true, else 0; ``is_resolved: null`` (the harness
  could not grade the trial) is 0 as in the harness's own ``accuracy``, with the
  failure mode kept;
- **failure mode** -> ``error_type`` (``unset`` = none); ``agent_timeout`` and
  ``test_timeout`` -> status ``timeout``, other failure modes -> ``error``. A trial can
  be resolved *and* have timed out (the tests passed after the agent was stopped);
- **tokens**: ``total_input_tokens``/``total_output_tokens``; both 0 means "not
  reported" (agents that do not count tokens write 0), so they become missing, not 0;
- **scores**: ``tests_passed`` = share of ``parser_results`` that passed (missing when
  there are none);
- the harness's own ``pass_at_k`` and ``accuracy`` are kept in the experiment's
  ``extra`` (``harness_pass_at_k``, ``harness_accuracy`` per run) so tests and users can
  check evalatlas's numbers against them.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import Fields, describe
from evalatlas.errors import InputError, Problem
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
    PublishedMetric,
)
from evalatlas.records.validate import parse_record

RESULTS = "results.json"
METADATA = "run_metadata.json"
_ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")
_TIMEOUTS = {"agent_timeout", "test_timeout"}
_NO_FAILURE = {"unset", "none", "", None}
_ID_NAMESPACE = "terminal-bench"


def is_tb_results_file(path: Path) -> bool:
    """A JSON file whose first bytes show Terminal-Bench trial rows."""
    if not path.is_file() or path.suffix != ".json":
        return False
    head = head_bytes(path, 8192)
    return b'"results"' in head and b'"trial_name"' in head and b'"is_resolved"' in head


_OF_N = re.compile(rb"-of-(\d+)")


def _multi_attempt(results_file: Path) -> bool:
    """True when the first trial names say ``k-of-n`` with n > 1 (a whole submission)."""
    return any(int(n) > 1 for n in _OF_N.findall(head_bytes(results_file, 8192)))


def _run_files(path: Path) -> list[Path]:
    """The ``results.json`` files of a submission folder, in run order.

    A folder with its own ``results.json`` is a one-run submission. A folder whose
    sub-folders hold them is a several-run submission only when each of those runs is
    single-attempt and no sub-folder is itself a submission folder; otherwise it is a
    folder *of* submissions (like the leaderboard's ``results/``) and is not claimed, so
    the walk descends into it.
    """
    own = path / RESULTS
    if is_tb_results_file(own):
        return [own]
    runs: list[Path] = []
    for d in sorted(p for p in path.iterdir() if p.is_dir()):
        f = d / RESULTS
        if is_tb_results_file(f):
            if _multi_attempt(f):
                return []
            runs.append(f)
        elif any(is_tb_results_file(g / RESULTS) for g in d.iterdir() if g.is_dir()):
            return []
    return runs


def is_submission_dir(path: Path) -> bool:
    return bool(_run_files(path))


def _ts(v: Any) -> float | None:
    if not isinstance(v, str):
        return None
    try:
        return _dt.datetime.fromisoformat(v).timestamp()
    except ValueError:
        return None


def _span(row: dict[str, Any], start: str, end: str, a: float | None = None
          ) -> float | None:
    """Seconds from ``row[start]`` to ``row[end]`` (``a``: the start, parsed already)."""
    if a is None:
        a = _ts(row.get(start))
    b = _ts(row.get(end))
    return b - a if a is not None and b is not None and b >= a else None


def _tokens(f: Fields, row: dict[str, Any]) -> dict[str, int]:
    inp = f.count(row.get("total_input_tokens"), "total_input_tokens")
    out = f.count(row.get("total_output_tokens"), "total_output_tokens")
    if inp == 0 and out == 0:  # agents that do not count tokens write 0 and 0
        return {}
    return {k: v for k, v in (("prompt_tokens", inp), ("completion_tokens", out))
            if v is not None}


def _tests_passed(f: Fields, parser: Any) -> float | None:
    if parser is None:
        return None
    if not isinstance(parser, dict):
        f.note("parser_results", f"{describe(parser)}, not an object of test results; "
               "tests_passed missing")
        return None
    if not parser:
        return None
    return sum(1 for v in parser.values() if v == "passed") / len(parser)


def trial_episode(
    row: dict[str, Any], experiment_id: str, run_name: str, run_index: int, n_attempts: int,
    file: str,
) -> EpisodeRecord:
    """One trial row as an EpisodeRecord (mapping in the module docstring); values through
    the one coercion rule (:mod:`evalatlas.adapters.coerce`): a wrong type quarantines
    the trial naming the field, a negative token count is missing with a note."""
    name = row.get("trial_name") or row.get("id") or ""
    trial = name if isinstance(name, str) else ""
    f = Fields(file, trial or None)
    if not isinstance(name, str):
        raise InputError.at(file, f"{describe(name)} is not a trial name", field="trial_name")
    task = f.identifier(row.get("task_id"), "task_id")
    if not isinstance(task, str) or not task:
        raise InputError.at(file, "trial has no task_id", field="task_id", record=trial)
    m = _ATTEMPT.search(trial)
    k = int(m.group(1)) - 1 if m else 0
    resolved = row.get("is_resolved")
    if resolved not in (True, False, None):
        raise InputError.at(file, f"is_resolved must be true, false or null, got "
                            f"{describe(resolved)}", field="is_resolved", record=trial)
    mode = row.get("failure_mode")
    if mode is not None and not isinstance(mode, str):
        raise InputError.at(file, f"{describe(mode)} is not a failure mode name",
                            field="failure_mode", record=trial)
    status = "completed"
    if mode not in _NO_FAILURE:
        status = "timeout" if mode in _TIMEOUTS else "error"
    elif resolved is None:
        status, mode = "error", "ungraded"
    traj = f"{run_name}__{trial}"
    usage = _tokens(f, row)
    started = _ts(row.get("trial_started_at"))
    data = {
        "experiment_id": experiment_id,
        "task_id": task,
        "task_description": row.get("instruction") if isinstance(row.get("instruction"),
                                                                   str) else None,
        "reward": 1.0 if resolved is True else 0.0,
        "status": status,
        "error_type": None if mode in _NO_FAILURE else str(mode),
        "wall_time_s": _span(row, "trial_started_at", "trial_ended_at", started),
        "timestamp": started,
        "usage": usage,
        "trajectory_id": traj if len(traj) <= 255 and traj.isascii()
        else traj.encode("utf-8")[:255].decode("utf-8", "ignore"),
        "attempt": run_index * max(n_attempts, 1) + k,
        "scores": {"tests_passed": _tests_passed(f, row.get("parser_results"))},
        "extra": f.attach({
            "run": run_name,
            "trial_name": trial,
            "is_resolved": resolved,
            "agent_duration_s": _span(row, "agent_started_at", "agent_ended_at"),
            "test_duration_s": _span(row, "test_started_at", "test_ended_at"),
        }),
    }
    return parse_record(EpisodeRecord, data, file=file, record=trial)


def _metadata(results_file: Path) -> tuple[dict[str, Any], list[Problem]]:
    """``run_metadata.json`` beside a results file, and what was wrong with it: an
    unreadable file is a problem (the trials are still read), a bad value inside it is
    left out by :func:`_checked_metadata` with a note."""
    meta_path = results_file.parent / METADATA
    if not meta_path.is_file():
        return {}, []
    try:
        meta = read_json_file(meta_path)
    except InputError as exc:
        return {}, [exc.problem]
    if not isinstance(meta, dict):
        return {}, [Problem(str(meta_path), f"{describe(meta)}, expected an object; "
                            "run metadata ignored")]
    return meta, []


_META_TEXT = ("agent_name", "model_name", "dataset_name", "dataset_version", "run_id",
              "commit_hash", "start_time")


def _checked_metadata(meta: dict[str, Any], file: str) -> tuple[dict[str, Any], Fields]:
    """The metadata values evalatlas uses, through the coercion rule leniently: a bad
    value (``dataset_size: "NaN"`` or ``-3``, a list as model name) becomes missing with
    a note, never a lost submission."""
    f = Fields(file, METADATA, strict=False)
    out = dict(meta)
    for key in _META_TEXT:
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) \
                and key in ("dataset_version", "run_id"):
            value = str(value)  # a version or id written as a number
        out[key] = f.text(value, f"{METADATA}.{key}")
    out["dataset_size"] = f.count(meta.get("dataset_size"), f"{METADATA}.dataset_size")
    n_att = f.count(meta.get("n_attempts"), f"{METADATA}.n_attempts")
    out["n_attempts"] = n_att if n_att else None
    return out, f


def _n_attempts(meta: dict[str, Any], rows: list[dict[str, Any]]) -> int:
    if isinstance(meta.get("n_attempts"), int) and meta["n_attempts"] > 0:
        return meta["n_attempts"]
    for r in rows:
        if not isinstance(r, dict) or not isinstance(r.get("trial_name"), str):
            continue
        m = _ATTEMPT.search(r["trial_name"])
        if m:
            return int(m.group(2))
    return 1


def _agent_label(meta: dict[str, Any], submission: str) -> str:
    """``agent:model`` from run metadata; the submission name when that says too little."""
    agent, model = meta.get("agent_name"), meta.get("model_name")
    if not agent:
        return submission
    return f"{agent}:{model}" if model else f"{agent} ({submission})"


def _accuracy(results: Any, notes: Fields) -> float | None:
    """The results header's ``accuracy`` (a share), missing with a note when it is not a
    number in [0, 1]."""
    value = notes.number(results.get("accuracy"), "results.json accuracy")
    if value is not None and not 0 <= value <= 1:
        notes.note("results.json accuracy", f"{value!r} is not a share in [0, 1]; missing")
        return None
    return value


def read_submission(path: Path) -> Iterator[Item]:
    """Stream a submission folder (or one ``results.json``) as one experiment."""
    files = [path] if path.is_file() else _run_files(path)
    name = path.parent.name if path.is_file() else path.name
    runs: list[tuple[Path, dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = []
    for f in files:
        try:
            data = read_json_file(f)
        except InputError as exc:
            yield exc.problem
            continue
        rows = data.get("results") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            yield Problem(str(f), "expected an object with a 'results' list", field="results")
            continue
        meta, problems = _metadata(f)
        yield from problems
        runs.append((f, data, rows, meta))
    if not runs:
        return
    meta0, notes = _checked_metadata(runs[0][3], str(runs[0][0].parent / METADATA))
    agent_name = str(meta0.get("agent_name") or name)
    model = meta0.get("model_name") if isinstance(meta0.get("model_name"), str) else None
    dataset = meta0.get("dataset_name")
    version = meta0.get("dataset_version")
    tasks = {r.get("task_id") for _, _, rows, _ in runs for r in rows
             if isinstance(r, dict) and isinstance(r.get("task_id"), str)}
    exp_id = experiment_id_for(name, _ID_NAMESPACE)
    accuracy = _accuracy(runs[0][1], notes) if len(runs) == 1 else None
    labels = {"submission": name}
    if dataset:
        labels["dataset"] = f"{dataset}@{version}" if version else str(dataset)
    yield ExperimentRecord(
        experiment_id=exp_id,
        experiment_name=name,
        timestamp=_ts(meta0.get("start_time")),
        framework_name="terminal-bench",
        framework_version=str(meta0.get("commit_hash") or "unknown"),
        agent=AgentInfo(name=_agent_label(meta0, name),
                        config={"agent_name": agent_name, "model_name": model,
                                "submission": name, "agent_kwargs": meta0.get("agent_kwargs")},
                        config_type=agent_name, llm_model=model),
        benchmark_name=str(dataset or "terminal-bench"),
        benchmark_version=str(version) if version else None,
        benchmark_subset=BenchmarkSubset(name=str(dataset or "terminal-bench"),
                                         n_tasks=meta0["dataset_size"] or len(tasks)),
        labels=labels,
        extra=notes.attach({
            "runs": [f.parent.name for f, *_ in runs],
            "harness_accuracy": {f.parent.name: d.get("accuracy") for f, d, *_ in runs},
            "harness_pass_at_k": {f.parent.name: d.get("pass_at_k") for f, d, *_ in runs
                                  if d.get("pass_at_k")},
        }),
        # the results header's own accuracy, recomputed by summary (issue 10); one per
        # run only when the submission is one run (several runs: their pooled mean is
        # not what any header says)
        published_metrics=[] if accuracy is None else [PublishedMetric(
            source="terminal-bench results.json", metric="accuracy", value=accuracy,
            score="reward", name=runs[0][0].parent.name)],
    )
    for index, (f, _data, rows, raw_meta) in enumerate(runs):
        meta = _checked_metadata(raw_meta, str(f.parent / METADATA))[0]
        n_att = _n_attempts(meta, rows)
        run_name = f.parent.name if len(runs) > 1 or f.parent != path else (
            str(meta.get("run_id") or f.parent.name))
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                yield Problem(str(f), "trial row is not an object", record=f"results[{i}]")
                continue
            try:
                yield trial_episode(row, exp_id, run_name, index, n_att, str(f))
            except InputError as exc:
                yield exc.problem


ADAPTER = Adapter(
    name="terminal-bench",
    kind="dir",
    detect=is_submission_dir,
    read=read_submission,
    priority=30,
    rows=True,
    description="Terminal-Bench submission folder (results.json with trial rows, itself or "
    "one per run sub-folder)",
)

ADAPTERS = (
    Adapter(
        name="terminal-bench-file",
        kind="file",
        detect=is_tb_results_file,
        read=read_submission,
        priority=30,
        rows=True,
        description="one Terminal-Bench results.json",
    ),
)
