"""How good is a fit: held-out cells, calibration, degenerate rows and broken tasks.

- **Held-out cells**: a seeded random ``holdout`` share of the observed cells is left out
  of the fit; the fitted model then predicts them. AUC, log loss and ECE (10 equal-width
  bins) come from :mod:`evalatlas.metrics.calibration`, with binomial cells counted as
  k positives and n-k negatives (reward cells: soft labels).
- **Flags** (on the cells the fit used): ``no_observations``, ``all_success``,
  ``no_success``. Such rows and columns keep finite, prior-regularised estimates.
- **Suspect broken tasks**: a task nobody solved whose zero is surprising: under the
  fitted distribution of the *other* items' parameters (each fitted item in turn stands
  in for this one), the probability that the agents who tried it would all fail is below
  ``broken_p`` (default 0.01). Outcomes alone cannot tell a broken task from a very hard
  one, so this is a list to look at, not a verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalatlas.atlas.irt import Cells, IRTFit, logit_for
from evalatlas.metrics.calibration import expected_calibration_error, log_loss, roc_auc

BROKEN_P = 0.01


def split_holdout(cells: Cells, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (train, heldout) over cells; ``round(fraction * cells)`` held out."""
    if not 0 <= fraction < 1:
        raise ValueError(f"holdout must be in [0, 1), got {fraction}")
    n_out = round(fraction * cells.size)
    held = np.zeros(cells.size, dtype=bool)
    if n_out:
        rng = np.random.default_rng(seed)
        held[rng.choice(cells.size, size=n_out, replace=False)] = True
    return ~held, held


def heldout_scores(fit: IRTFit | None, cells: Cells) -> dict[str, float | None]:
    """AUC, log loss and ECE of ``fit`` on ``cells`` (None when undefined: no cells)."""
    if fit is None or cells.size == 0:
        return {"heldout_auc": None, "heldout_log_loss": None, "ece": None}
    p = fit.prob(cells.agent, cells.item)
    pos, neg = cells.k, cells.n - cells.k
    out = {"heldout_auc": roc_auc(p, pos, neg), "heldout_log_loss": log_loss(p, pos, neg),
           "ece": expected_calibration_error(p, pos, neg, bins=10)}
    return {k: (None if v is None or np.isnan(v) else float(v)) for k, v in out.items()}


def flags(index: np.ndarray, cells: Cells, size: int) -> list[list[str]]:
    """Per row (agent) or column (item): degenerate-outcome flags on ``cells``."""
    k = np.bincount(index, cells.k, size)
    n = np.bincount(index, cells.n, size)
    out: list[list[str]] = []
    for kk, nn in zip(k.tolist(), n.tolist(), strict=True):
        f = []
        if nn == 0:
            f.append("no_observations")
        elif kk >= nn:
            f.append("all_success")
        elif kk <= 0:
            f.append("no_success")
        out.append(f)
    return out


def broken_task_probability(fit: IRTFit, cells: Cells, max_reference: int = 100) -> np.ndarray:
    """Per item with no success: P(all its observed agents fail | a typical item).

    A typical item is each of up to ``max_reference`` fitted items (evenly spaced in
    difficulty order) in turn; the probability is averaged over them. Items with a
    success get NaN. Vectorised per item over its cells; cost ~ cells x references.
    """
    M = cells.n_items
    k_i = np.bincount(cells.item, cells.k, M)
    n_i = np.bincount(cells.item, cells.n, M)
    out = np.full(M, np.nan)
    zero = np.flatnonzero((k_i == 0) & (n_i > 0))
    if zero.size == 0 or M < 2:
        return out
    order = np.argsort(fit.difficulty, kind="stable")
    ref = order[np.linspace(0, M - 1, min(max_reference, M)).astype(np.int64)]
    for j in zero.tolist():
        mask = cells.item == j
        agents, n = cells.agent[mask], cells.n[mask]
        others = ref[ref != j]
        if others.size == 0:
            continue
        th = np.repeat(fit.theta[agents], others.size, axis=0)
        items = np.tile(others, agents.size)
        eta = logit_for(fit.model, th, fit.loadings[items], fit.difficulty[items])
        log_fail = -np.logaddexp(0.0, eta).reshape(agents.size, others.size)
        log_all_fail = (log_fail * n[:, None]).sum(axis=0)
        out[j] = float(np.exp(log_all_fail).mean())
    return out


def summarise_items(item_flags: list[list[str]], broken_p: np.ndarray,
                    threshold: float = BROKEN_P) -> dict[str, Any]:
    """Add ``suspect_broken`` flags in place; counts for the diagnostics block."""
    suspect = 0
    for j, f in enumerate(item_flags):
        p = broken_p[j]
        if np.isfinite(p) and p < threshold:
            f.append("suspect_broken")
            suspect += 1
    return {
        "tasks_all_solved": sum("all_success" in f for f in item_flags),
        "tasks_none_solved": sum("no_success" in f for f in item_flags),
        "tasks_suspect_broken": suspect,
    }
