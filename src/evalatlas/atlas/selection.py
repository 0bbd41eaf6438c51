"""Which tasks an agent ran is not random: sensitivity bands and inverse-propensity weights.

**Why IRT already helps.** Agents cherry-pick tasks (strong agents report easy ones).
A raw success rate mixes ability with the difficulty of the tasks chosen; an IRT fit
conditions on *which* items each agent ran, so its ability is comparable across agents
as long as the choice depends on the items (observed), not on the unseen outcomes
(missing at random given the items). ``tests/atlas/test_selection.py`` checks that on a
simulation where strong agents run only easy tasks, the bias of IRT-predicted
full-benchmark success rates is at most half that of raw success rates.

**Sensitivity band.** When an agent ran fewer tasks than its benchmark's ``n_tasks``
(seed 002's ``benchmark_subset.n_tasks``), its full-benchmark success rate is bracketed:
unreported tasks counted as failures (the pessimistic end) vs as predicted by the fit
(its ability against the benchmark's items it did not run; when the benchmark has more
tasks than the matrix knows, the unknown ones are assumed to be like those items).

**Inverse-propensity weighting** (``propensity=True``). Propensity model: agent ``i``
runs item ``j`` with probability ``pi_ij = sigmoid(g_i + h_i * z_j)``, ``z_j`` the
item's standardised fitted difficulty, one logistic regression per agent over the items
of the benchmarks it ran (MAP, N(0, 2^2) priors on ``g_i, h_i``). Assumption: given the
task's difficulty, whether an agent ran a task does not depend on how it would have done
on it (MAR given difficulty). Cells get weight ``1 / pi_ij``, capped at
:data:`MAX_WEIGHT`, normalised to mean 1 per agent; the Hajek-weighted success rate
``sum(w y) / sum(w)`` then estimates the rate over all the benchmark's items, and the
IRT likelihood is weighted the same way. It helps when selection follows difficulty;
it cannot help when agents report tasks *because* they solved them (outcome-dependent
selection, not missing at random), which the same test file shows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from evalatlas.atlas.irt import IRTFit
from evalatlas.atlas.matrix import ResponseMatrix

MAX_WEIGHT = 50.0
"""Cap on 1/propensity (propensities below 0.02 are treated as 0.02)."""
PROPENSITY_PRIOR_SD = 2.0


def _benchmark_items(matrix: ResponseMatrix) -> dict[str, np.ndarray]:
    out: dict[str, list[int]] = {}
    for j, b in enumerate(matrix.item_benchmark):
        out.setdefault(b, []).append(j)
    return {b: np.asarray(v, dtype=np.int64) for b, v in out.items()}


def _agent_index(matrix: ResponseMatrix) -> dict[str, int]:
    return {a: i for i, a in enumerate(matrix.agent_ids)}


def _cells_by(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell positions grouped by ``key`` (a stable sort: within a key, the cells'
    own order) and the sorted keys: the cells of key ``v`` are
    ``order[searchsorted(keys, v, 'left'):searchsorted(keys, v, 'right')]``. One sort
    instead of a pass over all cells per agent or per coverage row (which at 10^7 cells
    and 4,000 rows was hours; issue 23)."""
    order = np.argsort(key, kind="stable")
    return order, key[order]


def _slice(order: np.ndarray, keys: np.ndarray, value: int) -> np.ndarray:
    lo, hi = np.searchsorted(keys, [value, value + 1])
    return order[lo:hi]


