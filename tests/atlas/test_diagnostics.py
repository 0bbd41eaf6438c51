"""Held-out diagnostics, degenerate flags and suspect broken tasks."""

from __future__ import annotations

import numpy as np

from evalatlas.atlas.diagnostics import split_holdout
from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.irt import Cells
from evalatlas.atlas.matrix import matrix_from_cells
from evalatlas.atlas.simulate import simulate_2pl
from evalatlas.metrics.calibration import roc_auc


def test_heldout_scores_close_to_generating_model() -> None:
    sim = simulate_2pl(200, 300, seed=4)
    fit = fit_matrix(matrix_from_cells(sim.cells), model="2pl", holdout=0.1, seed=9)
    d = fit.diagnostics
    _, held = split_holdout(sim.cells, 0.1, 9)
    c = sim.cells
    p_true = sim.true_prob(c.agent[held], c.item[held])
    true_auc = roc_auc(p_true, c.k[held], 1 - c.k[held])
    assert d["cells_heldout"] == held.sum() and d["cells_observed"] == c.size
    assert abs(d["heldout_auc"] - true_auc) < 0.015
    assert d["ece"] < 0.03 and 0.3 < d["heldout_log_loss"] < 0.6
    # same seed -> same split and identical estimates
    again = fit_matrix(matrix_from_cells(sim.cells), model="2pl", holdout=0.1, seed=9)
    assert again.agent_rows == fit.agent_rows and again.fit_id == fit.fit_id


def test_planted_broken_task_is_flagged_hard_task_is_not() -> None:
    sim = simulate_2pl(150, 100, seed=6, observed=0.9)
    c = sim.cells
    y = c.k.copy()
    easy = int(np.argmin(sim.difficulty))
    y[c.item == easy] = 0.0  # an easy task that nobody passes: broken
    fit = fit_matrix(matrix_from_cells(Cells(c.agent, c.item, y, c.n, 150, 100)),
                     model="2pl", holdout=0.0)
    flags = {r["task_id"]: r["flags"] for r in fit.item_rows}
    assert "suspect_broken" in flags[f"task-{easy}"]
    assert "no_success" in flags[f"task-{easy}"]
    assert fit.diagnostics["tasks_suspect_broken"] >= 1
    # tasks that some agent solves are never suspects
    solved = {r["task_id"] for r in fit.item_rows if r["success_rate_observed"]}
    assert not any("suspect_broken" in flags[t] for t in solved)


def test_every_agent_and_item_listed_with_flags() -> None:
    # agent 3 has no cells; item 2 is solved by all, item 3 by none
    a = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 1])
    j = np.array([0, 2, 3, 0, 2, 3, 1, 2, 3, 1, 1])
    y = np.array([1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1.0])
    fit = fit_matrix(matrix_from_cells(Cells(a, j, y, np.ones(11), 4, 5)), model="2pl",
                     holdout=0.0)
    assert len(fit.agent_rows) == 4 and len(fit.item_rows) == 5
    assert fit.agent_rows[3]["flags"] == ["no_observations"]
    assert fit.item_rows[2]["flags"] == ["all_success"]
    assert fit.item_rows[3]["flags"][0] == "no_success"
    assert fit.item_rows[4]["flags"] == ["no_observations"]
    for r in fit.agent_rows:
        assert np.isfinite([r["ability"], r["ability_ci_low"], r["ability_ci_high"]]).all()
    for r in fit.item_rows:
        assert np.isfinite([r["difficulty_ci_low"], r["discrimination_ci_high"]]).all()
