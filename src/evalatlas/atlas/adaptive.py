"""Cheap evaluation: which tasks to run next, and what an agent's full score would be.

- :func:`next_tasks`: the items an agent has not run, most informative first. Fisher
  information of item ``j`` at ability ``theta``: ``a_j^2 p (1 - p)`` (1PL: ``a = 1``;
  MF: ``a_j' Sigma a_j p (1-p)`` with the agent's posterior covariance ``Sigma``, the
  expected reduction of its posterior variance along ``a_j``). Computed at the agent's
  current MAP ability given the fitted items (items held fixed).
- :func:`estimate`: MAP ability with a 95% Laplace interval, and the predicted
  full-benchmark success rate = (observed k/n on the tasks run + predicted p on the
  others) / number of items, with a 95% interval: the rate at both ends of the ability's
  95% interval (1PL/2PL: the rate is monotone in ability; MF: 1,000 seeded draws from
  the Laplace posterior), widened in quadrature by the Bernoulli spread of the unrun
  tasks' outcomes.
  Item parameters are taken as known (their uncertainty is not propagated).
- Cold start: an agent with no cells gets the population prior (ability 0, sd as
  fitted: the widest interval). With ``description``, a lexical nearest-neighbour
  estimate: TF-IDF cosine similarity between its description and the fitted agents'
  descriptions, the ability a similarity-weighted mean of the 3 nearest, its variance
  their spread plus their own variances plus ``(1 - best similarity)`` x the prior
  variance. **This is weak**: shared words ("gpt-4o", "react") say the descriptions are
  alike, not that the agents behave alike; expect errors close to the population spread
  unless descriptions name the same model and scaffold. Run a few adaptive tasks.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from evalatlas.atlas.errors import AtlasError
from evalatlas.atlas.irt import ModelSpec, Priors, ability_given_items, logit_for

Z95 = 1.959963984540054
_TOKEN = re.compile(r"[a-z0-9][a-z0-9.\-_]*")


@dataclass
class ItemBank:
    """Fitted item parameters on the fit's reported scale (what adaptive testing needs)."""

    model: ModelSpec
    priors: Priors
    difficulty: np.ndarray
    loadings: np.ndarray
    benchmark: list[str]
    task_id: list[str]
    task_version_hash: list[str | None]

    @property
    def size(self) -> int:
        return int(self.difficulty.shape[0])

    @classmethod
    def from_fit(cls, fit: Any) -> ItemBank:
        """From an :class:`AtlasFit` or its ``to_dict()`` (e.g. a stored fit)."""
        d = fit.to_dict() if hasattr(fit, "to_dict") else fit
        spec = ModelSpec.parse(d["model"])
        items = d["items"]
        diag = d.get("diagnostics", {})
        if spec.kind == "2pl":
            load = np.array([[r["discrimination"]] for r in items], dtype=np.float64)
            sd = 1.0
        elif spec.kind == "1pl":
            load = np.ones((len(items), 1))
            sd = float(diag.get("ability_sd_estimate") or 1.0)
        else:
            load = np.array([r["loadings"] for r in items], dtype=np.float64).reshape(
                len(items), spec.rank)
            sd = 1.0
        return cls(spec, Priors(ability_sd=sd),
                   np.array([r["difficulty"] for r in items], dtype=np.float64), load,
                   [r["benchmark"] for r in items], [r["task_id"] for r in items],
                   [r["task_version_hash"] for r in items])

    def index(self) -> dict[tuple[str, str, str | None], int]:
        return {(b, t, h): j for j, (b, t, h) in enumerate(
            zip(self.benchmark, self.task_id, self.task_version_hash, strict=True))}

    def prob(self, theta: np.ndarray, items: np.ndarray) -> np.ndarray:
        th = np.broadcast_to(theta, (items.size, self.model.rank))
        return special.expit(logit_for(self.model, th, self.loadings[items],
                                       self.difficulty[items]))


def ability(bank: ItemBank, items: np.ndarray, k: np.ndarray, n: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """MAP ability vector and covariance of one agent from its cells (items fixed)."""
    return ability_given_items(bank, np.asarray(items, dtype=np.int64),
                               np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))


def information(bank: ItemBank, theta: np.ndarray, cov: np.ndarray,
                items: np.ndarray) -> np.ndarray:
    """Fisher information of ``items`` at ``theta`` (see the module docstring)."""
    p = bank.prob(theta, items)
    pq = p * (1 - p)
    A = bank.loadings[items]
    if bank.model.kind == "mf":
        return np.einsum("mr,rs,ms->m", A, cov, A) * pq
    return A[:, 0] ** 2 * pq


