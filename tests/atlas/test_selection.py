"""Selection: IRT vs raw success rates when strong agents cherry-pick easy tasks; IPW."""

from __future__ import annotations

import numpy as np
from scipy import special

from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.irt import Cells
from evalatlas.atlas.matrix import build_matrix, matrix_from_cells
from evalatlas.atlas.selection import ipw_success_rates, propensity_weights, sensitivity_band

N, M = 200, 200


def _world(seed: int):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, N)
    b = rng.normal(0, 1.5, M)
    a = np.exp(rng.normal(0, 0.3, M))
    p = special.expit(a[None, :] * (theta[:, None] - b[None, :]))
    y = (rng.random((N, M)) < p).astype(float)
    return rng, theta, b, p, y


def _cells(mask: np.ndarray, y: np.ndarray) -> Cells:
    ai, ij = np.nonzero(mask)
    return Cells(ai, ij, y[ai, ij], np.ones(ai.size), N, M)


def _raw(mask: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (y * mask).sum(1) / mask.sum(1)


def test_irt_cuts_cherry_picking_bias_by_half() -> None:
    """Strong agents (theta > 0) run only the easiest 40% of tasks; others a random 60%."""
    rng, theta, b, p, y = _world(1)
    truth = p.mean(1)  # full-benchmark expected success rate
    easy = b < np.quantile(b, 0.4)
    strong = theta > 0
    mask = np.where(strong[:, None], easy[None, :] & (rng.random((N, M)) < 0.9),
                    rng.random((N, M)) < 0.6)
    raw = _raw(mask, y)
    fit = fit_matrix(matrix_from_cells(_cells(mask, y)), model="2pl", holdout=0.0)
    irt = fit.irt
    pred = np.array([irt.prob(np.full(M, i), np.arange(M)).mean() for i in range(N)])
    bias_raw = float(np.mean(raw[strong] - truth[strong]))
    bias_irt = float(np.mean(pred[strong] - truth[strong]))
    assert bias_raw > 0.15  # cherry-picking inflates raw rates a lot
    assert abs(bias_irt) <= 0.5 * bias_raw, (bias_irt, bias_raw)
    assert np.mean(np.abs(pred - truth)) <= 0.5 * np.mean(np.abs(raw - truth))


def test_ipw_helps_when_selection_follows_difficulty() -> None:
    """P(strong agent runs task) falls with difficulty: IPW rates lose most of the bias."""
    rng, theta, b, p, y = _world(2)
    truth = p.mean(1)
    z = (b - b.mean()) / b.std()
    strong = theta > 0
    prob_run = np.where(strong[:, None], special.expit(-0.3 - 1.5 * z[None, :]), 0.6)
    mask = rng.random((N, M)) < prob_run
    matrix = matrix_from_cells(_cells(mask, y))
    fit = fit_matrix(matrix, model="2pl", holdout=0.0)
    w, prop = propensity_weights(matrix, fit.irt.difficulty)
    ipw = ipw_success_rates(matrix, w)
    raw = _raw(mask, y)
    bias_raw = float(np.mean(raw[strong] - truth[strong]))
    bias_ipw = float(np.mean(ipw[strong] - truth[strong]))
    assert bias_raw > 0.1
    assert abs(bias_ipw) <= 0.5 * bias_raw, (bias_ipw, bias_raw)
    assert np.all(w > 0) and np.all((prop > 0) & (prop <= 1))
    # weights are normalised to mean 1 per agent
    c = matrix.cells
    np.testing.assert_allclose(np.bincount(c.agent, w, N) / np.bincount(c.agent), 1.0)
    # the --propensity fit runs and reports IPW rates per agent
    weighted = fit_matrix(matrix, model="2pl", holdout=0.0, propensity=True)
    assert all(r["success_rate_ipw"] is not None for r in weighted.agent_rows)


def test_ipw_cannot_fix_outcome_dependent_reporting() -> None:
    """Agents report 90% of their successes and 30% of their failures (not MAR): the
    difficulty-based propensity model leaves most of the bias in place."""
    rng, _theta, _b, p, y = _world(3)
    truth = p.mean(1)
    mask = rng.random((N, M)) < np.where(y == 1, 0.9, 0.3)
    matrix = matrix_from_cells(_cells(mask, y))
    fit = fit_matrix(matrix, model="2pl", holdout=0.0)
    w, _ = propensity_weights(matrix, fit.irt.difficulty)
    bias_raw = float(np.mean(_raw(mask, y) - truth))
    bias_ipw = float(np.mean(ipw_success_rates(matrix, w) - truth))
    assert bias_raw > 0.15
    assert bias_ipw > 0.5 * bias_raw  # documented limitation, not a fix


def test_sensitivity_band_brackets_unreported_tasks() -> None:
    frame = {"agent_id": [], "agent_name": [], "benchmark": [], "n_tasks": [],
             "task_id": [], "success": [], "reward": []}
    outcomes = {"strong": [1, 1, 1, 0] * 5, "weak": [0, 0, 1, 0] * 5}
    for agent, ys in outcomes.items():
        for t, yv in enumerate(ys):
            if agent == "strong" and t >= 10:
                continue  # strong agent reports only 10 of the 20 tasks
            frame["agent_id"].append(agent)
            frame["agent_name"].append(agent)
            frame["benchmark"].append("bench")
            frame["n_tasks"].append(25)  # the benchmark has 25 tasks; 5 nobody ran
            frame["task_id"].append(f"t{t}")
            frame["success"].append(bool(yv))
            frame["reward"].append(float(yv))
    matrix = build_matrix(frame)
    fit = fit_matrix(matrix, model="1pl", holdout=0.0)
    band = {r["agent"]: r for r in sensitivity_band(matrix, fit.irt)}
    s = band["strong"]
    assert s["tasks_run"] == 10 and s["n_tasks"] == 25 and s["coverage"] == 0.4
    assert s["success_rate_observed"] == 0.8
    assert s["success_rate_unreported_as_failures"] == 8 / 25
    assert 8 / 25 < s["success_rate_unreported_as_predicted"] < 0.8
    w = band["weak"]
    assert w["success_rate_unreported_as_failures"] == 5 / 25


def _band_scanning_every_cell(matrix, fit) -> list[dict]:
    """The band as it was computed before issue 23 (one pass over all cells per coverage
    row): the reference the sorted, per-row-slice version must equal to the last bit."""
    c = matrix.cells
    per_task = c.k / c.n
    items: dict[str, list[int]] = {}
    for j, b in enumerate(matrix.item_benchmark):
        items.setdefault(b, []).append(j)
    out = []
    for row in matrix.coverage:
        i = matrix.agent_ids.index(row["agent_id"])
        bench_items = np.asarray(items[row["benchmark"]], dtype=np.int64)
        mine = (c.agent == i) & np.isin(c.item, bench_items)
        observed = per_task[mine]
        p_all = fit.prob(np.full(bench_items.size, i), bench_items)
        unrun = ~np.isin(bench_items, c.item[mine])
        p_unrun = p_all[unrun] if unrun.any() else p_all
        new = dict(row, success_rate_observed=float(observed.mean()))
        nt, tasks_run = row.get("n_tasks"), row["tasks_run"]
        if nt:
            solved = float(observed.sum()) * tasks_run / observed.size
            missing = max(int(nt) - tasks_run, 0)
            denom = tasks_run + missing
            new["success_rate_unreported_as_failures"] = solved / denom
            new["success_rate_unreported_as_predicted"] = (
                (solved + missing * float(p_unrun.mean())) / denom)
        else:
            new["success_rate_unreported_as_failures"] = None
            new["success_rate_unreported_as_predicted"] = None
        new["predicted_success_rate"] = float(p_all.mean())
        out.append(new)
    return out


def _many_benchmarks_frame(seed: int) -> dict[str, list]:
    """Agents on 3 benchmarks of uneven size, a sparse random subset of tasks each, 1-3
    attempts, a few tasks under two versions, one benchmark without n_tasks, and agents
    in no particular order (so cells, items and benchmarks interleave)."""
    rng = np.random.default_rng(seed)
    frame: dict[str, list] = {k: [] for k in ("agent_id", "agent_name", "benchmark",
                                              "n_tasks", "task_id", "task_version_hash",
                                              "success", "reward")}
    sizes = {"b-one": 40, "b-two": 15, "a-three": 25}
    for a in rng.permutation(30):
        for bench, size in sizes.items():
            if rng.random() < 0.2:
                continue  # this agent never ran this benchmark
            for t in np.flatnonzero(rng.random(size) < 0.5):
                version = "v2" if t % 7 == 0 and a % 2 else "v1"
                for _ in range(int(rng.integers(1, 4))):
                    y = bool(rng.random() < 0.5)
                    frame["agent_id"].append(f"agent-{a}")
                    frame["agent_name"].append(f"agent {a}")
                    frame["benchmark"].append(bench)
                    frame["n_tasks"].append(None if bench == "b-two" else size + 5)
                    frame["task_id"].append(f"{bench}-t{t}")
                    frame["task_version_hash"].append(version)
                    frame["success"].append(y)
                    frame["reward"].append(float(y))
    return frame


def test_sensitivity_band_equals_the_scan_of_every_cell() -> None:
    for seed in (0, 1):
        matrix = build_matrix(_many_benchmarks_frame(seed))
        fit = fit_matrix(matrix, model="1pl", holdout=0.0).irt
        new = sensitivity_band(matrix, fit)
        assert len(new) == len(matrix.coverage) > 50
        assert any(r["n_tasks"] is None for r in new)
        assert any(r["success_rate_unreported_as_predicted"] is not None for r in new)
        assert new == _band_scanning_every_cell(matrix, fit)  # bit for bit


def test_propensity_weights_equal_the_scan_of_every_cell() -> None:
    matrix = build_matrix(_many_benchmarks_frame(2))
    difficulty = fit_matrix(matrix, model="1pl", holdout=0.0).irt.difficulty
    c = matrix.cells
    z = (difficulty - difficulty.mean()) / (difficulty.std() + 1e-12)
    items: dict[str, list[int]] = {}
    for j, b in enumerate(matrix.item_benchmark):
        items.setdefault(b, []).append(j)
    want = np.ones(c.size)
    for i in range(matrix.n_agents):  # the reference: one pass over all cells per agent
        mine = np.flatnonzero(c.agent == i)
        benches = sorted({matrix.item_benchmark[j] for j in c.item[mine].tolist()})
        cand = np.concatenate([np.asarray(items[b]) for b in benches])
        ran = np.isin(cand, c.item[mine]).astype(float)
        X = np.stack([np.ones(cand.size), z[cand]], axis=1)
        beta = np.zeros(2)
        for _ in range(50):
            p = special.expit(X @ beta)
            step = np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X + np.eye(2) / 4,
                                   X.T @ (p - ran) + beta / 4)
            beta -= step
            if np.max(np.abs(step)) < 1e-10:
                break
        want[mine] = special.expit(np.stack([np.ones(mine.size), z[c.item[mine]]], 1) @ beta)
    _, prop = propensity_weights(matrix, difficulty)
    assert np.array_equal(prop, want)
