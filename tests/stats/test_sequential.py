"""The anytime-valid betting test and confidence sequence (stats/sequential.py):
the capital by hand, the interval/test agreement, and validity under continuous peeking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.stats.sequential import BET_CAP, sequential_drop_test


def _capital_by_hand(d: list[float], margin: float, alpha: float) -> list[float]:
    """K_t^- at m0 = (1 - margin)/2 on x = (d + 1)/2, straight from the paper's formulas."""
    x = [(v + 1) / 2 for v in d]
    m0 = (1 - margin) / 2
    k, out, s, ss = 1.0, [], 0.0, 0.0
    sigma_prev = 0.25
    for t, xi in enumerate(x, start=1):
        lam = math.sqrt(2 * math.log(1 / alpha) / (sigma_prev * t * math.log(1 + t)))
        lam = min(lam, BET_CAP / (1 - m0))
        k *= 1 - lam * (xi - m0)
        out.append(k)
        s += xi
        mu = (0.5 + s) / (t + 1)
        ss += (xi - mu) ** 2
        sigma_prev = (0.25 + ss) / (t + 1)
    return out


def test_e_value_matches_the_capital_by_hand() -> None:
    d = [-1, 0, -1, -1, 0.5, -1, -0.5, -1, 0, -1, -1, -1]
    res = sequential_drop_test(d, alpha=0.05)
    path = _capital_by_hand(d, 0.0, 0.05)
    assert res.e_value == pytest.approx(max(1.0, *path), rel=1e-9)
    assert res.p_value == pytest.approx(1 / res.e_value)
    first = next((i + 1 for i, k in enumerate(path) if k >= 20), None)
    assert res.rejected_at == first


def test_interval_and_test_agree() -> None:
    rng = np.random.default_rng(2)
    for drop in (0.0, 0.1, 0.3):
        d = np.clip(rng.choice([-1, 0, 0, 1], 200) - drop * rng.random(200) * 2, -1, 1)
        for margin in (0.0, 0.05):
            res = sequential_drop_test(d, margin=margin)
            assert -1 <= res.low <= res.high <= 1
            # rejected exactly when the upper bound is below -margin
            if res.rejected_at is not None:
                assert res.high <= -margin + 1e-6
            else:
                assert res.high >= -margin - 1e-6


def test_no_values_and_bad_input() -> None:
    res = sequential_drop_test([])
    assert (res.n, res.e_value, res.low, res.high, res.rejected_at) == (0, 1.0, None, None,
                                                                        None)
    with pytest.raises(ValueError, match="lie in"):
        sequential_drop_test([0.5, 2.0])
    with pytest.raises(ValueError, match="alpha"):
        sequential_drop_test([0.1], alpha=1.5)


def test_anytime_valid_under_peeking_and_covers_the_mean() -> None:
    """No change, heterogeneous tasks (each its own success probability, 1-3 attempts a
    side), 500 tasks, looking after every task: false alarms at most alpha (plus 2 Monte
    Carlo SEs); the confidence sequence covers the true mean (0) at the end."""
    rng = np.random.default_rng(20261126)
    sims, alpha, alarms, covered = 1_000, 0.05, 0, 0
    for _ in range(sims):
        p = rng.beta(2, 1.5, 500)
        kb, kc = rng.integers(1, 4, 500), rng.integers(1, 4, 500)
        d = rng.binomial(kc, p) / kc - rng.binomial(kb, p) / kb
        res = sequential_drop_test(d, alpha=alpha)
        alarms += res.rejected_at is not None
        covered += res.low <= 0 <= res.high
    assert alarms / sims <= alpha + 2 * math.sqrt(alpha * (1 - alpha) / sims)
    assert covered / sims >= 1 - 2 * alpha - 2 * math.sqrt(0.1 * 0.9 / sims)


def test_detects_a_real_drop() -> None:
    rng = np.random.default_rng(8)
    p = rng.beta(2, 1.5, 500)
    d = rng.binomial(3, np.clip(p - 0.15, 0, 1)) / 3 - rng.binomial(3, p) / 3
    res = sequential_drop_test(d)
    assert res.rejected_at is not None and res.rejected_at < 500 and res.high < 0
