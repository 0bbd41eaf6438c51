"""Summary per group (agent by default): the numbers of ``evalatlas summary`` / ``ea.summary``.

Inputs are the grouped frames of :mod:`evalatlas.store.queries` and
:mod:`evalatlas.store.outcomes` (aggregated in DuckDB); every number below comes from
:mod:`evalatlas.stats` and :mod:`evalatlas.metrics.outcomes`:

- success rate over the episodes whose outcome is known (``success`` not null), with its
  Wilson interval (:func:`wilson_interval`); ``outcome_unknown_episodes`` counts the
  others;
- the same rate with a **clustered** interval, tasks as clusters (Miller 2024,
  :func:`mean_with_interval` with ``clusters``): repeated attempts of one task are not
  independent, so this is the honest interval when tasks have several attempts;
- mean reward with a task-clustered interval;
- pass@k for k = 1 .. the most scored attempts of a task, or the ks asked for, per task
  with the unbiased estimator (:func:`pass_at_k_counts`) averaged over the tasks with at
  least k scored attempts (``tasks`` of ``tasks_total``), each with an
  interval over tasks kept inside [0, 1] (:func:`bounded_mean_interval`);
- cost: ``total_cost_usd`` sums the episodes whose cost is known and
  ``cost_unknown_episodes`` counts the others, so an unknown cost never reads as $0;
- the judge's (evaluation) tokens and cost apart from the agent's, and the run's total,
  agent plus evaluation (:func:`judge_usage_fields`); None without judge usage.

Clustered intervals come from per-task totals (count, sum, sum of squares) aggregated in
DuckDB (:func:`~evalatlas.stats.standard_errors.clustered_mean_interval`): no per-episode
row leaves the database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalatlas.analysis.results import TableResult
from evalatlas.metrics.outcomes import attempt_k_values, pass_at_k_counts, pass_hat_k_counts
from evalatlas.records.names import benchmark_tasks
from evalatlas.stats.bounded import (
    bounded_interval_from_totals,
    bounded_mean_interval,
    nonnegative_ratio_interval,
)
from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.standard_errors import clustered_mean_interval


@dataclass
class SummaryResult(TableResult):
    """One row per group: the group key(s) (``agent_id`` too when grouped by agent),
    experiments, episodes, tasks, successes, outcome_unknown_episodes, success_rate
    [success_rate_ci_low, success_rate_ci_high] (Wilson), mean_reward [CI, tasks
    clustered], errors, errors_by_type, total_tokens, mean_tokens, total_cost_usd,
    cost_unknown_episodes, cost_computed_episodes, mean_wall_time_s, judge_usage_episodes,
    judge_tokens, judge_cost_usd, judge_cost_unknown_episodes, run_total_tokens,
    run_total_cost_usd (:func:`judge_usage_fields`); with one grouping key
    also success_rate_se_clustered, success_rate_clustered_ci_low/high, min_attempts,
    pass_at_k and pass_hat_k (``{k: {value, ci_low, ci_high, tasks, tasks_total}}``: over
    the ``tasks`` of ``tasks_total`` with at least k scored attempts), cost_per_episode and
    cost_per_success with ``*_ci_low``/``*_ci_high`` (task-clustered bootstrap; ``inf``
    cost per success when nothing succeeded). Composed rows
    (:mod:`evalatlas.compose.summary`) also carry run_status (``complete``/``incomplete``/
    None), run_status_note ("incomplete: 56 of 80 planned samples (...)"),
    planned_samples, sample_coverage ("56 / 80" when short) and published (the source's
    headline per experiment: source, board, metric, reducer, value, recomputed, agrees,
    differs_because). Rows are ranked by success rate, ties by name; grouped by agent,
    an agent that ran several benchmarks gets a row per benchmark (``benchmark`` first).

    ``meta``: group_by, confidence, unknown_price_models, outcome, missing, benchmark,
    agent, published (every number the sources published, recomputed and checked).
    """

    SCHEMA: ClassVar[str] = "evalatlas.summary/1"


def group_rows(
    totals: list[dict[str, Any]],
    errors: list[dict[str, Any]],
    rewards: dict[str, Any],
    by: list[str],
    *,
    confidence: float = 0.95,
    missing: str = "ignore",
) -> list[dict[str, Any]]:
    """Summary rows from :func:`~evalatlas.store.queries.summary_totals`,
    :func:`~evalatlas.store.queries.error_counts` and
    :func:`~evalatlas.store.queries.rewards_by_group` (same ``by``)."""
    n_keys = len(by)
    reward_ci = _mean_reward_intervals(rewards, n_keys, confidence)
    by_kind: dict[tuple, dict[str, int]] = {}
    for r in errors:
        gk = tuple(r[f"k{i}"] for i in range(n_keys))
        by_kind.setdefault(gk, {})[r["kind"]] = int(r["n"])
    out = []
    for r in totals:
        gk = tuple(r[f"k{i}"] for i in range(n_keys))
        n, s, known = int(r["episodes"]), int(r["successes"]), int(r["outcome_known"])
        # the experiments' n_tasks, or the names table's size of the benchmark (larger wins:
        # an adapter that can only count what it saw must not hide missing tasks)
        known_size = benchmark_tasks(r.get("benchmark_name"))
        sizes = [int(v) for v in (r.get("benchmark_tasks"), known_size) if v]
        total = max(sizes) if sizes else None
        n_missing = max(0, total - int(r["tasks"])) if total else 0
        denom = known
        if missing == "fail" and n_missing and r["tasks"]:
            # a missing task counts as failed attempts, as many as a reported task has
            denom += n_missing * max(1, round(known / int(r["tasks"])))
        lo, hi = wilson_interval(s, denom, confidence)
        row: dict[str, Any] = {name: r[f"g{i}"] for i, name in enumerate(by)}
        row[GROUP_KEY] = gk
        if "agent" in by and r["k" + str(by.index("agent"))]:
            row["agent_id"] = r["k" + str(by.index("agent"))]
        row.update({
            "experiments": int(r["experiments"]),
            "episodes": n,
            "tasks": int(r["tasks"]),
            "successes": s,
            "outcome_unknown_episodes": n - known,
            "judged_outcome_episodes": int(r.get("judged_outcomes") or 0),
            "benchmark_tasks": total,
            "task_coverage": (f"{int(r['tasks'])} / {total}"
                              if total and int(r["tasks"]) < total else None),
            "missing_as_failures": bool(missing == "fail" and n_missing),
            # more tasks than the names table says the benchmark has: instances of another
            # split or set are mixed in (SWE-Bench Pro runs with held-out ids)
            "tasks_beyond_benchmark": (int(r["tasks"]) - known_size
                                       if known_size and int(r["tasks"]) > known_size
                                       else None),
            "success_rate": s / denom if denom else None,
            "success_rate_ci_low": None if math.isnan(lo) else lo,
            "success_rate_ci_high": None if math.isnan(hi) else hi,
            "mean_reward": r["mean_reward"],
            "mean_reward_ci_low": reward_ci.get(gk, (None, None))[0],
            "mean_reward_ci_high": reward_ci.get(gk, (None, None))[1],
            "errors": int(r["errors"]),
            "errors_by_type": by_kind.get(gk, {}),
            "total_tokens": int(r["total_tokens"]) if r["total_tokens"] is not None else None,
            "mean_tokens": r["mean_tokens"],
            "total_cost_usd": r["total_cost_usd"],
            "cost_unknown_episodes": int(r["cost_unknown_episodes"]),
            "cost_computed_episodes": int(r["cost_computed_episodes"]),
            "mean_wall_time_s": r["mean_wall_time_s"],
        })
        row.update(judge_usage_fields(r, row["total_tokens"], r["total_cost_usd"]))
        out.append(row)
    return out


def judge_usage_fields(totals: dict[str, Any], agent_tokens: int | None,
                       agent_cost: float | None) -> dict[str, Any]:
    """The judge's (evaluation) usage of a group beside the agent's, and the run's total.

    Judge usage is what models other than the agent used to grade it (an LLM judge, a
    grader through Inspect's model roles, a scorer model), stored per episode as
    ``judge_usage``; for Inspect logs it is the sum of the per-sample ``model_usage`` of
    the other models (the header's ``stats.model_usage`` also counts retries, so it can
    be higher). ``run_total_tokens = total_tokens + judge_tokens`` and
    ``run_total_cost_usd = total_cost_usd + judge_cost_usd`` (known costs, as
    ``total_cost_usd``; ``cost_unknown_episodes`` and ``judge_cost_unknown_episodes``
    count the unknown ones). A group without any judge usage has None for all of these,
    never 0: that nothing was used by a judge is not known."""
    n = int(totals.get("judge_usage_episodes") or 0)
    tokens = totals.get("judge_tokens") if n else None
    cost = totals.get("judge_cost_usd") if n else None
    tokens = None if tokens is None else int(tokens)
    return {
        "judge_usage_episodes": n,
        "judge_tokens": tokens,
        "judge_cost_usd": cost,
        "judge_cost_unknown_episodes": int(totals.get("judge_cost_unknown_episodes") or 0),
        "run_total_tokens": (agent_tokens + tokens
                             if agent_tokens is not None and tokens is not None else None),
        "run_total_cost_usd": (agent_cost + cost
                               if agent_cost is not None and cost is not None else None),
    }


def _mean_reward_intervals(
    arrays: dict[str, Any], n_keys: int, confidence: float,
) -> dict[tuple, tuple[float | None, float | None]]:
    """group key -> (low, high) of mean reward, tasks as clusters, over known rewards,
    from the per-(group, task) totals of :func:`~evalatlas.store.queries.rewards_by_group`.

    Rewards in [0, 1] (the usual case) get :func:`bounded_interval_from_totals` (inside
    [0, 1]); rewards outside it have no known range: the clustered t interval."""
    n = len(arrays.get("n", ()))
    if n == 0:
        return {}
    cols = [np.asarray(arrays[f"k{i}"], dtype=object) for i in range(n_keys)]
    counts = np.asarray(arrays["n"], dtype=float)
    sums = np.asarray(arrays["s"], dtype=float)
    squares = np.asarray(arrays["q"], dtype=float)
    lows = np.asarray(arrays["lo"], dtype=float)
    highs = np.asarray(arrays["hi"], dtype=float)
    change = np.zeros(n, dtype=bool)
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    bounds = [*np.flatnonzero(change), n]
    out: dict[tuple, tuple[float | None, float | None]] = {}
    start = 0
    for end in bounds:
        if end == start:
            continue
        sl = slice(start, end)
        if lows[sl].min() >= 0.0 and highs[sl].max() <= 1.0:
            b = bounded_interval_from_totals(counts[sl], sums[sl], squares[sl],
                                             confidence=confidence)
            pair = (b.low, b.high)
        else:
            iv = clustered_mean_interval(counts[sl], sums[sl], squares[sl],
                                         confidence=confidence)
            pair = (None if math.isnan(iv.low) else iv.low,
                    None if math.isnan(iv.high) else iv.high)
        out[tuple(c[start] for c in cols)] = pair
        start = end
    return out


def outcome_rows(
    counts: dict[str, Any],
    labels: dict[Any, str],
    by: str = "agent",
    *,
    ks: Sequence[int] | None = None,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One row per group: success rate with Wilson and task-clustered intervals, pass@k and
    pass^k [CI], from :func:`~evalatlas.store.outcomes.task_outcome_counts` (arrays ``k``,
    ``agent_k``, ``task``, ``n``, ``c`` sorted by group and agent).

    pass@k and pass^k are computed per (agent, task) from that agent's own attempts, then
    averaged over the tasks with at least k attempts, for k = 1 .. the most attempts of
    a task (or ``ks``). A group
    holding several agents (``--by benchmark`` ...) gets none, with ``pass_at_k_note``
    saying why: pooling agents' episodes as attempts of one agent gives pass@64-style
    nonsense."""
    keys = np.asarray(counts.get("k", ()), dtype=object)
    if keys.size == 0:
        return []
    agents = np.asarray(counts.get("agent_k", keys))
    if agents.dtype.kind not in "iu":  # agents as numbers stay numbers
        agents = agents.astype(object)
    tasks = np.asarray(counts["task"])
    if tasks.dtype.kind not in "iu":  # numbers in task_id order stay numbers
        tasks = tasks.astype(object)
    n_all = np.asarray(counts["n"], dtype=np.int64)
    c_all = np.asarray(counts["c"], dtype=np.int64)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [keys.size]))
    rows: list[dict[str, Any]] = []
    for a, b in zip(starts, ends, strict=True):
        row = _outcome_row(n_all[a:b], c_all[a:b], tasks[a:b], agents[a:b], ks, confidence)
        row = {by: labels[keys[a]], **row}
        if by == "agent":
            row["agent_id"] = keys[a]
        rows.append(row)
    rows.sort(key=lambda r: (str(r[by]), r.get("agent_id") or ""))
    return rows


