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
    BoundedInterval,
    RatioSums,
    bounded_intervals_and_clustered_from_sums,
    bounded_intervals_and_clustered_from_totals,
    bounded_mean_intervals,
    nonnegative_ratio_intervals_from_sums,
    ratio_sums,
)
from evalatlas.stats.intervals import wilson_interval
from evalatlas.stats.standard_errors import (
    ClusterSums,
    cluster_sums,
    clustered_intervals_from_sums,
)


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
    named_sizes: dict[Any, int | None] = {}
    for r in totals:
        gk = tuple(r[f"k{i}"] for i in range(n_keys))
        n, s, known = int(r["episodes"]), int(r["successes"]), int(r["outcome_known"])
        # the experiments' n_tasks, or the names table's size of the benchmark (larger wins:
        # an adapter that can only count what it saw must not hide missing tasks)
        name = r.get("benchmark_name")
        if name not in named_sizes:  # a few benchmarks, thousands of groups
            named_sizes[name] = benchmark_tasks(name)
        known_size = named_sizes[name]
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


def group_numbers(arrays: dict[str, Any], key_columns: Sequence[str]
                  ) -> tuple[np.ndarray, list[Any]]:
    """Each row's group number and the key of each number, for per-(group, ...) arrays:
    given as ``g`` and ``group_keys`` (:mod:`evalatlas.store.summary_scan`: numbers in
    key order, no string per row), else from the key columns ``key_columns`` (a key is
    a tuple when there are several); rows need not be sorted."""
    if "g" in arrays:
        return (np.asarray(arrays["g"], dtype=np.int64).ravel(),
                list(arrays["group_keys"]))
    cols = [np.asarray(arrays[c], dtype=object).ravel() for c in key_columns]
    keys = cols[0] if len(cols) == 1 else list(zip(*cols, strict=True))
    index: dict[Any, int] = {}
    g = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64,
                    count=len(keys))
    return g, list(index)


