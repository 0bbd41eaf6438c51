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
- **SWE-Bench Pro folder** (a Docent CSV beside ``<run>/eval_results.json`` folders, as
  upstream publishes them): both sources describe the same runs under different labels,
  so the folder is read as one source and **one experiment per real run** comes out.

Same run (SWE-Bench Pro folder): two runs of different sources are the same run when
they hold exactly the same instance ids with exactly the same resolved flag on every
one, over at least :data:`SAME_RUN_MIN_INSTANCES` instances with both outcomes present,
and each source has exactly one such run. Why outcomes and this bound: the sources share
no run id (the directory is named by hand, the CSV carries Docent's per-trajectory ids
and an export date), so the per-instance outcomes are the evidence; the closest two
*different* runs in the public data (the same model's run re-evaluated on a superset of
instances) agree on 96-97% of shared instances, so identical flags on 200 instances
happen by chance with probability below 0.97^200 = 0.2%. Runs that look identical over
fewer instances are kept apart with a note. Nothing is merged on labels: the labels are
what disagree.

The merged experiment keeps the per-run directory's id (ingesting that directory alone
gives the same experiment), its episodes (``trajectory_id`` = instance id) gain the
CSV's turns and ``extra.agent_run_id``, and every source's label is kept in
``extra["source_labels"]`` ({file: label}) and as labels ``run_dir`` / ``docent_run``.
The model comes from the labels through :mod:`evalatlas.records.names`. Where the
labels name different models, the per-instance data decides: the model whose *other*
runs in the folder correlate best with this run's outcomes (phi over at least
:data:`EVIDENCE_MIN_SHARED` shared instances) wins when it leads by
:data:`EVIDENCE_MARGIN`; otherwise the directory's label stands ("undecided"). The run
is then named by the label that names the chosen model. Every disagreement (model or
run tag, e.g. ``paper`` vs ``10132025``) is written to ``extra["source_notes"]``, which
``summary`` prints. Real case: Docent's ``Claude Opus 4.1 - paper`` is upstream's
``claude-sonnet-4-paper`` file instance for instance, and its outcomes correlate phi 0.90
with upstream's ``claude-opus-4-1-paper`` (the pattern of a same-label pair such as the
two Gemini ``paper`` runs, phi 0.89) against at most 0.62 with any Sonnet 4 run: it is
stored as ``claude-opus-4-1``, and the directory name is the label found wrong.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
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
    for iid, row in details.items():
        if not isinstance(row, dict) or not isinstance(row.get("resolved"), bool):
            yield Problem(str(path), "expected {resolved: bool, cost, api_calls}",
                          field="resolved", record=str(iid))
            continue
        f = Fields(path, str(iid))
        try:
            # the one coercion rule: a wrong type quarantines the instance, a negative
            # cost or call count is missing with a note
            usage = {k: v for k, v in (
                ("total_cost_usd", f.amount(row.get("cost"), "cost")),
                ("n_llm_calls", f.count(row.get("api_calls"), "api_calls"))) if v is not None}
            yield _episode(exp.experiment_id, str(iid), 1.0 if row["resolved"] else 0.0, path,
                           usage=usage, extra=f.attach({}))
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


# -- SWE-Bench Pro folder: both sources, one experiment per real run -------------------

SAME_RUN_MIN_INSTANCES = 200
"""Fewest instances on which identical outcomes are taken as the same run (docstring)."""
EVIDENCE_MIN_SHARED = 50
"""Fewest shared instances for a correlation to count as evidence for a model."""
EVIDENCE_MARGIN = 0.1
"""How much higher (phi) the chosen model's evidence must be than the runner-up's."""


@dataclass
class _ProRun:
    """One run as one source describes it (``source``: the file name it came from)."""

    source: str
    label: str
    exp: ExperimentRecord
    episodes: list[EpisodeRecord] = field(default_factory=list)

    @property
    def outcomes(self) -> dict[str, bool]:
        return {e.task_id: bool(e.reward) for e in self.episodes}

    @property
    def model(self) -> str | None:
        return model_from_label(self.label)