def next_tasks(bank: ItemBank, items: np.ndarray, k: np.ndarray, n: np.ndarray,
               count: int, candidates: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The ``count`` most informative items not yet run: ``[(item index, information)]``.

    Ties are broken by item index, so the order is deterministic.
    """
    theta, cov = ability(bank, items, k, n)
    pool = np.arange(bank.size) if candidates is None else np.asarray(candidates)
    pool = pool[~np.isin(pool, items)]
    if pool.size == 0 or count <= 0:
        return []
    info = information(bank, theta, cov, pool)
    order = np.lexsort((pool, -info))[:count]
    return [(int(pool[o]), float(info[o])) for o in order]


def predicted_rate(bank: ItemBank, items: np.ndarray, k: np.ndarray, n: np.ndarray,
                   theta: np.ndarray, cov: np.ndarray, population: np.ndarray,
                   *, draws: int = 1000, seed: int = 0
                   ) -> tuple[float, float | None, float | None]:
    """Predicted success rate over ``population`` items, with a 95% interval.

    When every population item was observed the rate is measured, not predicted: the
    interval is ``(None, None)`` (issue #10: never a zero-width interval) and the caller
    says why."""
    population = np.asarray(population, dtype=np.int64)
    if population.size == 0:
        raise AtlasError("no items to predict a success rate over")
    items = np.asarray(items, dtype=np.int64)
    seen = np.isin(population, items)
    in_pop = np.isin(items, population)
    # observed share: mean outcome per observed item in the population
    observed = float(np.sum((np.asarray(k) / np.asarray(n))[in_pop]))
    rest = population[~seen]
    total = population.size
    if rest.size == 0:
        return observed / total, None, None
    p_hat = bank.prob(theta, rest)
    point = (observed + float(p_hat.sum())) / total
    bern_sd = math.sqrt(float(np.sum(p_hat * (1 - p_hat)))) / total
    r = bank.model.rank
    if r == 1:
        # the rate is monotone in theta (a > 0): map the ability interval's ends, then
        # add the unrun tasks' Bernoulli spread in quadrature on each side
        se = math.sqrt(float(cov[0, 0]))
        ends = [(observed + float(bank.prob(theta + s * Z95 * se, rest).sum())) / total
                for s in (-1.0, 1.0)]
        lo = point - math.hypot(point - ends[0], Z95 * bern_sd)
        hi = point + math.hypot(ends[1] - point, Z95 * bern_sd)
        return point, float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))
    rng = np.random.default_rng(seed)
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(r))
    thetas = theta + rng.standard_normal((draws, r)) @ L.T
    sums = np.empty(draws)
    step = max(1, 2_000_000 // max(rest.size, 1))
    for s in range(0, draws, step):
        eta = thetas[s:s + step] @ bank.loadings[rest].T - bank.difficulty[rest]
        sums[s:s + step] = special.expit(eta).sum(axis=1)
    sims = (observed + sums) / total
    lo, hi = np.quantile(sims, [0.025, 0.975])
    lo = point - math.hypot(point - lo, Z95 * bern_sd)
    hi = point + math.hypot(hi - point, Z95 * bern_sd)
    return point, float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))


def adaptive_run(bank: ItemBank, respond: Callable[[int], float], budget: int,
                 *, batch: int = 1, candidates: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Run ``budget`` items chosen adaptively; ``respond(j)`` returns the outcome in [0,1].

    Returns the chosen items and their outcomes (for :func:`predicted_rate`).
    """
    items: list[int] = []
    ys: list[float] = []
    while len(items) < budget:
        arr = np.asarray(items, dtype=np.int64)
        y = np.asarray(ys, dtype=np.float64)
        picks = next_tasks(bank, arr, y, np.ones_like(y), min(batch, budget - len(items)),
                           candidates)
        if not picks:
            break
        for j, _ in picks:
            items.append(j)
            ys.append(float(respond(j)))
    return np.asarray(items, dtype=np.int64), np.asarray(ys, dtype=np.float64)


# -- cold start by description --------------------------------------------------------


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def description_neighbours(description: str, others: Sequence[str | None], top: int = 3
                           ) -> list[tuple[int, float]]:
    """TF-IDF cosine similarity of ``description`` to each of ``others``: top matches."""
    docs = [Counter(_tokens(d or "")) for d in others]
    query = Counter(_tokens(description))
    n_docs = len(docs) + 1
    df: Counter[str] = Counter()
    for d in [*docs, query]:
        df.update(d.keys())
    idf = {t: math.log((1 + n_docs) / (1 + c)) + 1 for t, c in df.items()}

    def vec(c: Counter[str]) -> dict[str, float]:
        v = {t: f * idf[t] for t, f in c.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items()}

    q = vec(query)
    sims = []
    for i, d in enumerate(docs):
        if not d:
            continue
        v = vec(d)
        s = sum(q.get(t, 0.0) * x for t, x in v.items())
        if s > 0:
            sims.append((i, s))
    sims.sort(key=lambda t: (-t[1], t[0]))
    return sims[:top]


def ability_from_description(
    description: str, descriptions: Sequence[str | None], abilities: np.ndarray,
    ability_se: np.ndarray, prior_sd: float,
) -> tuple[float, float, list[tuple[int, float]]]:
    """(ability, sd, neighbours) from the nearest descriptions; the prior if none match."""
    nn = description_neighbours(description, descriptions)
    if not nn:
        return 0.0, prior_sd, []
    idx = np.array([i for i, _ in nn])
    w = np.array([s for _, s in nn])
    w = w / w.sum()
    mean = float(w @ abilities[idx])
    spread = float(w @ (abilities[idx] - mean) ** 2 + w @ ability_se[idx] ** 2)
    best = max(s for _, s in nn)
    var = spread + (1 - best) * prior_sd ** 2
    return mean, math.sqrt(var), nn
