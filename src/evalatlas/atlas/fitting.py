"""``evalatlas.atlas.fit``: matrix -> held-out split -> IRT fit -> typed result.

Pure: takes a :class:`ResponseMatrix` (or an episodes frame) and returns an
:class:`AtlasFit`; reading from and writing to the store is done by the caller
(:func:`evalatlas.atlas.fit` in the package root of atlas accepts a store too).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Any

import numpy as np

from evalatlas.atlas.diagnostics import (
    broken_task_probability,
    flags,
    heldout_scores,
    split_holdout,
    summarise_items,
)
from evalatlas.atlas.errors import AtlasError
from evalatlas.atlas.irt import Cells, IRTFit, ModelSpec, Priors, fit_irt
from evalatlas.atlas.matrix import CellKind, DriftMode, ResponseMatrix, build_matrix
from evalatlas.atlas.results import AtlasFit
from evalatlas.atlas.selection import (
    ipw_success_rates,
    propensity_weights,
    sensitivity_band,
)

Z95 = 1.959963984540054


def _fit_id(matrix: ResponseMatrix, settings: dict[str, Any]) -> str:
    """Content id: same cells, labels and settings -> same id (a refit replaces it)."""
    h = hashlib.sha256()
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    for arr in (matrix.cells.agent, matrix.cells.item, matrix.cells.k, matrix.cells.n):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update("\x1f".join(matrix.agent_ids).encode())
    h.update("\x1f".join(f"{b}\x1e{t}\x1e{v}" for b, t, v in zip(
        matrix.item_benchmark, matrix.item_task_id, matrix.item_hash, strict=True)).encode())
    return h.hexdigest()[:16]


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def fit_matrix(
    matrix: ResponseMatrix,
    *,
    model: str | ModelSpec = "2pl",
    holdout: float = 0.1,
    seed: int = 0,
    propensity: bool = False,
    priors: Priors | None = None,
    benchmark: list[str] | None = None,
    drift: str = "split",
) -> AtlasFit:
    """Fit ``model`` on every observed cell of the matrix; score the held-out
    diagnostics (AUC, log loss, calibration) on a second fit without a seeded
    ``holdout`` share.

    The stored abilities and difficulties come from all the data, so an agent that ran
    500 tasks is fitted on 500 and ``estimate`` agrees with ``abilities`` for it; the
    held-out split only measures how well the model predicts cells it has not seen
    (issue 21 point 7). With ``holdout=0`` there is one fit and no held-out scores.
    Every agent and item of the matrix gets a row, with finite (prior-regularised)
    estimates and ``flags`` when its cells are degenerate.
    """
    spec = ModelSpec.parse(model) if isinstance(model, str) else model
    started = time.perf_counter()
    cells = matrix.cells
    train_mask, held_mask = split_holdout(cells, holdout, seed)
    held = cells.subset(held_mask)
    settings = {"model": spec.name, "cell": matrix.cell, "benchmark": benchmark,
                "holdout": holdout, "seed": seed, "drift": drift, "propensity": propensity}
    notes: list[str] = []
    diag_irt = None
    if held.size:
        diag_irt, _, _ = _fit_cells(matrix, train_mask, spec, priors, seed, propensity)
    diag: dict[str, Any] = heldout_scores(diag_irt, held)
    everything = np.ones(cells.size, dtype=bool)
    # warm-started from the diagnostic fit (which never saw the held-out cells)
    irt, train, ipw_rates = _fit_cells(matrix, everything, spec, priors, seed, propensity,
                                       start=diag_irt)
    if propensity:
        notes.append("--propensity: cells weighted by 1/P(agent ran task | difficulty); "
                     "see evalatlas.atlas.selection for the assumption")
    if not irt.converged:
        notes.append(f"optimiser did not report convergence: {irt.message}")
    agent_flags = flags(train.agent, train, matrix.n_agents)
    item_flags = flags(train.item, train, matrix.n_items)
    broken = broken_task_probability(irt, train)
    diag.update(summarise_items(item_flags, broken))
    agent_rows = _agent_rows(matrix, irt, train, agent_flags, ipw_rates)
    item_rows = _item_rows(matrix, irt, train, item_flags, broken)
    seconds = time.perf_counter() - started
    diag.update({
        "cells_observed": train.size, "cells_heldout": held.size,
        "fitted_on": "all observed cells; the held-out cells score the diagnostics only "
                     "(on a separate fit without them)",
        "model": spec.name,
        "seconds": seconds, "converged": irt.converged, "iterations": irt.iterations,
        "ability_sd_estimate": irt.extra.get("ability_sd"),
        "agents": matrix.n_agents, "items": matrix.n_items,
        "episodes_used": matrix.episodes_used,
        "episodes_unknown_outcome": matrix.episodes_unknown_outcome,
        "standard_errors": "laplace-block-diagonal-observed-information",
    })
    parts = _components(train)
    diag["linked_groups"] = parts
    if parts > 1:
        notes.append(f"the fitted cells form {parts} groups with no agent or task in common: "
                     "abilities (and difficulties) in different groups are on unlinked "
                     "scales; compare within a group or fit one --benchmark at a time")
    if matrix.drift and drift == "split":
        notes.append(f"{len(matrix.drift)} task(s) ran under more than one task_version_hash; "
                     "each version is its own item (see `evalatlas atlas drift`)")
    if matrix.episodes_unknown_outcome:
        notes.append(f"{matrix.episodes_unknown_outcome} episode(s) with an unknown outcome "
                     "left out")
    return AtlasFit(
        fit_id=_fit_id(matrix, settings), settings=settings, agent_rows=agent_rows,
        item_rows=item_rows, diagnostics=diag,
        coverage_rows=sensitivity_band(matrix, irt) if matrix.coverage else [],
        drift_rows=matrix.drift, notes=notes, irt=irt, matrix=matrix)


def _fit_cells(matrix: ResponseMatrix, mask: np.ndarray, spec: ModelSpec,
               priors: Priors | None, seed: int, propensity: bool,
               start: IRTFit | None = None) -> tuple[IRTFit, Cells, np.ndarray | None]:
    """One IRT fit on the cells ``mask`` keeps (inverse-propensity weighted on request;
    warm-started from ``start``): the fit, the cells it used, the IPW success rates
    (None without ``propensity``)."""
    train = matrix.cells.subset(mask)
    irt = fit_irt(train, spec, priors=priors, seed=seed, start=start)
    if not propensity:
        return irt, train, None
    weights, _ = propensity_weights(matrix, irt.difficulty)
    train = Cells(train.agent, train.item, train.k, train.n, train.n_agents,
                  train.n_items, weights[mask])
    return fit_irt(train, spec, priors=priors, seed=seed, start=irt), train, \
        ipw_success_rates(matrix, weights)


def _components(cells: Cells) -> int:
    """Connected groups of the bipartite agent-item graph of observed cells (agents or
    items without cells do not count)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    N, M = cells.n_agents, cells.n_items
    if cells.size == 0:
        return 0
    g = coo_matrix((np.ones(cells.size), (cells.agent, N + cells.item)), shape=(N + M, N + M))
    _, labels = connected_components(g, directed=False)
    used = np.unique(np.concatenate([cells.agent, N + cells.item]))
    return int(np.unique(labels[used]).size)