def _pro_children(folder: Path) -> tuple[list[Path], list[Path], bool]:
    """(Docent CSVs, run directories, whether anything else ingestible is there)."""
    from evalatlas.adapters.registry import detect  # the registry imports this module

    csvs, runs, other = [], [], False
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return [], [], True
    for name in names:
        if name.startswith("."):
            continue
        child = folder / name
        if child.is_dir():
            if (child / PRO).is_file():
                runs.append(child)
            else:
                other = True
        elif is_docent_csv(child):
            csvs.append(child)
        elif child.is_file() and detect(child, "file") is not None:
            other = True
    return csvs, runs, other


def is_pro_folder(path: Path) -> bool:
    """A folder holding a Docent CSV and SWE-Bench Pro run directories, and nothing else
    ingestible (otherwise each source is read on its own, as before)."""
    if not path.is_dir() or (path / PRO).is_file():
        return False
    csvs, runs, other = _pro_children(path)
    return bool(csvs) and bool(runs) and not other


def _phi(a: dict[str, bool], b: dict[str, bool]
         ) -> tuple[float | None, float | None, int]:
    """Phi (Matthews) correlation, agreement and count over the shared instances; phi is
    None when either side is constant there."""
    shared = a.keys() & b.keys()
    if not shared:  # nothing to compare: no agreement figure, not 0%
        return None, None, 0
    n11 = sum(1 for i in shared if a[i] and b[i])
    n10 = sum(1 for i in shared if a[i] and not b[i])
    n01 = sum(1 for i in shared if b[i] and not a[i])
    n00 = len(shared) - n11 - n10 - n01
    den = math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
    agree = (n11 + n00) / len(shared)
    return ((n11 * n00 - n10 * n01) / den if den else None), agree, len(shared)


def _run_tag(label: str) -> str:
    """The last word of a run label (``paper``, ``10132025``)."""
    return label.strip().lower().replace("_", "-").replace(" ", "-").split("-")[-1]


def _read_pro_sources(folder: Path, csvs: list[Path], dirs: list[Path]
                      ) -> tuple[list[_ProRun], list[Problem]]:
    runs: list[_ProRun] = []
    problems: list[Problem] = []
    streams: list[tuple[str | None, str, Iterator[Item]]] = [
        (d.name, PRO, read_pro(d)) for d in dirs]
    streams += [(None, c.name, read_docent_csv(c)) for c in csvs]
    for label, source, items in streams:
        current: _ProRun | None = None
        for item in items:
            if isinstance(item, Problem):
                problems.append(item)
            elif isinstance(item, ExperimentRecord):
                current = _ProRun(source, label or item.experiment_name, item)
                runs.append(current)
            elif isinstance(item, EpisodeRecord) and current is not None:
                current.episodes.append(item)
    return runs, problems


def _same_runs(runs: list[_ProRun]) -> tuple[list[list[_ProRun]], dict[int, list[str]]]:
    """Groups of runs that are one run (the rule in the module docstring), primary first
    (a run directory before a CSV), and notes for identical runs left apart."""
    by_outcomes: dict[frozenset[tuple[str, bool]], list[_ProRun]] = {}
    for run in runs:
        by_outcomes.setdefault(frozenset(run.outcomes.items()), []).append(run)
    groups: list[list[_ProRun]] = []
    notes: dict[int, list[str]] = {}
    for run in runs:
        key = frozenset(run.outcomes.items())
        same = by_outcomes.get(key)
        if same is None:
            continue  # already grouped
        del by_outcomes[key]
        same.sort(key=lambda r: (r.source != PRO, r.source, r.label))
        sources = [r.source for r in same]
        resolved = sum(same[0].outcomes.values())
        n = len(same[0].outcomes)
        if len(same) == 1:
            groups.append(same)
            continue
        why = None
        if len(set(sources)) < len(sources):
            why = "more than one run of the same source has them, so which is which is unclear"
        elif n < SAME_RUN_MIN_INSTANCES or resolved in (0, n):
            why = (f"only {n} instances" if n < SAME_RUN_MIN_INSTANCES
                   else "every outcome is the same") + ", too little to tell one run from two"
        if why is None:
            groups.append(same)
            continue
        names = ", ".join(f"{r.label!r} ({r.source})" for r in same)
        for r in same:
            groups.append([r])
            notes.setdefault(id(r), []).append(
                f"{names} have identical per-instance outcomes ({resolved}/{n} resolved) but "
                f"are kept as separate experiments: {why}")
    return groups, notes


