"""SWE-bench results: leaderboard per-instance details, harness reports, SWE-Bench Pro.

Three folder formats, each one system (one experiment) with one episode per instance
(``attempt`` 0, ``task_id`` = instance id):

- **per-instance details** (swebench.com ``leaderboards.json``, SWE-bench Verified
  bash-only): ``<folder>/per_instance_details.json`` =
  ``{instance_id: {resolved, cost, api_calls}}`` plus optional ``leaderboard_entry.json``.
  Cost is the reported per-instance cost, ``api_calls`` -> ``n_llm_calls``. The board's
  own ``resolved`` percentage is kept in ``extra["leaderboard_resolved_pct"]`` (per
  board) so it can be checked against the data (it does not always match: see the
  fixture's PROVENANCE and ``docs/tiers-and-compare.md``).
- **harness report** (SWE-bench / Multi-SWE-bench ``results/results.json``:
  ``total_instances``, ``resolved_ids`` (or ``resolved``), ``unresolved_ids``,
  ``empty_patch_ids``, ``error_ids``, ``incomplete_ids``, ...): every instance of the
  report gets an episode, because the leaderboard's denominator is ``total_instances``:
  resolved -> reward 1; unresolved -> 0; empty patch -> 0, ``error_type="empty_patch"``;
  harness error -> 0, status ``error``; not submitted (``incomplete_ids``) -> 0, status
  ``incomplete``, ``error_type="not_submitted"``. ``metadata.yaml`` gives the name.
  Instances of ``index.json`` beside the submission that the report never mentions are
  reported as problems, not invented.
- **SWE-Bench Pro** ``<run>/eval_results.json`` = ``{instance_id: bool}``; instances
  absent from a run were not evaluated and get no episode (their outcome is unknown).
- **SWE-Bench Pro Docent export** (``agent_runs_data.csv``: ``agent_run_id``,
  ``metadata.instance_id``, ``metadata.model_name``, ``metadata.resolved``,
  ``metadata.turns``, ...), a file adapter: one experiment per run label
  (``metadata.model_name``), one episode per row, ``trajectory_id`` = ``agent_run_id``,
  turns -> ``n_agent_steps``. Read on its own, run labels are taken as written.

A SWE-Bench Pro *folder* (a Docent CSV beside run directories) is read as one source by
:mod:`evalatlas.adapters.swebench_pro`.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import Fields, describe, number, or_none
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
from evalatlas.records.names import model_from_label
from evalatlas.records.validate import parse_record

DETAILS = "per_instance_details.json"
ENTRY = "leaderboard_entry.json"
REPORT = Path("results") / "results.json"
PRO = "eval_results.json"
_ID_NAMESPACE = "swe-bench"


def _is_report(path: Path) -> bool:
    head = head_bytes(path, 4096)
    return b'"total_instances"' in head and (b'"resolved' in head or b'"completed_ids"' in head)


def is_swebench_dir(path: Path) -> bool:
    """A folder with per-instance details, a harness report or SWE-Bench Pro results."""
    return ((path / DETAILS).is_file() or (path / PRO).is_file()
            or ((path / REPORT).is_file() and _is_report(path / REPORT)))


def _obj(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise InputError.at(path, "expected a JSON object")
    return data


def _episode(exp_id: str, iid: str, reward: float, file: Path, **fields: Any) -> EpisodeRecord:
    data = {"experiment_id": exp_id, "task_id": iid, "trajectory_id": iid, "attempt": 0,
            "reward": reward, **fields}
    return parse_record(EpisodeRecord, data, file=str(file), record=iid)


def _leaderboard_published(entries: dict[str, Any]) -> list[PublishedMetric]:
    """The board's own ``resolved`` percentage per board, as a published accuracy (a
    fraction, rounded to 0.1 points upstream) for ``summary`` to recompute (issue 10)."""
    out = []
    for board, entry in sorted(entries.items()):
        pct = or_none(number, entry.get("resolved")) if isinstance(entry, dict) else None
        if pct is not None:  # the one coercion rule: a boolean or a string is no share
            out.append(PublishedMetric(source="swe-bench leaderboard", metric="accuracy",
                                       value=pct / 100, score="reward", name=board,
                                       params={"tolerance": 0.0005}))
    return out


def _experiment(folder: Path, name: str, benchmark: str, n_tasks: int, *,
                model: str | None = None, extra: dict[str, Any] | None = None,
                labels: dict[str, str] | None = None,
                published: list[PublishedMetric] | None = None) -> ExperimentRecord:
    return ExperimentRecord(
        experiment_id=experiment_id_for(f"{benchmark}/{folder.name}", _ID_NAMESPACE),
        experiment_name=folder.name,
        framework_name="swe-bench",
        agent=AgentInfo(name=name, config={"system": folder.name, "name": name},
                        llm_model=model),
        benchmark_name=benchmark,
        benchmark_subset=BenchmarkSubset(name=benchmark, n_tasks=n_tasks),
        labels={"system": folder.name, **(labels or {})},
        extra=extra or {},
        published_metrics=published or [],
    )


def _model_tag(entry: dict[str, Any]) -> str | None:
    for tag in entry.get("tags") or []:
        if isinstance(tag, str) and tag.startswith("Model: "):
            return tag[len("Model: "):]
    return None


def read_details(folder: Path) -> Iterator[Item]:
    """``per_instance_details.json`` (+ ``leaderboard_entry.json``) of one system."""
    path = folder / DETAILS
    try:
        details = _obj(path)
    except InputError as exc:
        yield exc.problem
        return
    entries: dict[str, Any] = {}
    notes = Fields(folder / ENTRY, strict=False)
    if (folder / ENTRY).is_file():
        try:
            entries = notes.mapping(_obj(folder / ENTRY).get("board_entries"),
                                    "board_entries")
        except InputError as exc:
            yield exc.problem
    main = notes.mapping(entries.get("bash-only") or entries.get("Verified"),
                         "board_entries.bash-only")
    name = str(main.get("name") or folder.name)
    exp = _experiment(
        folder, name, "swe-bench-verified", len(details), model=_model_tag(main),
        labels={"board": "bash-only" if "bash-only" in entries else "Verified"},
        extra=notes.attach(
            {"leaderboard_resolved_pct": {k: v.get("resolved") for k, v in entries.items()
                                          if isinstance(v, dict)},
             "leaderboard_cost_usd": {k: v.get("cost") for k, v in entries.items()
                                      if isinstance(v, dict)}}),
        published=_leaderboard_published(entries))
    yield exp
    file, eid = str(path), exp.experiment_id
    for iid, row in details.items():
        iid = str(iid)
        if not isinstance(row, dict) or not isinstance(row.get("resolved"), bool):
            yield Problem(file, "expected {resolved: bool, cost, api_calls}",
                          field="resolved", record=iid)
            continue
        f = Fields(file, iid)
        try:
            # the one coercion rule: a wrong type quarantines the instance, a negative
            # cost or call count is missing with a note
            usage = {}
            if (cost := f.amount(row.get("cost"), "cost")) is not None:
                usage["total_cost_usd"] = cost
            if (calls := f.count(row.get("api_calls"), "api_calls")) is not None:
                usage["n_llm_calls"] = calls
            yield parse_record(EpisodeRecord, {
                "experiment_id": eid, "task_id": iid, "trajectory_id": iid, "attempt": 0,
                "reward": 1.0 if row["resolved"] else 0.0, "usage": usage,
                "extra": f.attach({})}, file=file, record=iid)
        except InputError as exc:
            yield exc.problem


_ID_LISTS = ("incomplete_ids", "error_ids", "empty_patch_ids", "unresolved_ids",
             "resolved_ids", "resolved")


def _ids(report: dict[str, Any], *keys: str) -> list[str]:
    for k in keys:
        v = report.get(k)
        if isinstance(v, list):
            return [str(x) for x in v]
    return []


def _bad_id_list(report: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, reason)`` for the first outcome list that is not a list of instance ids.

    Every outcome of a report is relative to the others (an instance missing from
    ``resolved_ids`` is a failure), so one unreadable list makes the whole report
    unreadable: a ``"resolved"`` written as one comma-separated string would otherwise
    turn its resolved instances into failures with no word."""
    for key in _ID_LISTS:
        v = report.get(key)
        if v is None or (isinstance(v, list) and all(
                isinstance(x, str) and x for x in v)):
            continue
        what = describe(v) if not isinstance(v, list) else "a list with an item that is " \
            "not an instance id"
        return key, (f"{what}, expected a list of instance ids; the report's outcomes "
                     "cannot be read without it (nothing stored from this report)")
    return None


