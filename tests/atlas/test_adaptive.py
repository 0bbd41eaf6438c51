"""Cheap evaluation: 50 adaptive tasks of 1,000 predict the full-benchmark success rate."""

from __future__ import annotations

import numpy as np
from scipy import special

from evalatlas.atlas.adaptive import (
    ItemBank,
    ability,
    ability_from_description,
    adaptive_run,
    description_neighbours,
    next_tasks,
    predicted_rate,
)
from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.irt import Cells
from evalatlas.atlas.matrix import matrix_from_cells

M, N_TRAIN, N_TEST, BUDGET = 1000, 150, 60, 50


def _calibrated_bank(seed: int = 0):
    rng = np.random.default_rng(seed)
    b = rng.normal(0, 1.5, M)
    a = np.exp(rng.normal(0, 0.3, M))
    th_train = rng.normal(0, 1, N_TRAIN)
    ai, ij = np.divmod(np.arange(N_TRAIN * M), M)
    keep = rng.random(ai.size) < 0.5
    ai, ij = ai[keep], ij[keep]
    y = (rng.random(ai.size) < special.expit(a[ij] * (th_train[ai] - b[ij]))).astype(float)
    fit = fit_matrix(matrix_from_cells(Cells(ai, ij, y, np.ones(y.size), N_TRAIN, M)),
                     model="2pl", holdout=0.0)
    return rng, a, b, ItemBank.from_fit(fit)


def test_fifty_adaptive_tasks_predict_full_benchmark_rate() -> None:
    rng, a, b, bank = _calibrated_bank()
    all_items = np.arange(M)
    err_adaptive, err_random_raw, err_random_irt, err_adaptive_raw = [], [], [], []
    for _ in range(N_TEST):
        theta = rng.normal(0, 1)
        outcomes = (rng.random(M) < special.expit(a * (theta - b))).astype(float)
        truth = outcomes.mean()  # the rate it would get running all 1,000 tasks
        items, ys = adaptive_run(bank, lambda j, o=outcomes: o[j], BUDGET, batch=5)
        assert items.size == BUDGET and np.unique(items).size == BUDGET
        ones = np.ones(BUDGET)
        th, cov = ability(bank, items, ys, ones)
        rate, lo, hi = predicted_rate(bank, items, ys, ones, th, cov, all_items)
        assert 0 <= lo <= rate <= hi <= 1
        err_adaptive.append(rate - truth)
        err_adaptive_raw.append(ys.mean() - truth)
        rnd = rng.choice(M, BUDGET, replace=False)
        err_random_raw.append(outcomes[rnd].mean() - truth)
        th_r, cov_r = ability(bank, rnd, outcomes[rnd], ones)
        err_random_irt.append(predicted_rate(bank, rnd, outcomes[rnd], ones, th_r, cov_r,
                                             all_items)[0] - truth)
    mae = np.mean(np.abs(err_adaptive))
    assert mae <= 0.06, mae
    assert np.mean(np.abs(err_adaptive) <= 0.10) >= 0.80
    # clearly better than 50 random tasks (raw rate), and than IRT on random tasks
    assert mae <= 0.8 * np.mean(np.abs(err_random_raw))
    assert mae < np.mean(np.abs(err_random_irt))
    # the raw rate on adaptively chosen tasks is badly biased (they sit near p = 0.5)
    assert np.mean(np.abs(err_adaptive_raw)) > 2 * mae


def test_next_tasks_skip_run_items_and_rank_by_information() -> None:
    _, _, _, bank = _calibrated_bank(1)
    run = np.array([0, 1, 2])
    picks = next_tasks(bank, run, np.array([1.0, 0.0, 1.0]), np.ones(3), 10)
    idx = [j for j, _ in picks]
    info = [v for _, v in picks]
    assert len(idx) == 10 and not set(idx) & set(run.tolist())
    assert info == sorted(info, reverse=True)
    # nothing left to run -> nothing suggested
    assert next_tasks(bank, np.arange(M), np.zeros(M), np.ones(M), 5) == []


def test_cold_start_prior_is_wide_and_description_is_weak() -> None:
    _, _, _, bank = _calibrated_bank(2)
    th, cov = ability(bank, np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
    assert th[0] == 0.0 and cov[0, 0] == bank.priors.ability_sd ** 2
    _rate, lo, hi = predicted_rate(bank, np.zeros(0, dtype=np.int64), np.zeros(0),
                                  np.zeros(0), th, cov, np.arange(M))
    assert hi - lo > 0.4  # the population prior says little
    descr = ["ReAct agent on gpt-4o with bash tools", "claude sonnet with a planner",
             "tiny llama 7b baseline", None]
    abil = np.array([1.0, 1.2, -1.5, 0.0])
    se = np.full(4, 0.2)
    nn = description_neighbours("gpt-4o ReAct agent, bash", descr)
    assert nn[0][0] == 0
    mean, sd, _ = ability_from_description("gpt-4o ReAct agent, bash", descr, abil, se, 1.0)
    assert 0.5 < mean <= 1.2 and 0.2 < sd < 1.0
    mean, sd, nn = ability_from_description("unrelated words only", descr, abil, se, 1.0)
    assert (mean, sd, nn) == (0.0, 1.0, [])
