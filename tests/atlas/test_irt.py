"""IRT fits: interval coverage, recovery, determinism and degenerate rows/columns."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evalatlas.atlas.irt import Cells, ModelSpec, fit_irt
from evalatlas.atlas.simulate import simulate_2pl


def test_ability_interval_coverage() -> None:
    """95% Laplace intervals cover 93-97% of true abilities (2PL, 4 x 250 agents)."""
    hits = total = 0
    for seed in range(4):
        sim = simulate_2pl(250, 80, observed=0.7, seed=100 + seed)
        fit = fit_irt(sim.cells, "2pl")
        z = (fit.ability - sim.ability) / fit.ability_se
        hits += int(np.sum(np.abs(z) <= 1.959964))
        total += z.size
    coverage = hits / total
    assert 0.93 <= coverage <= 0.97, coverage


def test_1pl_interval_coverage() -> None:
    hits = total = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        N, M = 300, 60
        th, b = rng.normal(0, 1, N), rng.normal(0, 1.5, M)
        a, j = np.divmod(np.arange(N * M), M)
        keep = rng.random(N * M) < 0.7
        a, j = a[keep], j[keep]
        y = (rng.random(a.size) < 1 / (1 + np.exp(-(th[a] - b[j])))).astype(float)
        fit = fit_irt(Cells(a, j, y, np.ones_like(y), N, M), "1pl")
        hits += int(np.sum(np.abs(fit.ability - (th - th.mean())) <= 1.959964 * fit.ability_se))
        total += N
    assert 0.93 <= hits / total <= 0.97, hits / total


def test_recovery_and_every_parameter_has_finite_interval() -> None:
    sim = simulate_2pl(150, 300, seed=3)
    fit = fit_irt(sim.cells, "2pl")
    assert stats.spearmanr(fit.ability, sim.ability)[0] > 0.97
    assert stats.spearmanr(fit.difficulty, sim.difficulty)[0] > 0.97
    assert stats.spearmanr(fit.discrimination, sim.discrimination)[0] > 0.5
    for arr in (fit.ability_se, fit.difficulty_se, fit.discrimination_se):
        assert np.all(np.isfinite(arr)) and np.all(arr > 0)
    assert abs(fit.ability.mean()) < 1e-9  # identification: mean ability 0
    assert fit.converged


def test_deterministic() -> None:
    sim = simulate_2pl(80, 120, seed=5)
    for model in ("1pl", "2pl", "mf:2"):
        f1 = fit_irt(sim.cells, model, seed=7)
        f2 = fit_irt(sim.cells, model, seed=7)
        assert np.array_equal(f1.theta, f2.theta)
        assert np.array_equal(f1.difficulty, f2.difficulty)
        assert np.array_equal(f1.loadings, f2.loadings)
        assert np.array_equal(f1.theta_cov, f2.theta_cov)


def test_mf_fits_two_dimensional_data_better_than_2pl() -> None:
    rng = np.random.default_rng(11)
    N, M, r = 200, 150, 2
    th, A = rng.normal(size=(N, r)), rng.normal(size=(M, r))
    d = rng.normal(size=M)
    a, j = np.divmod(np.arange(N * M), M)
    keep = rng.random(N * M) < 0.6
    a, j = a[keep], j[keep]
    p = 1 / (1 + np.exp(-(np.sum(th[a] * A[j], 1) - d[j])))
    y = (rng.random(a.size) < p).astype(float)
    train = rng.random(a.size) < 0.9
    cells = Cells(a[train], j[train], y[train], np.ones(train.sum()), N, M)
    test = ~train

    def loss(fit) -> float:
        q = np.clip(fit.prob(a[test], j[test]), 1e-9, 1 - 1e-9)
        return float(-np.mean(y[test] * np.log(q) + (1 - y[test]) * np.log(1 - q)))

    mf, two = fit_irt(cells, "mf:2"), fit_irt(cells, "2pl")
    assert loss(mf) < loss(two) - 0.02
    assert np.all(np.isfinite(mf.ability_se)) and np.all(np.isfinite(mf.difficulty_se))


def test_degenerate_rows_and_columns_stay_finite() -> None:
    sim = simulate_2pl(40, 30, seed=2, observed=0.8)
    c = sim.cells
    N, M = 43, 33  # agent 40: no cells; 41 all success; 42 all failure
    extra_a = np.concatenate([np.full(30, 41), np.full(30, 42)])
    extra_j = np.concatenate([np.arange(30), np.arange(30)])
    extra_y = np.concatenate([np.ones(30), np.zeros(30)])
    # item 30: no cells; 31 solved by everyone; 32 by no one
    col_a = np.concatenate([np.arange(40), np.arange(40)])
    col_j = np.concatenate([np.full(40, 31), np.full(40, 32)])
    col_y = np.concatenate([np.ones(40), np.zeros(40)])
    cells = Cells(np.concatenate([c.agent, extra_a, col_a]),
                  np.concatenate([c.item, extra_j, col_j]),
                  np.concatenate([c.k, extra_y, col_y]),
                  np.ones(c.size + 140), N, M)
    for model in ("1pl", "2pl", "mf:2"):
        fit = fit_irt(cells, model)
        for arr in (fit.ability, fit.ability_se, fit.difficulty, fit.difficulty_se,
                    fit.discrimination):
            assert np.all(np.isfinite(arr)), model
        assert fit.ability[41] > fit.ability[:40].max()
        assert fit.ability[42] < fit.ability[:40].min()
        assert fit.ability_se[40] == pytest.approx(fit.priors.ability_sd, rel=1e-6)


def test_single_agent_and_single_item() -> None:
    cells = Cells(np.zeros(5, dtype=np.int64), np.arange(5), np.array([1, 1, 0, 1, 0.0]),
                  np.ones(5), 1, 5)
    fit = fit_irt(cells, "2pl")
    assert np.all(np.isfinite(fit.ability)) and np.all(np.isfinite(fit.difficulty_se))
    one = Cells(np.arange(4), np.zeros(4, dtype=np.int64), np.ones(4), np.ones(4), 4, 1)
    fit = fit_irt(one, "1pl")
    assert np.all(np.isfinite(fit.difficulty))


def test_binomial_cells_equal_repeated_bernoulli() -> None:
    """k of n in one cell is the same likelihood as n Bernoulli rows."""
    rng = np.random.default_rng(0)
    N, M = 30, 20
    a, j = np.divmod(np.arange(N * M), M)
    k = rng.integers(0, 4, a.size).astype(float)
    binom = fit_irt(Cells(a, j, k, np.full(a.size, 3.0), N, M), "1pl")
    rep_a, rep_j = np.repeat(a, 3), np.repeat(j, 3)
    y = (np.tile(np.arange(3), a.size) < np.repeat(k, 3)).astype(float)
    bern = fit_irt(Cells(rep_a, rep_j, y, np.ones(y.size), N, M), "1pl")
    np.testing.assert_allclose(binom.ability, bern.ability, atol=1e-5)


def test_model_names() -> None:
    assert ModelSpec.parse("MF:3").name == "mf:3"
    assert ModelSpec.parse("rasch").name == "1pl"
    with pytest.raises(ValueError, match="unknown model"):
        ModelSpec.parse("3pl")
