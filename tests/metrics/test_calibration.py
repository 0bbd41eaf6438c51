"""ROC AUC, log loss and ECE with count weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.metrics.calibration import expected_calibration_error, log_loss, roc_auc


def test_auc_matches_pairwise_definition() -> None:
    p = np.array([0.1, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1])
    # pairs (pos, neg): (0.35 vs 0.1) win, (0.35 vs 0.4) loss, (0.8 vs both) win -> 3/4
    assert roc_auc(p, y, 1 - y) == pytest.approx(0.75)


def test_auc_counts_equal_expanded_trials_and_ties_count_half() -> None:
    # one cell "2 of 3" at score 0.5 == three trials at 0.5 (ties with each other)
    assert roc_auc(np.array([0.5]), np.array([2.0]), np.array([1.0])) == pytest.approx(0.5)
    p = np.array([0.2, 0.7])
    assert roc_auc(p, np.array([1.0, 3.0]), np.array([2.0, 1.0])) == pytest.approx(
        roc_auc(np.repeat(p, [3, 4]), np.array([1, 0, 0, 1, 1, 1, 0.0]),
                1 - np.array([1, 0, 0, 1, 1, 1, 0.0])))


def test_auc_undefined_without_both_classes() -> None:
    assert math.isnan(roc_auc(np.array([0.3, 0.6]), np.array([1.0, 1.0]), np.zeros(2)))


def test_log_loss_value() -> None:
    p = np.array([0.8, 0.3])
    expected = -(math.log(0.8) + math.log(0.7)) / 2
    assert log_loss(p, np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(expected)


def test_ece_ten_bins() -> None:
    # bin [0.1,0.2): predicted 0.15, observed 0/2; bin [0.9,1]: predicted 0.95, observed 2/2
    p = np.array([0.15, 0.15, 0.95, 0.95])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    assert expected_calibration_error(p, y, 1 - y) == pytest.approx(0.5 * 0.15 + 0.5 * 0.05)
    # p == 1.0 falls in the last bin, not out of range
    assert expected_calibration_error(np.array([1.0]), np.ones(1), np.zeros(1)) == 0.0


def test_bad_inputs_rejected() -> None:
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        roc_auc(np.array([1.2]), np.ones(1), np.zeros(1))
    with pytest.raises(ValueError, match="length"):
        log_loss(np.array([0.5, 0.5]), np.ones(1), np.zeros(1))