def _outcome_row(n_rows: np.ndarray, c_rows: np.ndarray, task_rows: np.ndarray,
                 agent_rows: np.ndarray, ks: Sequence[int] | None,
                 confidence: float) -> dict[str, Any]:
    """The numbers of one group from its per-(agent, task) counts."""
    n, c = int(n_rows.sum()), int(c_rows.sum())
    lo, hi = wilson_interval(c, n, confidence)
    # tasks as numbers in task_id order (evalatlas.store.summary_scan) or as ids
    _, task_code = np.unique(task_rows if task_rows.dtype.kind in "iu"
                             else task_rows.astype(str), return_inverse=True)
    # tasks as clusters (whichever agent ran them); 0/1 outcomes, so a task's sum of
    # squares is its successes
    n_by_task = np.bincount(task_code, weights=n_rows).astype(float)
    c_by_task = np.bincount(task_code, weights=c_rows).astype(float)
    se = clustered_mean_interval(n_by_task, c_by_task, c_by_task, confidence=confidence).se
    clustered = bounded_interval_from_totals(n_by_task, c_by_task, c_by_task,
                                             confidence=confidence, binary=True)
    n_agents = int(np.unique(agent_rows if agent_rows.dtype.kind in "iu"
                             else agent_rows.astype(str)).size)
    row: dict[str, Any] = {
        "episodes": n, "tasks": int(task_code.max()) + 1 if task_code.size else 0,
        "min_attempts": int(n_rows.min()), "successes": c,
        "success_rate": c / n,
        "success_rate_ci_low": lo, "success_rate_ci_high": hi,
        "success_rate_se_clustered": None if se is None or math.isnan(se) else se,
        "success_rate_clustered_ci_low": clustered.low,
        "success_rate_clustered_ci_high": clustered.high,
        "pass_at_k": {}, "pass_hat_k": {},
    }
    if clustered.reason:
        row["success_rate_clustered_ci_note"] = clustered.reason
    if n_agents > 1:
        row["pass_at_k_note"] = (f"{n_agents} agents in this group: pass@k and pass^k are "
                                 "only defined over one agent's attempts (see --by agent)")
        return row
    # every k some task supports: pass@k is over the tasks with at least k scored
    # attempts (an errored attempt has no outcome and is not one), and says how many
    group_ks = list(ks) if ks is not None else attempt_k_values(int(n_rows.max()))
    for k in group_ks:
        row["pass_at_k"][str(k)] = _over_tasks(pass_at_k_counts(n_rows, c_rows, k), confidence)
        row["pass_hat_k"][str(k)] = _over_tasks(pass_hat_k_counts(n_rows, c_rows, k),
                                                confidence)
    return row


