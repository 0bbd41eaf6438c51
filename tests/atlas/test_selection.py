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
