"""SWE-Bench Pro as upstream publishes it: a Docent CSV beside ``<run>/eval_results.json``
folders. Both sources describe the same runs under different labels, so the folder is
read as one source and **one experiment per real run** comes out.

Same run: two runs of different sources are the same run when
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

The correlation is :func:`evalatlas.stats.agreement.phi_agreement`; the two sources are
read by :mod:`evalatlas.adapters.swebench` (``read_pro``, ``read_docent_csv``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.swebench import PRO, is_docent_csv, read_docent_csv, read_pro
from evalatlas.errors import Problem
from evalatlas.records.models import AgentInfo, BenchmarkSubset, EpisodeRecord, ExperimentRecord
from evalatlas.records.names import model_from_label
from evalatlas.stats.agreement import phi_agreement


def _phi(a: dict[str, bool], b: dict[str, bool]
         ) -> tuple[float | None, float | None, int]:
    """Phi, agreement and count of two runs' outcomes over their shared instances."""
    shared = sorted(a.keys() & b.keys())
    return phi_agreement([a[i] for i in shared], [b[i] for i in shared])


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
    try:  # no CSV named there: not one (before sniffing every file with every adapter,
        # 3 of the 5 ms of planning the SWE-bench Verified folder's 21 directories)
        if not any(name.endswith(".csv") and not name.startswith(".")
                   for name in os.listdir(path)):
            return False
    except OSError:
        return False
    csvs, runs, other = _pro_children(path)
    return bool(csvs) and bool(runs) and not other


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
        for m in {r.model for r in other if r.model is not None} & set(models):
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
    name="swebench-pro",
    kind="dir",
    detect=is_pro_folder,
    read=read_pro_folder,
    priority=29,
    description="SWE-Bench Pro folder: Docent CSV beside <run>/eval_results.json; "
    "the same run in both becomes one experiment (both labels kept)",
)
