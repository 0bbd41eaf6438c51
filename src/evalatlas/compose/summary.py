"""The summary table, composed once for ``ea.summary``, ``evalatlas summary`` and the
report's leaderboard (store -> rows -> analysis -> :class:`SummaryResult`).

What it adds to the per-group numbers of :mod:`evalatlas.analysis.summary`:

- **selection** by experiment, benchmark and agent (ids or names as people type them,
  matched by :mod:`evalatlas.selectors` through :mod:`evalatlas.store.selection`); an
  unknown or ambiguous one an :class:`~evalatlas.errors.ArgumentError` listing the
  closest;
- **never pooling benchmarks**: grouped by agent (the default), an agent that ran several
  benchmarks gets a row per benchmark (``group_by`` becomes ``["benchmark", "agent"]``),
  each with its own pass@k and intervals; rates of different benchmarks never share a row;
- **run status** per row (:mod:`evalatlas.analysis.run_status`): ``incomplete`` with the
  note "incomplete: 56 of 80 planned samples (...)" when any of its experiments did not
  finish, and ``planned_samples``;
- the source's **published headline** beside the success rate, with a short reason when
  they differ (:func:`evalatlas.analysis.published.headline_reason`);
- **cost per episode and per success** with task-clustered intervals;
- the **judge's (evaluation) tokens and cost** apart from the agent's and the run's
  total, agent plus judge (:func:`evalatlas.analysis.summary.judge_usage_fields`), with
  a note saying what they sum;
- rows **ranked** by success rate, ties by name (within each benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalatlas.analysis.published import (
    disagreement_note,
    headline_reason,
    headlines,
    published_rows,
)
from evalatlas.analysis.run_status import group_status, incomplete_note, run_status
from evalatlas.analysis.summary import (
    GROUP_KEY,
    SummaryResult,
    cost_rows,
    coverage_notes,
    group_rows,
    merge_outcomes,
    outcome_rows,
    rank_rows,
    summary_result,
)
from evalatlas.selectors import as_selectors
from evalatlas.store.catalog import experiment_catalog
from evalatlas.store.costs import unknown_price_models
from evalatlas.store.db import StoreConnection
from evalatlas.store.published import published_metrics, score_values, source_notes
from evalatlas.store.selection import experiments_of
from evalatlas.store.summary_scan import summary_scan

SPLIT = "_agent_in_benchmark"
"""The internal grouping (:data:`evalatlas.store.queries.GROUPS`) of agents within
benchmarks: key ``<benchmark>\x1f<agent id>``."""


def _benchmark_blocks(catalog: list[dict[str, Any]], ids: list[str] | None) -> bool:
    """Whether some agent ran several benchmarks in the selection (then grouping by
    agent alone would pool them)."""
    wanted = None if ids is None else set(ids)
    benches: dict[str, set[str]] = {}
    for r in catalog:
        if r["episodes"] and (wanted is None or r["experiment_id"] in wanted):
            benches.setdefault(r["agent_id"], set()).add(r["benchmark"])
    return any(len(b) > 1 for b in benches.values())


def _rows(store: StoreConnection, groups: list[str], ids: list[str] | None, *, confidence: float,
          ks: Sequence[int] | None, outcome: str, missing: str) -> list[dict[str, Any]]:
    """The per-group numbers of one block of experiments (None: all), from two scans of
    the episodes (:func:`evalatlas.store.summary_scan.summary_scan`)."""
    scan = summary_scan(store, groups, experiment=ids, outcome=outcome)
    rows = group_rows(scan.totals, scan.errors,
                      scan.rewards, groups, confidence=confidence, missing=missing)
    if len(groups) == 1:
        labels = {r["k0"]: r["g0"] for r in scan.totals}
        merge_outcomes(rows, outcome_rows(scan.outcomes, labels, groups[0], ks=ks,
                                          confidence=confidence), groups[0])
        costs = cost_rows(scan.costs, confidence)
        for row in rows:
            row.update(costs.get(row[GROUP_KEY][0], _NO_COST))
    members: dict[tuple, list[str]] = {}
    for r in scan.members:
        members.setdefault(tuple(r[f"k{i}"] for i in range(len(groups))), []).append(
            r["experiment_id"])
    for row in rows:
        row["_experiments"] = members.get(tuple(row[GROUP_KEY]), [])
    return rows


JUDGE_USAGE_NOTE = (
    "judge tokens and cost are the evaluation's (an LLM judge, a grader or scorer model), "
    "shown apart from the agent's; the run's total is agent plus judge")
INSPECT_USAGE_NOTE = (
    "; for Inspect logs both are sums of the per-sample model_usage (the log header's "
    "stats.model_usage also counts retried attempts, so it can be higher)")
"""The note of a summary with judge usage: what the judge and total columns hold (the
Inspect part when an Inspect log is selected)."""

_NO_COST = {"cost_per_episode": None, "cost_per_episode_ci_low": None,
            "cost_per_episode_ci_high": None, "cost_per_success": None,
            "cost_per_success_ci_low": None, "cost_per_success_ci_high": None}


def summary_of(
    store: StoreConnection, by: Sequence[str] = ("agent",), *,
    experiment: Sequence[str] | None = None, benchmark: Sequence[str] | None = None,
    agent: Sequence[str] | None = None, confidence: float = 0.95,
    ks: Sequence[int] | None = None, outcome: str = "any", missing: str = "ignore",
) -> SummaryResult:
    """The summary of the selected experiments (see the module docstring); the result of
    :func:`evalatlas.summary` and the rows of the report's leaderboard."""
    groups = list(by)
    catalog = experiment_catalog(store, tasks=False)  # run status, blocks: no task count
    # names people type -> experiment ids, by the one matcher (evalatlas.selectors)
    ids = experiments_of(store, experiment=experiment, agent=agent, benchmark=benchmark)
    blocks = groups == ["agent"] and _benchmark_blocks(catalog, ids)
    kw: dict[str, Any] = {"confidence": confidence, "ks": ks, "outcome": outcome,
                          "missing": missing}
    if ids is not None and not ids:
        rows: list[dict[str, Any]] = []
    elif not blocks:
        rows = _rows(store, groups, ids, **kw)
    else:
        # one pass grouped by (benchmark, agent), then the key split into its two parts
        names = {r["agent_id"]: r["agent_name"] for r in catalog}
        rows = []
        for r in _rows(store, [SPLIT], ids, **kw):
            bench, agent_id = str(r.pop(SPLIT)).split("\x1f", 1)
            rows.append({"benchmark": bench, "agent": names.get(agent_id, agent_id),
                         "agent_id": agent_id, **r})
        groups = ["benchmark", *groups]
    statuses = {r["experiment_id"]: {**run_status(r), "name": r["experiment_name"]}
                for r in catalog}
    epochs = {r["experiment_id"]: r.get("inspect_epochs") for r in catalog}
    published = [] if ids is not None and not ids else published_rows(
        published_metrics(store, ids), lambda exp_id, score: score_values(store, exp_id,
                                                                          score))
    heads = headlines(published)
    for row in rows:
        exps = row.pop("_experiments")
        row.pop(GROUP_KEY)
        st = group_status([statuses[e] for e in exps if e in statuses])
        row.update(run_status=st["status"], run_status_note=st["run_status_note"],
                   planned_samples=st["planned_samples"])
        row["sample_coverage"] = (f"{row['episodes']} / {st['planned_samples']}"
                                  if st["planned_samples"]
                                  and row["episodes"] < st["planned_samples"] else None)
        row["published"] = [
            {"experiment": statuses[e]["name"], **heads[e],
             "differs_because": headline_reason(heads[e], row.get("success_rate"),
                                                epochs=epochs.get(e),
                                                experiments=len(exps),
                                                mean_reward=row.get("mean_reward"))}
            for e in exps if e in heads]
    rows = rank_rows(rows, groups)
    # every episode is in a row when nothing is selected: their count of unknown costs
    # spares the query when it is 0
    unpriced = unknown_price_models(store, without_cost=None if ids is not None else sum(
        int(r["cost_unknown_episodes"]) for r in rows))
    result = summary_result(rows, groups, confidence=confidence,
                            unknown_price_models=unpriced)
    result.meta.update(outcome=outcome, missing=missing,
                       benchmark=as_selectors(benchmark, "benchmark"),
                       agent=as_selectors(agent, "agent"))
    if blocks:
        result.notes.append(
            "agents that ran several benchmarks have one row per benchmark: success rates "
            "of different benchmarks are never pooled (benchmark= picks one)")
    result.notes.extend(incomplete_note([r for r in catalog
                                         if ids is None or r["experiment_id"] in set(ids)]))
    result.notes.extend(coverage_notes(rows, groups))
    if any(r.get("judge_usage_episodes") for r in rows):
        inspect = any(r["framework"] == "inspect_ai" for r in catalog
                      if ids is None or r["experiment_id"] in set(ids))
        result.notes.append(JUDGE_USAGE_NOTE + (INSPECT_USAGE_NOTE if inspect else ""))
    result.meta["published"] = published
    note = disagreement_note(published)
    if note:
        result.notes.append(note)
    result.notes.extend(source_notes(store, ids))
    return result