def _agent_rows(matrix: ResponseMatrix, irt: IRTFit, train: Cells,
                agent_flags: list[list[str]], ipw: np.ndarray | None) -> list[dict[str, Any]]:
    N = matrix.n_agents
    tasks = np.bincount(train.agent, minlength=N)
    k = np.bincount(train.agent, train.k, N)
    n = np.bincount(train.agent, train.n, N)
    ab, se = irt.ability, irt.ability_se
    rows = []
    for i in range(N):
        row: dict[str, Any] = {
            "agent": matrix.agent_names[i], "agent_id": matrix.agent_ids[i],
            "ability": float(ab[i]), "ability_se": float(se[i]),
            "ability_ci_low": float(ab[i] - Z95 * se[i]),
            "ability_ci_high": float(ab[i] + Z95 * se[i]),
            "tasks_observed": int(tasks[i]), "successes": float(k[i]), "trials": float(n[i]),
            "flags": agent_flags[i],
        }
        if irt.model.kind == "mf":
            row["ability_dims"] = [float(v) for v in irt.theta[i]]
        if ipw is not None:
            row["success_rate_ipw"] = _finite(ipw[i])
        rows.append(row)
    return rows


def _item_rows(matrix: ResponseMatrix, irt: IRTFit, train: Cells,
               item_flags: list[list[str]], broken: np.ndarray) -> list[dict[str, Any]]:
    M = matrix.n_items
    agents = np.bincount(train.item, minlength=M)
    k = np.bincount(train.item, train.k, M)
    n = np.bincount(train.item, train.n, M)
    b, bse = irt.difficulty, irt.difficulty_se
    one_pl = irt.model.kind == "1pl"
    disc, dse, lse = irt.discrimination, irt.discrimination_se, irt.log_discrimination_se
    rows: list[dict[str, Any]] = []
    for j in range(M):
        if one_pl:
            d_val = d_se = d_lo = d_hi = None
        elif irt.model.kind == "2pl":
            d_val, d_se = float(disc[j]), float(dse[j])
            d_lo = float(math.exp(math.log(disc[j]) - Z95 * lse[j]))
            d_hi = float(math.exp(math.log(disc[j]) + Z95 * lse[j]))
        else:
            d_val, d_se = float(disc[j]), float(dse[j])
            d_lo, d_hi = max(0.0, d_val - Z95 * d_se), d_val + Z95 * d_se
        rows.append({
            "benchmark": matrix.item_benchmark[j], "task_id": matrix.item_task_id[j],
            "task_version_hash": matrix.item_hash[j],
            "difficulty": float(b[j]), "discrimination": d_val,
            "difficulty_se": float(bse[j]), "discrimination_se": d_se,
            "difficulty_ci_low": float(b[j] - Z95 * bse[j]),
            "difficulty_ci_high": float(b[j] + Z95 * bse[j]),
            "discrimination_ci_low": d_lo, "discrimination_ci_high": d_hi,
            "agents_observed": int(agents[j]),
            "success_rate_observed": float(k[j] / n[j]) if n[j] > 0 else None,
            "p_all_fail_if_typical": _finite(broken[j]),
            "flags": item_flags[j],
        })
        if irt.model.kind == "mf":
            rows[-1]["loadings"] = [float(v) for v in irt.loadings[j]]
    return rows