def read_report(folder: Path) -> Iterator[Item]:
    """A SWE-bench harness ``results/results.json`` with ``metadata.yaml``."""
    path = folder / REPORT
    try:
        report = _obj(path)
    except InputError as exc:
        yield exc.problem
        return
    meta: dict[str, Any] = {}
    if (folder / "metadata.yaml").is_file():
        try:
            loaded = yaml.safe_load((folder / "metadata.yaml").read_text(encoding="utf-8"))
            meta = loaded if isinstance(loaded, dict) else {}
        except (yaml.YAMLError, OSError) as exc:
            yield Problem(str(folder / "metadata.yaml"), f"unreadable metadata: {exc}")
    bad = _bad_id_list(report)
    if bad is not None:
        yield Problem(str(path), bad[1], field=bad[0])
        return
    outcome: dict[str, tuple[float, dict[str, Any]]] = {}
    # Later assignments win: resolved is the strongest statement about an instance.
    for iid in _ids(report, "incomplete_ids"):
        outcome[iid] = (0.0, {"status": "incomplete", "error_type": "not_submitted"})
    for iid in _ids(report, "error_ids"):
        outcome[iid] = (0.0, {"status": "error", "error_type": "harness_error"})
    for iid in _ids(report, "empty_patch_ids"):
        outcome[iid] = (0.0, {"error_type": "empty_patch"})
    for iid in _ids(report, "unresolved_ids"):
        outcome[iid] = (0.0, {})
    for iid in _ids(report, "resolved_ids", "resolved"):
        outcome[iid] = (1.0, {})
    notes = Fields(path, strict=False)
    total = notes.count(report.get("total_instances"), "total_instances")
    n_tasks = len(outcome) if total is None else total
    benchmark = "swe-bench"
    index_path = folder.parent / "index.json"
    index: dict[str, Any] = {}
    if index_path.is_file():
        try:
            index = _obj(index_path)
        except InputError as exc:
            yield exc.problem
    if "java" in str(folder.resolve()).lower():
        benchmark = "swe-bench-java-verified"
    exp = _experiment(folder, str(meta.get("name") or folder.name), benchmark, n_tasks,
                      extra=notes.attach({"harness_report": {
                          k: v for k, v in report.items()
                          if isinstance(v, int | float) and not isinstance(v, bool)}}))
    yield exp
    if len(outcome) != n_tasks:
        yield Problem(str(path), f"the report lists {len(outcome)} instances but "
                      f"total_instances is {n_tasks}", field="total_instances")
    for iid in sorted(set(index) - set(outcome)):
        yield Problem(str(path), "instance of index.json missing from the report "
                      "(outcome unknown, not counted)", record=iid)
    for iid, (reward, fields) in sorted(outcome.items()):
        try:
            yield _episode(exp.experiment_id, iid, reward, path, **fields)
        except InputError as exc:
            yield exc.problem


