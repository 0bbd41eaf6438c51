"""What selectors can name, read from the store, and selectors resolved to keys (SQL only).

The matching itself is :func:`evalatlas.selectors.resolve` (one implementation); this
module loads its candidates (experiments, agents, benchmarks) and turns the names people
type into the keys the queries filter on: experiment ids, agent ids, benchmark names.
Every command that takes ``experiment``/``agent``/``benchmark`` resolves through here
first, so an unknown or ambiguous name is an error listing the closest candidates
instead of an empty table.
"""

from __future__ import annotations

from typing import Any

from evalatlas.selectors import Candidate, as_selectors, resolve
from evalatlas.store.db import StoreConnection

UNKNOWN_BENCHMARK = "(unknown)"
"""The benchmark of an experiment that names none (as ``summary --by benchmark``)."""


def _experiment_rows(store: StoreConnection) -> list[dict[str, Any]]:
    """Every experiment, including those only episodes name (no experiment record)."""
    return store.query("""
        SELECT experiment_id, experiment_name, agent_id, agent_name,
               coalesce(benchmark_name, '(unknown)') AS benchmark FROM experiments
        UNION ALL
        SELECT DISTINCT experiment_id, NULL, NULL, NULL, '(unknown)' FROM episodes
        WHERE experiment_id NOT IN (SELECT experiment_id FROM experiments)
        ORDER BY experiment_id""")


def experiment_candidates(store: StoreConnection) -> list[Candidate]:
    """One candidate per experiment: its name, and its id (exact or prefix)."""
    return [Candidate(key=r["experiment_id"], names=(r["experiment_name"] or "",),
                      ids=(r["experiment_id"],), kind="experiment")
            for r in _experiment_rows(store)]


def agent_candidates(store: StoreConnection) -> list[Candidate]:
    """One candidate per agent id: its names, its id, covering its experiments."""
    agents: dict[str, tuple[set[str], set[str]]] = {}
    for r in _experiment_rows(store):
        if r["agent_id"] is None:
            continue
        names, exps = agents.setdefault(r["agent_id"], (set(), set()))
        if r["agent_name"]:
            names.add(r["agent_name"])
        exps.add(r["experiment_id"])
    return [Candidate(key=a, names=tuple(sorted(n)), ids=(a,), kind="agent",
                      covers=frozenset(e)) for a, (n, e) in sorted(agents.items())]


def benchmark_candidates(store: StoreConnection) -> list[Candidate]:
    """One candidate per benchmark name (``(unknown)`` for none), covering its
    experiments."""
    benches: dict[str, set[str]] = {}
    for r in _experiment_rows(store):
        benches.setdefault(r["benchmark"], set()).add(r["experiment_id"])
    return [Candidate(key=b, names=(b,), kind="benchmark", covers=frozenset(e))
            for b, e in sorted(benches.items())]


def _select(selectors: object, candidates: list[Candidate], argument: str, what: str,
            keys: bool) -> list[str] | None:
    values = as_selectors(selectors, argument)
    if values is None:
        return None
    out: set[str] = set()
    for sel in values:
        for cand in resolve(sel, candidates, argument=argument, what=what):
            out |= {cand.key} if keys else cand.members()
    return sorted(out)


def select_experiments(store: StoreConnection, experiment: object,
                       argument: str = "experiment") -> list[str] | None:
    """Experiment ids named by ``experiment`` (a name, an id or a list of them; None: no
    filter). :class:`~evalatlas.errors.ArgumentError` on an unknown or ambiguous name."""
    return _select(experiment, experiment_candidates(store), argument, "experiment",
                   keys=True)


def select_agents(store: StoreConnection, agent: object, argument: str = "agent"
                  ) -> list[str] | None:
    """Agent ids named by ``agent`` (names or ids; None: no filter)."""
    return _select(agent, agent_candidates(store), argument, "agent", keys=True)


def select_benchmarks(store: StoreConnection, benchmark: object,
                      argument: str = "benchmark") -> list[str] | None:
    """Benchmark names (as stored; ``(unknown)`` for none) named by ``benchmark``."""
    return _select(benchmark, benchmark_candidates(store), argument, "benchmark",
                   keys=True)


def experiments_of(store: StoreConnection, *, experiment: object = None, agent: object = None,
                   benchmark: object = None) -> list[str] | None:
    """Experiment ids that every given selector keeps (None: no selector given). A
    selector's candidates are read only when it is given (each read lists every
    experiment: 15 s of a 100M-episode summary when all three were read for nothing)."""
    chosen: set[str] | None = None
    for sel, cands, arg in ((experiment, experiment_candidates, "experiment"),
                            (agent, agent_candidates, "agent"),
                            (benchmark, benchmark_candidates, "benchmark")):
        if sel is None:
            continue
        ids = _select(sel, cands(store), arg, arg, keys=False)
        if ids is not None:
            chosen = set(ids) if chosen is None else chosen & set(ids)
    return None if chosen is None else sorted(chosen)


def id_filter(ids: list[str] | None, column: str = "e.experiment_id",
              joiner: str = "WHERE") -> tuple[str, list[Any]]:
    """``joiner column IN (?, ...)`` and its parameters for resolved ids (None: no
    filter, ``""``; an empty list keeps nothing)."""
    if ids is None:
        return "", []
    if not ids:
        return f"{joiner} false", []
    return f"{joiner} {column} IN ({', '.join('?' for _ in ids)})", list(ids)