def _choose_model(group: list[_ProRun], others: list[list[_ProRun]]
                  ) -> tuple[str | None, str | None]:
    """The model of a run whose sources name different models, and the note saying why:
    the per-instance evidence (module docstring)."""
    models = sorted({m for r in group if (m := r.model) is not None})
    primary = group[0].model
    if len(models) < 2:
        return (models[0] if models else None), None
    outcomes = group[0].outcomes
    evidence: dict[str, tuple[float, float, int, str]] = {}
    for other in others:
        phi, agree, n = _phi(outcomes, other[0].outcomes)
        if phi is None or agree is None or n < EVIDENCE_MIN_SHARED:
            continue
        for m in set(models).intersection(r.model for r in other):
            if m not in evidence or phi > evidence[m][0]:
                evidence[m] = (phi, agree, n, other[0].label)
    ranked = sorted(models, key=lambda m: -(evidence[m][0] if m in evidence else -2.0))
    labels = " vs ".join(f"{r.label!r} ({r.source}: {r.model or 'no known model'})"
                         for r in group)
    n = len(outcomes)
    head = (f"the sources name the same run ({n} instances, identical resolved flags) with "
            f"different models: {labels}")

    def said(m: str) -> str:
        if m not in evidence:
            return f"no other run named {m} shares {EVIDENCE_MIN_SHARED}+ instances"
        phi, agree, shared, label = evidence[m]
        return (f"phi {phi:.2f} ({100 * agree:.1f}% agreement on {shared} instances) with "
                f"{label!r}, named {m}")

    best = ranked[0]
    second = evidence[ranked[1]][0] if ranked[1] in evidence else None
    if best in evidence and (second is None or evidence[best][0] - second >= EVIDENCE_MARGIN):
        return best, (f"{head}; the per-instance outcomes support {best}: "
                      + "; ".join(said(m) for m in ranked) + f". Stored as {best}.")
    return primary, (f"{head}; the per-instance outcomes cannot decide ("
                     + "; ".join(said(m) for m in ranked)
                     + f"). Kept the run directory's model, {primary}, undecided.")


def _max_turns(runs: list[_ProRun]) -> int | None:
    turns = [e.n_agent_steps for r in runs for e in r.episodes if e.n_agent_steps is not None]
    return max(turns) if turns else None


def _choose_tag(group: list[_ProRun], model: str | None, others: list[list[_ProRun]]
                ) -> tuple[_ProRun, str | None]:
    """The label to name a run by when its sources' run tags differ (``paper`` vs
    ``10132025``: upstream's cost-limited paper runs vs its 250-turn leaderboard runs),
    and the note. Evidence: the run's largest per-instance turn count against the range
    of the largest turn counts of the folder's other runs carrying each tag (a turn limit
    shows there); the nearer range wins, a tie keeps the label of the chosen model."""
    candidates = [r for r in group if r.model == model] or group
    default = candidates[0]
    tags = {r.label: _run_tag(r.label) for r in group}
    if len(set(tags.values())) < 2:
        return default, None
    labels = " vs ".join(f"{r.label!r} ({r.source})" for r in group)
    head = f"the sources give the same run different run tags: {labels}"
    mine = _max_turns(group)
    ranges: dict[str, tuple[int, int]] = {}
    for other in others:
        top = _max_turns(other)
        if top is None:
            continue
        for tag in {_run_tag(r.label) for r in other} & set(tags.values()):
            lo, hi = ranges.get(tag, (top, top))
            ranges[tag] = (min(lo, top), max(hi, top))
    if mine is None or len(ranges) < 2:
        return default, (f"{head}; no turn counts to decide by; kept as "
                         f"{default.label!r}, every label in extra.source_labels")

    def distance(tag: str) -> int:
        lo, hi = ranges[tag]
        return max(lo - mine, mine - hi, 0)

    said = "largest turn count of the other runs: " + ", ".join(
        f"{ranges[t][0]}-{ranges[t][1]} for {t!r}" for t in sorted(ranges))
    ranked = sorted(ranges, key=distance)
    chosen = next((r for r in candidates if tags[r.label] == ranked[0]), None)
    if distance(ranked[0]) == distance(ranked[1]) or chosen is None:
        return default, (f"{head}; its per-instance turns reach at most {mine} ({said}), "
                         f"which cannot decide; kept as {default.label!r}")
    return chosen, (f"{head}; its per-instance turns reach at most {mine} ({said}): the "
                    f"data support {ranked[0]!r}; named {chosen.label!r}, every label in "
                    "extra.source_labels")