def _over_tasks(per_task: np.ndarray, confidence: float) -> dict[str, Any]:
    """Mean of per-task values in [0, 1] over the tasks that have one (enough attempts),
    with :func:`bounded_mean_interval` (inside [0, 1]; None with a reason if undefined).
    ``tasks``: the tasks averaged over; ``tasks_total``: all tasks of the group."""
    eligible = per_task[~np.isnan(per_task)]
    if eligible.size == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "tasks": 0,
                "tasks_total": int(per_task.size)}
    iv = bounded_mean_interval(eligible, confidence=confidence)
    out: dict[str, Any] = {"value": iv.estimate, "ci_low": iv.low, "ci_high": iv.high,
           "tasks": int(eligible.size), "tasks_total": int(per_task.size)}
    if iv.reason:
        out["ci_note"] = iv.reason
    return out


GROUP_KEY = "_group_key"
"""Where :func:`group_rows` keeps a row's group key (tuple) for the composition, which
joins per-group facts (run status, published numbers, costs) on it and then drops it."""


def cost_rows(arrays: dict[str, Any], confidence: float = 0.95) -> dict[Any, dict[str, Any]]:
    """Group key -> cost per episode and cost per success, each with a task-clustered
    interval, from :func:`evalatlas.store.catalog.cost_totals` (one grouping key).

    - ``cost_per_episode``: total known cost / episodes with a known cost;
    - ``cost_per_success`` (cost of pass, seed 001; Erol et al. 2025, arXiv 2504.13359):
      total cost / successes over the episodes whose cost and outcome are both known;
      ``inf`` when nothing succeeded (it never passes), None when nothing is known.

    Intervals: :func:`~evalatlas.stats.bounded.nonnegative_ratio_interval` (tasks as
    clusters, delta method on the log scale: never below 0); None with a ``*_ci_note``
    when undefined.
    """
    keys = np.asarray(arrays.get("k", ()), dtype=object)
    out: dict[Any, dict[str, Any]] = {}
    if keys.size == 0:
        return out
    cost = np.asarray(arrays["cost"], dtype=float)
    n = np.asarray(arrays["n"], dtype=float)
    cost_o = np.asarray(arrays["cost_o"], dtype=float)
    succ = np.asarray(arrays["s"], dtype=float)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    for a, b in zip(np.concatenate(([0], change)), np.concatenate((change, [keys.size])),
                    strict=True):
        fields: dict[str, Any] = {}
        ivs = (nonnegative_ratio_interval(cost[a:b], n[a:b], confidence=confidence),
               nonnegative_ratio_interval(cost_o[a:b], succ[a:b], confidence=confidence))
        for name, iv in zip(("cost_per_episode", "cost_per_success"), ivs, strict=True):
            fields[name] = iv.estimate
            fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = iv.low, iv.high
            if iv.reason:
                fields[f"{name}_ci_note"] = iv.reason
        out[keys[a]] = fields
    return out