def _group_min_max(values: np.ndarray, g: np.ndarray, n_groups: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Least and largest value per group (inf/-inf for a group without rows). Small
    non-negative integers (attempts, agent numbers) through a (group, value) table: at
    10M cells ``np.minimum.at`` costs ~0.5 s a call, the table a bincount."""
    if values.dtype.kind in "iu" and values.size:
        top = int(values.max()) + 1
        if int(values.min()) >= 0 and n_groups * top <= max(4 * values.size, 1_000_000):
            seen = np.bincount(g * top + values, minlength=n_groups * top).reshape(
                n_groups, top) > 0
            some = seen.any(axis=1)
            lo = np.where(some, seen.argmax(axis=1), np.inf)
            hi = np.where(some, top - 1 - seen[:, ::-1].argmax(axis=1), -np.inf)
            return lo.astype(float), hi.astype(float)
        values = values.astype(float)
    lo, hi = np.full(n_groups, np.inf), np.full(n_groups, -np.inf)
    np.minimum.at(lo, g, values)
    np.maximum.at(hi, g, values)
    return lo, hi


def _mean_reward_intervals(
    arrays: dict[str, Any], n_keys: int, confidence: float,
) -> dict[tuple, tuple[float | None, float | None]]:
    """group key -> (low, high) of mean reward, tasks as clusters, over known rewards,
    from the per-(group, task) totals of :func:`~evalatlas.store.queries.rewards_by_group`
    (or the scan's, with group numbers; or its per-group ``sums``, the fields of
    :class:`~evalatlas.stats.standard_errors.ClusterSums`: the same numbers).

    Rewards in [0, 1] (the usual case) get the bounded interval (inside [0, 1]); rewards
    outside it have no known range: the clustered t interval. Every group at once, from
    its sums (:func:`~evalatlas.stats.bounded.bounded_intervals_and_clustered_from_sums`,
    :func:`~evalatlas.stats.standard_errors.clustered_intervals_from_sums`)."""
    if "sums" in arrays:  # the scan's per-group sums (the cells stayed in the store)
        keys = list(arrays["group_keys"])
        sums = ClusterSums(**arrays["sums"])
        present = np.asarray(sums.clusters) > 0
    else:
        if len(arrays.get("n", ())) == 0:
            return {}
        g, keys = group_numbers(arrays, [f"k{i}" for i in range(n_keys)])
        sums = cluster_sums(arrays["n"], arrays["s"], arrays["q"], groups=g,
                            n_groups=len(keys))
        present = np.bincount(g, minlength=len(keys)) > 0
    keys = [k if isinstance(k, tuple) else (k,) for k in keys]
    if "group_lo" in arrays:  # the scan's least and largest reward per group number
        low_min = np.asarray(arrays["group_lo"], dtype=float)
        high_max = np.asarray(arrays["group_hi"], dtype=float)
    else:
        low_min, _ = _group_min_max(np.asarray(arrays["lo"], dtype=float), g, len(keys))
        _, high_max = _group_min_max(np.asarray(arrays["hi"], dtype=float), g, len(keys))
    unit = (low_min >= 0.0) & (high_max <= 1.0)
    # every group both ways (a group's numbers are its own): the bounded interval where
    # the rewards lie in [0, 1], the clustered t interval elsewhere
    bounded = bounded_intervals_and_clustered_from_sums(sums, confidence=confidence)[0]
    other = clustered_intervals_from_sums(sums, confidence=confidence)
    out: dict[tuple, tuple[float | None, float | None]] = {}
    for i in np.flatnonzero(present):
        if unit[i]:
            out[keys[i]] = (bounded[i].low, bounded[i].high)
        else:
            lo, hi = float(other.low[i]), float(other.high[i])
            out[keys[i]] = (None if math.isnan(lo) else lo, None if math.isnan(hi) else hi)
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
    ``agent_k``, ``task``, ``n``, ``c``; or the scan's, with group numbers ``g`` and
    ``group_keys``; any order; or, where each group is one agent's, the scan's ``table``
    of distinct (group number, attempts, successes) and their task counts, which is
    what every number below is computed from).

    pass@k and pass^k are computed per (agent, task) from that agent's own attempts, then
    averaged over the tasks with at least k attempts, for k = 1 .. the most attempts of
    a task (or ``ks``). A group
    holding several agents (``--by benchmark`` ...) gets none, with ``pass_at_k_note``
    saying why: pooling agents' episodes as attempts of one agent gives pass@64-style
    nonsense.

    Every group at once (a summary holds 2,000 groups of 5,000 tasks): the clustered
    intervals in one pass over the cells; pass@k and pass^k from each group's table of
    (attempts, successes) -> tasks, through the one estimator
    (:func:`pass_at_k_counts`) on the distinct pairs and
    :func:`~evalatlas.stats.bounded.bounded_mean_intervals` with those task counts as
    weights: the same numbers as per task, up to float rounding."""
    if "table" in counts:  # the scan's table (each group one agent's; cells stayed in
        keys = list(counts["group_keys"])  # the store)
        n_groups = len(keys)
        table = tuple(np.asarray(a, dtype=np.int64) for a in counts["table"])
        rows_per_group = np.bincount(table[0], minlength=n_groups)
        n_agents = np.where(rows_per_group > 0, 1, 0)
        multi = np.zeros(n_groups, dtype=bool)
        single = rows_per_group > 0
    elif len(counts.get("n", ())) == 0:
        return []
    else:
        g, keys = group_numbers(counts, ["k"])
        n_groups = len(keys)
        agents = _numbers(counts["agent_k"] if "agent_k" in counts else
                          np.asarray(keys, dtype=object)[g])
        tasks = _numbers(counts["task"])
        n_all, c_all = _integers(counts["n"]), _integers(counts["c"])
        rows_per_group = np.bincount(g, minlength=n_groups)
        a_min, a_max = _group_min_max(agents, g, n_groups)
        n_agents = np.where(rows_per_group > 0, 1, 0)
        multi = a_max > a_min
        single = (rows_per_group > 0) & ~multi
    if multi.any():  # groups of several agents: tasks as clusters whichever agent ran them
        in_multi = multi[g]
        pairs = np.unique(g[in_multi] * (int(agents.max()) + 1) + agents[in_multi])
        n_agents = np.maximum(n_agents, np.bincount(pairs // (int(agents.max()) + 1),
                                                    minlength=n_groups))
        width = int(tasks.max()) + 1
        cells, inverse = np.unique(g[in_multi] * width + tasks[in_multi],
                                   return_inverse=True)
        gt = np.concatenate((g[~in_multi], cells // width))
        nt = np.concatenate((n_all[~in_multi], np.bincount(
            inverse, weights=n_all[in_multi]).astype(np.int64)))
        ct = np.concatenate((c_all[~in_multi], np.bincount(
            inverse, weights=c_all[in_multi]).astype(np.int64)))
    # the tasks (clusters) as a table: distinct (group, attempts, successes) and how many
    # tasks have each; every per-group number below comes from it (a few thousand rows
    # per group instead of 5,000 tasks)
    if "table" in counts:
        hg, hn, hc, w = table
    else:
        if not multi.any():
            gt, nt, ct = g, n_all, c_all
        hg, hn, hc, w = _pair_table(gt, nt, ct, n_groups)
    tasks_per_group = np.bincount(hg, weights=w, minlength=n_groups).astype(np.int64)
    ng = np.bincount(hg, weights=w * hn, minlength=n_groups).astype(np.int64)
    cg = np.bincount(hg, weights=w * hc, minlength=n_groups).astype(np.int64)
    # tasks as clusters; 0/1 outcomes, so a task's sum of squares is its successes
    hn_f, hc_f = hn.astype(float), hc.astype(float)
    # the bounded interval and the clustered SE of one pass (on [0, 1] the same SE)
    clustered, clustered_se = bounded_intervals_and_clustered_from_totals(
        hn_f, hc_f, hc_f, groups=hg, n_groups=n_groups, confidence=confidence,
        binary=True, weights=w)
    se = clustered_se.se
    if multi.any():  # least attempts per agent's task (the table's tasks are merged)
        n_min, n_max = _group_min_max(n_all, g, n_groups)
        in_single = single[g]
        passes = _pass_k_by_group(_pair_table(g[in_single], n_all[in_single],
                                              c_all[in_single], n_groups), n_groups,
                                  np.where(single, n_max, 0), ks, confidence)
    else:  # every task one agent's: the table is the pass@k table too
        n_min, n_max = _group_min_max(hn, hg, n_groups)
        passes = _pass_k_by_group((hg, hn, hc, w), n_groups, np.where(single, n_max, 0),
                                  ks, confidence)
    rows: list[dict[str, Any]] = []
    for i in np.flatnonzero(rows_per_group > 0):
        n, c = int(ng[i]), int(cg[i])
        lo, hi = wilson_interval(c, n, confidence)
        se_i = float(se[i])
        row: dict[str, Any] = {
            by: labels[keys[i]],
            "episodes": n, "tasks": int(tasks_per_group[i]),
            "min_attempts": int(n_min[i]), "successes": c,
            "success_rate": c / n if n else None,
            "success_rate_ci_low": lo, "success_rate_ci_high": hi,
            "success_rate_se_clustered": None if math.isnan(se_i) else se_i,
            "success_rate_clustered_ci_low": clustered[i].low,
            "success_rate_clustered_ci_high": clustered[i].high,
            "pass_at_k": {}, "pass_hat_k": {},
        }
        if clustered[i].reason:
            row["success_rate_clustered_ci_note"] = clustered[i].reason
        if by == "agent":
            row["agent_id"] = keys[i]
        if n_agents[i] > 1:
            row["pass_at_k_note"] = (f"{int(n_agents[i])} agents in this group: pass@k and "
                                     "pass^k are only defined over one agent's attempts "
                                     "(see --by agent)")
        else:
            for k, (at_k, hat_k) in passes.items():
                at, hat = at_k[i], hat_k[i]
                if at is not None and hat is not None:
                    row["pass_at_k"][str(k)] = _over_tasks(at, int(tasks_per_group[i]))
                    row["pass_hat_k"][str(k)] = _over_tasks(hat, int(tasks_per_group[i]))
        rows.append(row)
    rows.sort(key=lambda r: (str(r[by]), r.get("agent_id") or ""))
    return rows


def _numbers(values: Any) -> np.ndarray:
    """Agents or tasks as numbers: numbers stay numbers, ids are numbered (any order)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    return np.unique(arr.astype(str), return_inverse=True)[1].astype(np.int64).ravel()


def _integers(values: Any) -> np.ndarray:
    """Counts as an integer array (as fetched: no copy when they are integers)."""
    arr = np.asarray(values)
    return arr if arr.dtype.kind in "iu" else arr.astype(np.int64)


def _pair_table(g: np.ndarray, n: np.ndarray, c: np.ndarray, n_groups: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-task attempts ``n`` and successes ``c`` of groups ``g`` as a table: the
    distinct (group, attempts, successes) and how many tasks have each (group numbers,
    attempts, successes, task counts; in code order). One pass of one integer code per
    task, then a bincount of the codes (a sort where that table would be large)."""
    if n.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    top = int(n.max()) + 1
    code = g.astype(np.int64) * top
    code += n
    code *= top
    code += c
    if n_groups * top * top <= 4 * n.size + 1_000_000:
        weights = np.bincount(code, minlength=n_groups * top * top)
        cells = np.flatnonzero(weights)
        weights = weights[cells]
    else:
        cells, weights = np.unique(code, return_counts=True)
    hg, rest = np.divmod(cells, top * top)
    hn, hc = np.divmod(rest, top)
    return hg, hn, hc, weights


def _pass_k_by_group(table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                     n_groups: int, max_attempts: np.ndarray, ks: Sequence[int] | None,
                     confidence: float,
                     ) -> dict[int, tuple[list[BoundedInterval | None],
                                          list[BoundedInterval | None]]]:
    """k -> (pass@k, pass^k) per group (None where the group does not report that k),
    from the table of :func:`_pair_table` (per-task attempts and successes, each pair
    with its task count): every k some task supports (1 .. the group's most attempts)
    or ``ks``; over the tasks with at least k scored attempts (an errored attempt has
    no outcome and is not one).

    pass@k of a task is a function of its (attempts, successes), so its mean and
    interval over tasks are those of the distinct pairs weighted by their task counts."""
    hg, hn, hc, weights = table
    if hn.size == 0:
        return {}
    group_ks = list(ks) if ks is not None else attempt_k_values(int(hn.max()))
    out = {}
    for k in group_ks:
        reported = max_attempts >= k if ks is None else max_attempts > 0
        pair = []
        for metric in (pass_at_k_counts, pass_hat_k_counts):
            ivs = bounded_mean_intervals(metric(hn, hc, k), groups=hg, n_groups=n_groups,
                                         weights=weights, confidence=confidence)
            pair.append([iv if reported[i] else None for i, iv in enumerate(ivs)])
        out[k] = (pair[0], pair[1])
    return out


def _over_tasks(iv: BoundedInterval, tasks_total: int) -> dict[str, Any]:
    """A per-task value's mean over the tasks that have one (enough attempts), with
    :func:`~evalatlas.stats.bounded.bounded_mean_interval` (inside [0, 1]; None with a
    reason if undefined). ``tasks``: the tasks averaged over; ``tasks_total``: all
    tasks of the group."""
    if iv.n == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "tasks": 0,
                "tasks_total": tasks_total}
    out: dict[str, Any] = {"value": iv.estimate, "ci_low": iv.low, "ci_high": iv.high,
                           "tasks": iv.n, "tasks_total": tasks_total}
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
    when undefined. ``arrays`` may instead hold the scan's per-group sums
    (``group_keys``, ``cells``, ``per_episode``, ``per_success``: the fields of
    :class:`~evalatlas.stats.bounded.RatioSums`), which give the same numbers.
    """
    out: dict[Any, dict[str, Any]] = {}
    if "per_episode" in arrays:  # the scan's per-group sums (the cells stayed in the store)
        keys = list(arrays["group_keys"])
        sums = (RatioSums(**arrays["per_episode"]), RatioSums(**arrays["per_success"]))
        present = np.asarray(arrays["cells"]) > 0
    else:
        if len(arrays.get("cost", ())) == 0:
            return out
        g, keys = group_numbers(arrays, ["k"])
        n_groups = len(keys)
        sums = (ratio_sums(arrays["cost"], arrays["n"], groups=g, n_groups=n_groups),
                ratio_sums(arrays["cost_o"], arrays["s"], groups=g, n_groups=n_groups))
        present = np.bincount(g, minlength=n_groups) > 0
    # every group at once (stats.bounded.nonnegative_ratio_intervals_from_sums)
    per_episode, per_success = (nonnegative_ratio_intervals_from_sums(
        ratio, confidence=confidence) for ratio in sums)
    for i in np.flatnonzero(present):
        fields: dict[str, Any] = {}
        for name, iv in (("cost_per_episode", per_episode[i]),
                         ("cost_per_success", per_success[i])):
            fields[name] = iv.estimate
            fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = iv.low, iv.high
            if iv.reason:
                fields[f"{name}_ci_note"] = iv.reason
        out[keys[i]] = fields
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