def read_pro(folder: Path) -> Iterator[Item]:
    """SWE-Bench Pro ``eval_results.json`` (``{instance_id: resolved}``)."""
    path = folder / PRO
    try:
        results = _obj(path)
    except InputError as exc:
        yield exc.problem
        return
    # SWE-Bench Pro names runs, not models: the model comes from the run label via the
    # names table (records.names); the label itself stays the agent's name
    exp = _experiment(folder, folder.name, "swe-bench-pro", len(results),
                      model=model_from_label(folder.name))
    yield exp
    for iid, resolved in results.items():
        if not isinstance(resolved, bool):
            yield Problem(str(path), "resolved must be true or false", field=str(iid),
                          record=str(iid))
            continue
        try:
            yield _episode(exp.experiment_id, str(iid), 1.0 if resolved else 0.0, path)
        except InputError as exc:
            yield exc.problem


def read_swebench_dir(folder: Path) -> Iterator[Item]:
    if (folder / DETAILS).is_file():
        yield from read_details(folder)
    elif (folder / PRO).is_file():
        yield from read_pro(folder)
    else:
        yield from read_report(folder)


DOCENT_HEADER = b"agent_run_id,metadata.instance_id,metadata.model_name,metadata.resolved"


def is_docent_csv(path: Path) -> bool:
    return path.suffix == ".csv" and head_bytes(path, 200).startswith(DOCENT_HEADER)