def rank_rows(rows: list[dict[str, Any]], by: Sequence[str]) -> list[dict[str, Any]]:
    """Rows by success rate, highest first, ties (and unknown rates, last) by name; within
    each benchmark when rows carry one as an outer grouping (``benchmark`` before the
    other keys), since rates of different benchmarks are not comparable."""
    outer = "benchmark" if by and by[0] == "benchmark" and len(by) > 1 else None

    def key(r: dict[str, Any]) -> tuple[str, bool, float, tuple[str, ...], str]:
        rate = r.get("success_rate")
        known = rate is not None and rate == rate
        names = tuple(str(r.get(b) or "") for b in by if b != outer)
        return (str(r.get(outer) or "") if outer else "", not known,
                -float(rate) if rate is not None and known else 0.0, names,
                str(r.get("agent_id") or ""))

    return sorted(rows, key=key)


OUTCOME_FIELDS = ("success_rate_se_clustered", "success_rate_clustered_ci_low",
                  "success_rate_clustered_ci_high", "success_rate_clustered_ci_note",
                  "min_attempts", "pass_at_k", "pass_hat_k", "pass_at_k_note")
"""What :func:`outcome_rows` adds to a summary row (one grouping key only)."""


def merge_outcomes(rows: list[dict[str, Any]], outcomes: list[dict[str, Any]],
                   group: str) -> None:
    """Add the clustered interval and pass@k of :func:`outcome_rows` to summary rows."""
    def key(r: dict[str, Any]) -> Any:
        return r.get("agent_id") if group == "agent" else r.get(group)

    by_key = {key(o): o for o in outcomes}
    for row in rows:
        o = by_key.get(key(row))
        if o is None:
            continue
        for k in OUTCOME_FIELDS:
            if k in o:
                row[k] = o[k]