def sensitivity_band(matrix: ResponseMatrix, fit: IRTFit) -> list[dict[str, Any]]:
    """Coverage rows with the observed rate, the band and the model's full-benchmark rate.

    Added fields: ``success_rate_observed`` (mean of per-task k/n over tasks run),
    ``success_rate_unreported_as_failures``, ``success_rate_unreported_as_predicted``
    (both None without ``n_tasks``), ``predicted_success_rate`` (the fit's mean success
    probability over the benchmark's items in the matrix).

    Cost: one sort of the cells by (agent, benchmark), then per row its own cells and
    its benchmark's items (the same values, in the same order, as a scan of every cell
    per row would pick, so the same sums to the last bit).
    """
    c = matrix.cells
    per_task = c.k / c.n
    items = _benchmark_items(matrix)
    index = _agent_index(matrix)
    code = {b: q for q, b in enumerate(items)}
    n_bench = max(len(items), 1)
    item_bench = np.zeros(matrix.n_items, dtype=np.int64)
    position = np.zeros(matrix.n_items, dtype=np.int64)  # an item's place in its benchmark
    for b, js in items.items():
        item_bench[js] = code[b]
        position[js] = np.arange(js.size)
    order, keys = _cells_by(c.agent * n_bench + item_bench[c.item])
    out = []
    for row in matrix.coverage:
        i = index[row["agent_id"]]
        bench_items = items.get(row["benchmark"], np.zeros(0, dtype=np.int64))
        mine = (_slice(order, keys, i * n_bench + code[row["benchmark"]])
                if row["benchmark"] in code else np.zeros(0, dtype=np.int64))
        observed = per_task[mine]
        run_items = c.item[mine]
        p_all = fit.prob(np.full(bench_items.size, i), bench_items)
        unrun = np.ones(bench_items.size, dtype=bool)
        unrun[position[run_items]] = False
        p_unrun = p_all[unrun] if unrun.any() else p_all
        new = dict(row)
        new["success_rate_observed"] = float(observed.mean()) if observed.size else None
        nt = row.get("n_tasks")
        tasks_run = row["tasks_run"]
        if nt and observed.size:
            # per distinct task: several versions of one task count once (their mean)
            solved = float(observed.sum()) * tasks_run / observed.size
            missing = max(int(nt) - tasks_run, 0)
            denom = tasks_run + missing
            new["success_rate_unreported_as_failures"] = solved / denom
            new["success_rate_unreported_as_predicted"] = (
                (solved + missing * float(p_unrun.mean())) / denom if p_unrun.size else None)
        else:
            new["success_rate_unreported_as_failures"] = None
            new["success_rate_unreported_as_predicted"] = None
        new["predicted_success_rate"] = float(p_all.mean()) if p_all.size else None
        out.append(new)
    return out


def propensity_weights(
    matrix: ResponseMatrix, difficulty: np.ndarray, *, max_iter: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell inverse-propensity weights (mean 1 per agent) and per-cell propensities.

    See the module docstring for the model and its assumption. Deterministic (Newton's
    method from zero, no random numbers).
    """
    c = matrix.cells
    z = np.asarray(difficulty, dtype=np.float64)
    z = (z - z.mean()) / (z.std() + 1e-12) if z.size > 1 else z * 0
    items = _benchmark_items(matrix)
    prop = np.ones(c.size)
    prec = 1.0 / PROPENSITY_PRIOR_SD ** 2
    order, keys = _cells_by(c.agent)
    for i in range(matrix.n_agents):
        mine = _slice(order, keys, i)
        if mine.size == 0:
            continue
        benches = {matrix.item_benchmark[j] for j in c.item[mine].tolist()}
        cand = np.concatenate([items[b] for b in sorted(benches)])
        ran = np.isin(cand, c.item[mine]).astype(np.float64)
        X = np.stack([np.ones(cand.size), z[cand]], axis=1)
        beta = np.zeros(2)
        for _ in range(max_iter):
            p = special.expit(X @ beta)
            grad = X.T @ (p - ran) + prec * beta
            H = (X * (p * (1 - p))[:, None]).T @ X + prec * np.eye(2)
            step = np.linalg.solve(H, grad)
            beta -= step
            if np.max(np.abs(step)) < 1e-10:
                break
        prop[mine] = special.expit(np.stack([np.ones(mine.size), z[c.item[mine]]], 1) @ beta)
    w = 1.0 / np.maximum(prop, 1.0 / MAX_WEIGHT)
    mean_w = np.bincount(c.agent, w, matrix.n_agents) / np.maximum(
        np.bincount(c.agent, minlength=matrix.n_agents), 1)
    return w / mean_w[c.agent], prop


def ipw_success_rates(matrix: ResponseMatrix, weights: np.ndarray) -> np.ndarray:
    """Hajek IPW success rate per agent: ``sum(w * k/n) / sum(w)`` over its cells."""
    c = matrix.cells
    y = c.k / c.n
    num = np.bincount(c.agent, weights * y, matrix.n_agents)
    den = np.bincount(c.agent, weights, matrix.n_agents)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)