def _merge(group: list[_ProRun], model: str | None, notes: list[str],
           others: list[list[_ProRun]]) -> tuple[ExperimentRecord, list[EpisodeRecord]]:
    primary = group[0]
    named, why = _choose_tag(group, model, others)
    if why:
        notes.append(why)
    name = named.label
    source_labels = {r.source: r.label for r in group}
    labels = {"system": name, "source": "+".join(sorted(source_labels)),
              "run_dir": next((r.label for r in group if r.source == PRO), ""),
              "docent_run": next((r.label for r in group if r.source != PRO), "")}
    outcomes = primary.outcomes
    exp = ExperimentRecord(
        experiment_id=primary.exp.experiment_id, experiment_name=name,
        framework_name="swe-bench",
        agent=AgentInfo(name=name, config={"system": name, "source_labels": source_labels},
                        llm_model=model),
        benchmark_name="swe-bench-pro",
        benchmark_subset=BenchmarkSubset(name="swe-bench-pro", n_tasks=len(outcomes)),
        labels={k: v for k, v in labels.items() if v},
        extra={"source_labels": source_labels,
               "source_models": {r.source: r.model for r in group},
               "same_run": {"instances": len(outcomes), "resolved": sum(outcomes.values()),
                            "rule": "identical instance ids and resolved flags"},
               **({"source_notes": notes} if notes else {})})
    richer = {e.task_id: e for r in group[1:] for e in r.episodes}
    episodes = []
    for ep in primary.episodes:
        other = richer.get(ep.task_id)
        if other is None:
            episodes.append(ep)
            continue
        extra = {**ep.extra, **other.extra}
        if other.trajectory_id != ep.trajectory_id:
            extra["agent_run_id"] = other.trajectory_id
        episodes.append(ep.model_copy(update={
            "n_agent_steps": ep.n_agent_steps if ep.n_agent_steps is not None
            else other.n_agent_steps, "extra": extra}))
    return exp, episodes


def read_pro_folder(folder: Path) -> Iterator[Item]:
    """A SWE-Bench Pro folder (Docent CSV + run directories): one experiment per real
    run, by the same-run rule of the module docstring."""
    csvs, dirs, _ = _pro_children(folder)
    runs, problems = _read_pro_sources(folder, csvs, dirs)
    yield from problems
    groups, kept_apart = _same_runs(runs)
    for group in groups:
        notes = list(kept_apart.get(id(group[0]), []))
        if len(group) == 1:
            run = group[0]
            exp = run.exp
            if notes:
                exp = exp.model_copy(update={"extra": {**exp.extra, "source_notes": notes}})
            yield exp
            yield from run.episodes
            continue
        others = [g for g in groups if g is not group]
        model, why = _choose_model(group, others)
        if why:
            notes.append(why)
        exp, episodes = _merge(group, model, notes, others)
        yield exp
        yield from episodes


ADAPTER = Adapter(
    name="swebench",
    kind="dir",
    detect=is_swebench_dir,
    read=read_swebench_dir,
    priority=30,
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
        description="SWE-Bench Pro runs exported from Docent (agent_runs_data.csv)",
    ),
    Adapter(
        name="swebench-pro",
        kind="dir",
        detect=is_pro_folder,
        read=read_pro_folder,
        priority=29,
        description="SWE-Bench Pro folder: Docent CSV beside <run>/eval_results.json; "
        "the same run in both becomes one experiment (both labels kept)",
    ),
)