def coverage_notes(rows: list[dict[str, Any]], by: Sequence[str] | None = None
                   ) -> list[str]:
    """A note per row whose reported tasks are fewer than the benchmark has, or more than
    the names table says it has (:mod:`evalatlas.records.names`). A row is named by its
    grouping keys ``by`` (``benchmark / agent`` when agents are split by benchmark), else
    by its first value."""
    notes = []
    for r in rows:
        total, seen = r.get("benchmark_tasks"), r.get("tasks")
        extra = r.get("tasks_beyond_benchmark")
        name = (" / ".join(str(r.get(b)) for b in by) if by
                else next(iter(r.values())))
        if extra:
            notes.append(f"{name}: {seen} tasks, {extra} more than the benchmark has "
                         f"({seen - extra}): at least {extra} belong to another split or "
                         "set, and the rate is over all of them")
        if total and seen is not None and seen < total:
            how = ("counted as failures (--missing fail)" if r.get("missing_as_failures")
                   else "left out: the rate is over the reported tasks only (--missing fail "
                   "counts them as failures)")
            notes.append(f"{name}: tasks {seen} / {total}; the missing {total - seen} are "
                         f"{how}")
    return notes


def summary_result(
    rows: list[dict[str, Any]],
    by: list[str],
    *,
    confidence: float = 0.95,
    unknown_price_models: Sequence[str] = (),
) -> SummaryResult:
    """Wrap summary rows with the envelope values and the notes a reader needs."""
    notes = []
    if unknown_price_models:
        notes.append("cost unknown (no price for these models; add them with a price file, "
                     "see `evalatlas price --help`): " + ", ".join(unknown_price_models))
    if not rows:
        notes.append("the store has no episodes; run `evalatlas ingest PATH` first")
    return SummaryResult(rows=rows, meta={"group_by": list(by), "confidence": confidence,
                                          "unknown_price_models": list(unknown_price_models)},
                         notes=notes)
