"""ATLAS: the agent x task matrix, item response theory and cheap evaluation.

Seed 002 (cube-harness EvalLog) says what the records are for: build the matrix
M[agent, task], fit it with item response theory or logistic matrix factorisation, use
``benchmark_subset.n_tasks`` for missing-not-at-random corrections, ``task_version_hash``
to detect silent benchmark drift and ``agent.description`` for cold start.

    import evalatlas.atlas as atlas
    result = atlas.fit("evalatlas.duckdb", model="2pl", holdout=0.1, seed=0)
    result.agents            # DataFrame: agent, ability, ability_se, CI, flags ...
    result.items             # DataFrame: benchmark, task_id, difficulty, ...
    result.to_dict()         # == `evalatlas atlas fit --format json`
    atlas.stored_fit("evalatlas.duckdb")   # the latest stored fit, read back

Modules: :mod:`~evalatlas.atlas.matrix` (sparse cells), :mod:`~evalatlas.atlas.irt`
(1PL/2PL/MF, priors, identification, standard errors), :mod:`~evalatlas.atlas.diagnostics`,
:mod:`~evalatlas.atlas.selection`, :mod:`~evalatlas.atlas.adaptive`,
:mod:`~evalatlas.atlas.simulate`.
"""

from evalatlas.atlas.api import (
    drift,
    estimate,
    fit,
    matrix,
    stored_fit,
    suggest_tasks,
    with_verdicts,
)
from evalatlas.atlas.errors import AtlasError, DriftError
from evalatlas.atlas.fitting import fit_matrix
from evalatlas.atlas.irt import Cells, ModelSpec, Priors, fit_irt
from evalatlas.atlas.matrix import ResponseMatrix, build_matrix, matrix_from_cells
from evalatlas.atlas.results import (
    AbilitiesResult,
    AgentEstimate,
    AtlasFit,
    DriftResult,
    ItemsResult,
    NextTasksResult,
)

__all__ = [
    "AbilitiesResult",
    "AgentEstimate",
    "AtlasError",
    "AtlasFit",
    "Cells",
    "DriftError",
    "DriftResult",
    "ItemsResult",
    "ModelSpec",
    "NextTasksResult",
    "Priors",
    "ResponseMatrix",
    "build_matrix",
    "drift",
    "estimate",
    "fit",
    "fit_irt",
    "fit_matrix",
    "matrix",
    "matrix_from_cells",
    "stored_fit",
    "suggest_tasks",
    "with_verdicts",
]