def read_docent_csv(path: Path) -> Iterator[Item]:
    """SWE-Bench Pro runs exported from Docent: one experiment per ``metadata.model_name``."""
    by_run: dict[str, list[tuple[int, dict[str, str]]]] = {}
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            for line, row in enumerate(csv.DictReader(fh), start=2):
                by_run.setdefault(row.get("metadata.model_name") or "", []).append((line, row))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        yield Problem(str(path), f"unreadable CSV: {exc}")
        return
    for run, rows in sorted(by_run.items()):
        if not run:
            for line, _ in rows:
                yield Problem(str(path), "row without a run label", field="metadata.model_name",
                              line=line)
            continue
        exp = ExperimentRecord(
            experiment_id=experiment_id_for(f"swe-bench-pro-docent/{run}", _ID_NAMESPACE),
            experiment_name=run, framework_name="swe-bench",
            agent=AgentInfo(name=run, config={"system": run, "source": "docent"},
                            llm_model=model_from_label(run)),
            benchmark_name="swe-bench-pro",
            benchmark_subset=BenchmarkSubset(name="swe-bench-pro", n_tasks=len(rows)),
            labels={"system": run, "source": "docent"})
        yield exp
        for line, row in rows:
            iid, resolved = row.get("metadata.instance_id"), row.get("metadata.resolved")
            turns = row.get("metadata.turns") or ""
            if not iid or resolved not in ("true", "false"):
                yield Problem(str(path), "needs metadata.instance_id and metadata.resolved "
                              "true/false", field="metadata.resolved", line=line, record=iid)
                continue
            f = Fields(path, iid, line=line)
            try:
                # a CSV writes numbers as text: the one coercion rule with strings
                n_turns = f.count(turns or None, "metadata.turns", strings=True)
                yield parse_record(EpisodeRecord, {
                    "experiment_id": exp.experiment_id, "task_id": iid, "attempt": 0,
                    "trajectory_id": row.get("agent_run_id") or iid,
                    "reward": 1.0 if resolved == "true" else 0.0,
                    "n_agent_steps": n_turns,
                    "extra": f.attach({"created_at": row.get("created_at")}),
                }, file=str(path), record=iid)
            except InputError as exc:
                yield Problem(exc.problem.file, exc.problem.reason, field=exc.problem.field,
                              line=line, record=iid)


ADAPTER = Adapter(
    name="swebench",
    kind="dir",
    detect=is_swebench_dir,
    read=read_swebench_dir,
    priority=30,
    rows=True,
    description="SWE-bench system folder: per_instance_details.json (leaderboard), "
    "results/results.json (harness report) or eval_results.json (SWE-Bench Pro)",
)

ADAPTERS = (
    Adapter(
        name="swebench-pro-docent",
        kind="file",
        detect=is_docent_csv,
        read=read_docent_csv,
        priority=30,
        rows=True,
        description="SWE-Bench Pro runs exported from Docent (agent_runs_data.csv)",
    ),
)