def fit_episodes(
    frame: Any,
    *,
    model: str = "2pl",
    cell: CellKind = "success",
    holdout: float = 0.1,
    seed: int = 0,
    drift: DriftMode = "split",
    propensity: bool = False,
    benchmark: list[str] | str | None = None,
    priors: Priors | None = None,
) -> AtlasFit:
    """Build the matrix from an episodes frame and fit it (see :func:`fit_matrix`)."""
    bench = [benchmark] if isinstance(benchmark, str) else benchmark
    matrix = build_matrix(frame, cell=cell, drift=drift, benchmark=bench)
    return fit_built(matrix, model=model, holdout=holdout, seed=seed, drift=drift,
                     propensity=propensity, benchmark=bench, priors=priors)


def fit_built(
    matrix: ResponseMatrix, *, model: str = "2pl", holdout: float = 0.1, seed: int = 0,
    drift: DriftMode = "split", propensity: bool = False,
    benchmark: list[str] | None = None, priors: Priors | None = None,
) -> AtlasFit:
    """Fit a matrix built from episodes (a frame's, or the store's own aggregate);
    none with a known outcome is an :class:`AtlasError`."""
    bench = benchmark
    if matrix.n_agents == 0 or matrix.n_items == 0:
        where = f" for benchmark {', '.join(bench)}" if bench else ""
        raise AtlasError(f"no episodes with a known outcome{where}: nothing to fit")
    return fit_matrix(matrix, model=model, holdout=holdout, seed=seed,
                      propensity=propensity, priors=priors, benchmark=bench, drift=drift)
