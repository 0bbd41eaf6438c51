"""stats.agreement.phi_agreement: phi and raw agreement of paired binary outcomes."""

from __future__ import annotations

import numpy as np
import pytest

from evalatlas.stats.agreement import phi_agreement


def test_phi_of_a_worked_table() -> None:
    # n11 = 3, n10 = 1, n01 = 1, n00 = 3: phi = (9 - 1) / sqrt(4 * 4 * 4 * 4) = 0.5
    a = [True, True, True, False, False, False, True, False]
    b = [True, True, False, False, False, True, True, False]
    assert phi_agreement(a, b) == (0.5, 0.75, 8)


def test_phi_is_the_pearson_correlation_of_the_0_1_vectors() -> None:
    rng = np.random.default_rng(7)
    a = rng.random(500) < 0.4
    b = np.where(rng.random(500) < 0.8, a, ~a)
    phi, agree, n = phi_agreement(a.tolist(), b.tolist())
    assert n == 500 and agree == pytest.approx(float(np.mean(a == b)))
    assert phi == pytest.approx(float(np.corrcoef(a, b)[0, 1]), abs=1e-12)
    assert phi_agreement(a.tolist(), (~a).tolist())[0] == pytest.approx(-1.0)


def test_constant_or_empty_outcomes_have_no_phi() -> None:
    assert phi_agreement([True, True, True], [True, False, True]) == (None, 2 / 3, 3)
    assert phi_agreement([], []) == (None, None, 0)
    with pytest.raises(ValueError, match="differ in length"):
        phi_agreement([True], [True, False])
