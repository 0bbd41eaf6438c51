"""Probabilistic prediction quality: ROC AUC, log loss, expected calibration error.

Every function takes predicted probabilities ``p`` and observed outcomes as *counts*:
``positives`` and ``negatives`` per prediction (a binomial cell "k of n" is
``positives=k, negatives=n-k``; a Bernoulli outcome is ``(y, 1-y)``; a fractional reward
``y`` in [0, 1] gives the soft-label weights ``(y, 1-y)``). This lets the agent x task
matrix score binomial and reward cells without expanding them into single trials.
Pure functions: arrays in, a float out; ``nan`` when the quantity is undefined.
"""

from __future__ import annotations

import numpy as np

_EPS = 1e-12


def _check(p: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, ...]:
    p = np.asarray(p, dtype=np.float64).ravel()
    pos = np.asarray(pos, dtype=np.float64).ravel()
    neg = np.asarray(neg, dtype=np.float64).ravel()
    if not (p.shape == pos.shape == neg.shape):
        raise ValueError(f"p, positives and negatives differ in length: "
                         f"{p.shape[0]}, {pos.shape[0]}, {neg.shape[0]}")
    if p.size and (np.any(~np.isfinite(p)) or p.min() < 0 or p.max() > 1):
        raise ValueError("predicted probabilities must be finite and in [0, 1]")
    if pos.size and (min(pos.min(), neg.min()) < 0 or not np.all(np.isfinite(pos + neg))):
        raise ValueError("positive and negative counts must be finite and >= 0")
    return p, pos, neg


def roc_auc(p: np.ndarray, positives: np.ndarray, negatives: np.ndarray) -> float:
    """Area under the ROC curve with count weights: P(score+ > score-) + P(tie)/2.

    ``AUC = sum_i pos_i * (N_below(s_i) + N_tied(s_i)/2) / (P * N)`` where ``N_below(s)``
    is the negative weight at scores below ``s`` (Mann-Whitney U / (P*N); Hanley &
    McNeil 1982). ``nan`` when there are no positives or no negatives.
    """
    p, pos, neg = _check(p, positives, negatives)
    total_pos, total_neg = pos.sum(), neg.sum()
    if total_pos <= 0 or total_neg <= 0:
        return float("nan")
    scores, inverse = np.unique(p, return_inverse=True)
    pos_by = np.bincount(inverse, weights=pos, minlength=scores.size)
    neg_by = np.bincount(inverse, weights=neg, minlength=scores.size)
    neg_below = np.cumsum(neg_by) - neg_by
    u = float(np.sum(pos_by * (neg_below + 0.5 * neg_by)))
    return u / float(total_pos * total_neg)


def log_loss(p: np.ndarray, positives: np.ndarray, negatives: np.ndarray) -> float:
    """Mean negative log-likelihood per trial (natural log), probabilities clipped to
    ``[1e-12, 1 - 1e-12]``: ``-sum(pos*log p + neg*log(1-p)) / sum(pos + neg)``.

    ``nan`` with no trials.
    """
    p, pos, neg = _check(p, positives, negatives)
    total = pos.sum() + neg.sum()
    if total <= 0:
        return float("nan")
    q = np.clip(p, _EPS, 1 - _EPS)
    return float(-(pos @ np.log(q) + neg @ np.log1p(-q)) / total)


def expected_calibration_error(
    p: np.ndarray, positives: np.ndarray, negatives: np.ndarray, bins: int = 10
) -> float:
    """ECE with ``bins`` equal-width bins on [0, 1] (Naeini et al. 2015; Guo et al. 2017).

    ``ECE = sum_b (W_b / W) * |observed_b - predicted_b|`` where ``W_b`` is the trial
    weight (pos + neg) of bin ``b``, ``observed_b`` its positive share and ``predicted_b``
    its weighted mean probability. A probability of exactly 1 falls in the last bin.
    ``nan`` with no trials.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    p, pos, neg = _check(p, positives, negatives)
    w = pos + neg
    total = w.sum()
    if total <= 0:
        return float("nan")
    idx = np.minimum((p * bins).astype(np.int64), bins - 1)
    w_b = np.bincount(idx, weights=w, minlength=bins)
    pos_b = np.bincount(idx, weights=pos, minlength=bins)
    pred_b = np.bincount(idx, weights=w * p, minlength=bins)
    used = w_b > 0
    gap = np.abs(pos_b[used] - pred_b[used])  # = W_b * |observed_b - predicted_b|
    return float(gap.sum() / total)
