"""The atlas's public entry points: fit from a store or a frame, read stored fits,
estimate one agent, pick its next tasks. The glue between the store (frames, stored
fits) and the pure fitting code; the CLI calls only these.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from evalatlas.analysis.failures import FailuresResult, item_verdict_rows
from evalatlas.analysis.run_status import incomplete_note
from evalatlas.atlas.adaptive import (
    ItemBank,
    ability,
    ability_from_description,
    next_tasks,
    predicted_rate,
)
from evalatlas.atlas.errors import AtlasError
from evalatlas.atlas.fitting import Z95, fit_built, fit_episodes, fit_matrix
from evalatlas.atlas.irt import ModelSpec, Priors
from evalatlas.atlas.matrix import (
    CellKind,
    DriftMode,
    ResponseMatrix,
    build_matrix,
    check_kinds,
    matrix_from_store_cells,
)
from evalatlas.atlas.results import (
    AgentEstimate,
    AtlasFit,
    DriftResult,
    ItemsResult,
    NextTasksResult,
)
from evalatlas.errors import ArgumentError
from evalatlas.selectors import Candidate, match, resolve
from evalatlas.store import atlas as atlas_store
from evalatlas.store.catalog import experiment_catalog
from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import select_benchmarks

Source = StoreConnection | str | os.PathLike[str]
"""Where the atlas reads episodes: an open store or a store file's path. There is no
default: the API never opens ``./evalatlas.duckdb`` on its own (``ea.open()`` does, when
asked)."""


def _open(source: Source | None, *, read_only: bool) -> tuple[StoreConnection, bool]:
    if isinstance(source, StoreConnection):
        return source, False
    if source is None:
        raise ArgumentError("source: no store given; pass a Store (ea.open(...)) or a "
                            "store file's path (the API opens no default store)")
    if not isinstance(source, str | os.PathLike) or not str(source).strip():
        raise ArgumentError(f"source must be a Store or a store file's path, got "
                            f"{type(source).__name__} {source!r:.60}")
    return StoreConnection(os.fspath(source), read_only=read_only, create=False), True


def _episodes(source: Source, benchmark: list[str] | str | None) -> Any:
    """The matrix episodes of the named benchmarks (all: None), read-only; a store
    opened from a path here is closed again."""
    store, close = _open(source, read_only=True)
    try:
        return atlas_store.matrix_episodes(store, select_benchmarks(store, _bench(benchmark)))
    finally:
        if close:
            store.close()


def _bench(benchmark: list[str] | str | None) -> list[str] | None:
    if benchmark is None or benchmark == []:
        return None
    return [benchmark] if isinstance(benchmark, str) else list(benchmark)


def fit(
    source: Any,
    *,
    benchmark: list[str] | str | None = None,
    model: str = "2pl",
    cell: CellKind = "success",
    holdout: float = 0.1,
    seed: int = 0,
    drift: DriftMode = "split",
    propensity: bool = False,
    priors: Priors | None = None,
    save: bool = False,
    exclude_tasks: Iterable[tuple[str, str]] | None = None,
) -> AtlasFit:
    """Fit the agent x task matrix.

    ``source``: a :class:`~evalatlas.store.db.StoreConnection`, a store path (no default: the
    API opens no store of its own choosing), an episodes frame (pyarrow Table, pandas
    DataFrame or dict of columns with
    :data:`evalatlas.atlas.matrix.EPISODE_COLUMNS`) or a :class:`ResponseMatrix`.
    ``save=True`` stores the fit (store sources only). ``exclude_tasks``: (benchmark,
    task_id) pairs whose episodes are left out (e.g. the investigator's suspect tasks,
    ``ea.failures(...).suspect``); the fit's ``excluded_tasks`` setting and a note name
    those that were there. See :mod:`evalatlas.atlas`.
    """
    bench = _bench(benchmark)
    excluded = None if exclude_tasks is None else {(str(b), str(t)) for b, t in exclude_tasks}
    kw: dict[str, Any] = dict(model=model, holdout=holdout, seed=seed,
                              propensity=propensity, benchmark=bench, priors=priors)
    if isinstance(source, ResponseMatrix):
        if excluded is not None:
            raise AtlasError("exclude_tasks needs episodes (a store or an episodes frame), "
                             "not a ResponseMatrix")
        return fit_matrix(source, drift=drift, **kw)
    ModelSpec.parse(model)  # a bad model is an ArgumentError before a store is opened
    if source is None or isinstance(source, StoreConnection | str | os.PathLike):
        store, close = _open(source, read_only=not save)
        try:
            bench = select_benchmarks(store, bench)
            if excluded is None:
                # cells aggregated in DuckDB: no Python row per episode (issue 23)
                check_kinds(cell, drift)
                # the benchmarks as named too, as build_matrix filters a frame by them
                named = bench if kw["benchmark"] is None else [
                    b for b in bench or [] if b in set(kw["benchmark"])]
                built = matrix_from_store_cells(
                    atlas_store.matrix_cells(store, named, cell, drift), cell=cell,
                    drift=drift)
                result = fit_built(built, drift=drift, **kw)
            else:
                frame = atlas_store.matrix_episodes(store, bench)
                frame, dropped = _drop_tasks(frame, excluded)
                result = fit_episodes(frame, cell=cell, drift=drift, **kw)
                _note_excluded(result, excluded, dropped)
            # a run that did not finish is in the matrix with the samples it has: say so
            result.notes.extend(incomplete_note(experiment_catalog(store), benchmark=bench))
            if save:
                atlas_store.save_fit(store, result.to_dict())
            return result
        finally:
            if close:
                store.close()
    frame, dropped = _drop_tasks(source, excluded)
    result = fit_episodes(frame, cell=cell, drift=drift, **kw)
    _note_excluded(result, excluded, dropped)
    return result


def _drop_tasks(frame: Any, excluded: set[tuple[str, str]] | None
                ) -> tuple[Any, list[tuple[str, str]]]:
    """``frame`` without the episodes of the ``excluded`` (benchmark, task_id) pairs, and
    the pairs that were in it. Any episodes frame (Arrow, pandas, dict of columns). A
    benchmark's ``n_tasks`` loses the tasks left out, so coverage is over the rest."""
    if not excluded:
        return frame, []
    import pyarrow as pa

    table = frame if isinstance(frame, pa.Table) else (
        pa.Table.from_pandas(frame, preserve_index=False) if hasattr(frame, "iloc")
        else pa.table(frame))
    bench = table.column("benchmark").to_pylist()
    task = table.column("task_id").to_pylist()
    keys = [(str(b), str(t)) for b, t in zip(bench, task, strict=True)]
    mask = pa.array([k not in excluded for k in keys], type=pa.bool_())
    dropped = sorted({k for k in keys if k in excluded})
    table = table.filter(mask)
    if "n_tasks" in table.column_names and dropped:
        # the benchmark's size shrinks by the tasks left out: coverage is over the rest
        per_bench: dict[str, int] = {}
        for b, _ in dropped:
            per_bench[b] = per_bench.get(b, 0) + 1
        sizes = [None if n is None else max(0, n - per_bench.get(str(b), 0))
                 for b, n in zip(table.column("benchmark").to_pylist(),
                                 table.column("n_tasks").to_pylist(), strict=True)]
        i = table.column_names.index("n_tasks")
        table = table.set_column(i, "n_tasks", pa.array(sizes, type=table.schema.field(
            "n_tasks").type))
    return table, dropped


def _note_excluded(result: AtlasFit, excluded: set[tuple[str, str]] | None,
                   dropped: list[tuple[str, str]]) -> None:
    if excluded is None:
        return
    result.settings["excluded_tasks"] = [list(k) for k in dropped]
    if dropped:
        names = ", ".join(f"{t} ({b})" for b, t in dropped[:20])
        more = f" and {len(dropped) - 20} more" if len(dropped) > 20 else ""
        result.notes.append(f"{len(dropped)} task(s) left out of the fit as asked "
                            f"(suspect: judged infeasible by the investigator): {names}{more}.")
    else:
        result.notes.append("No task to leave out: none of the excluded tasks is in the data.")


def _from_dict(d: dict[str, Any]) -> AtlasFit:
    skip = {"agents", "items", "diagnostics", "coverage", "drifted_tasks", "notes", "fit_id",
            "schema", "created_at"}
    return AtlasFit(fit_id=d["fit_id"], settings={k: v for k, v in d.items() if k not in skip},
                    agent_rows=d["agents"], item_rows=d["items"],
                    diagnostics=d["diagnostics"], coverage_rows=d.get("coverage", []),
                    drift_rows=d.get("drifted_tasks", []), notes=d.get("notes", []))


def stored_fit(source: Source, *, benchmark: list[str] | str | None = None,
               fit_id: str | None = None, model: str | None = None,
               cell: str | None = None) -> AtlasFit | None:
    """The latest stored fit for this benchmark filter (or ``fit_id``), None if none.

    A fit read back has rows and diagnostics; its ``irt``/``matrix`` are None.
    """
    store, close = _open(source, read_only=True)
    try:
        fid = fit_id or atlas_store.latest_fit_id(store, benchmark=select_benchmarks(
                                                      store, _bench(benchmark)),
                                                  model=model, cell=cell)
        d = atlas_store.load_fit(store, fid) if fid else None
        return _from_dict(d) if d else None
    finally:
        if close:
            store.close()


def agent_candidates(matrix: ResponseMatrix,
                     descr: Sequence[dict[str, Any]] = ()) -> list[Candidate]:
    """The agents a name can pick: the matrix's (with cells) and the store's others."""
    names: dict[str, str] = dict(zip(matrix.agent_ids, matrix.agent_names, strict=True))
    for row in descr:
        names.setdefault(row["agent_id"], row["agent_name"] or "")
    return [Candidate(key=a, names=(n,), ids=(a,), kind="agent") for a, n in names.items()]


def find_agent(candidates: list[Candidate], agent: str, *, new_agent: bool = False,
               allow_unknown: bool = False) -> Candidate | None:
    """The agent ``agent`` names (:func:`evalatlas.selectors.resolve`), or None for a
    cold start: ``new_agent`` (only an exact or case/separator-insensitive name then
    counts as a stored agent, so a new name is never read as a typo of an old one) or
    ``allow_unknown`` (a description was given). An unknown name otherwise is an
    :class:`~evalatlas.errors.ArgumentError` listing the closest agents."""
    if new_agent:
        tier, hits = match(agent, candidates)
        if tier not in ("exact", "normalised"):
            return None
    else:
        try:
            hits = resolve(agent, candidates, argument="agent", what="agent")
        except ArgumentError as exc:
            if allow_unknown and match(agent, candidates)[0] is None:
                return None
            if match(agent, candidates)[0] is None:
                raise ArgumentError(f"{exc}; for an agent that is not in the store ask "
                                    "for a cold start explicitly (new_agent=True)") from None
            raise
    if len({h.key for h in hits}) > 1:
        raise ArgumentError(f"agent: {agent!r} names {len(hits)} different agents "
                            f"({', '.join(h.key[:12] for h in hits)}); use an id prefix")
    return hits[0]


def agent_cells(bank: ItemBank, matrix: ResponseMatrix, agent_id: str | None
                ) -> tuple[int | None, np.ndarray, np.ndarray, np.ndarray]:
    """(agent index or None, bank item indices, k, n) of the cells of agent ``agent_id``
    (resolved by :func:`find_agent`; None: a new agent) on the bank."""
    i = matrix.agent_ids.index(agent_id) if agent_id in matrix.agent_ids else None
    empty = np.zeros(0, dtype=np.int64)
    if i is None:
        return None, empty, np.zeros(0), np.zeros(0)
    index = bank.index()
    c = matrix.cells
    mine = np.flatnonzero(c.agent == i)
    items, ks, ns = [], [], []
    for m in mine.tolist():
        j = c.item[m]
        key = (matrix.item_benchmark[j], matrix.item_task_id[j], matrix.item_hash[j])
        jj = index.get(key)
        if jj is None:
            jj = index.get((key[0], key[1], None))
        if jj is not None:
            items.append(jj)
            ks.append(c.k[m])
            ns.append(c.n[m])
    return i, np.asarray(items, dtype=np.int64), np.asarray(ks), np.asarray(ns)


def _fit_and_matrix(source: Source, benchmark: list[str] | None, refit: bool, seed: int,
                    model: str, cell: CellKind
                    ) -> tuple[AtlasFit, ResponseMatrix, list[dict], list[str] | None]:
    store, close = _open(source, read_only=not refit)
    try:
        benchmark = select_benchmarks(store, benchmark)
        frame = atlas_store.matrix_episodes(store, benchmark)
        fitted = None
        if not refit:
            fid = atlas_store.latest_fit_id(store, benchmark=benchmark)
            d = atlas_store.load_fit(store, fid) if fid else None
            fitted = _from_dict(d) if d else None
        if fitted is None:
            if not refit and close:  # opened read-only here: reopen to store the fit
                store.close()
                store = store.reopened()
            fitted = fit_episodes(frame, model=model, cell=cell, seed=seed,
                                  benchmark=benchmark)
            atlas_store.save_fit(store, fitted.to_dict())
        cell_kind = fitted.settings.get("cell", "success")
        matrix = build_matrix(frame, cell=cell_kind, drift=fitted.settings.get("drift")
                              or "split", benchmark=benchmark)
        descr = atlas_store.agent_descriptions(store)
        return fitted, matrix, descr, benchmark
    finally:
        if close:
            store.close()


def estimate(
    agent: str,
    source: Source,
    *,
    benchmark: list[str] | str | None = None,
    from_description: bool = False,
    description: str | None = None,
    new_agent: bool = False,
    seed: int = 0,
    model: str = "2pl",
    cell: CellKind = "success",
) -> AgentEstimate:
    """Ability and predicted full-benchmark success rate of ``agent`` (name or id).

    Uses the latest stored fit for ``benchmark`` (fitting and storing one if there is
    none) for the items, and the agent's current cells in the store for its ability.
    With no cells: the population prior, or with ``from_description``/``description``
    the lexical nearest-neighbour estimate (weak: see :mod:`evalatlas.atlas.adaptive`).
    ``agent`` is matched as every selector is (:mod:`evalatlas.selectors`); a name that
    matches no stored agent is an error (a typo must not read as a cold start) unless
    ``new_agent`` asks for a cold start or ``description`` describes the new agent.
    An observed agent gets the ability of the stored fit (fitted on all its cells), so
    ``estimate`` and ``abilities`` agree.
    """
    bench = _bench(benchmark)
    fitted, matrix, descr, bench = _fit_and_matrix(source, bench, False, seed, model, cell)
    found = find_agent(agent_candidates(matrix, descr), agent, new_agent=new_agent,
                       allow_unknown=description is not None)
    bank = ItemBank.from_fit(fitted)
    _, items, k, n = agent_cells(bank, matrix, found.key if found else None)
    notes: list[str] = []
    agent_id = found.key if found else None
    name = (found.names[0] or agent) if found else agent
    stored = {r["agent_id"]: r for r in fitted.agent_rows}.get(agent_id)
    if stored is not None and items.size and stored["tasks_observed"] == items.size:
        # the stored fit saw exactly these cells: its ability is this agent's
        theta = np.asarray(stored.get("ability_dims") or [stored["ability"]], dtype=float)
        cov = np.eye(bank.model.rank) * bank.priors.ability_sd ** 2
        cov[0, 0] = stored["ability_se"] ** 2
        method = "fitted"
    elif items.size:
        theta, cov = ability(bank, items, k, n)
        method = "map-given-fitted-items"
    else:
        text = description
        if from_description and text is None and agent_id is not None:
            text = next((row["description"] for row in descr
                         if row["agent_id"] == agent_id), None)
        if from_description or description is not None:
            if not text:
                raise AtlasError(f"no description for agent {agent!r}; pass --description")
            fitted_rows = {r["agent_id"]: r for r in fitted.agent_rows}
            cand = [row for row in descr if row["agent_id"] in fitted_rows
                    and row["agent_id"] != agent_id and row["description"]]
            mean, sd, nn = ability_from_description(
                text, [c["description"] for c in cand],
                np.array([fitted_rows[c["agent_id"]]["ability"] for c in cand]),
                np.array([fitted_rows[c["agent_id"]]["ability_se"] for c in cand]),
                bank.priors.ability_sd)
            theta = np.full(bank.model.rank, 0.0)
            theta[0] = mean
            cov = np.eye(bank.model.rank) * bank.priors.ability_sd ** 2
            cov[0, 0] = sd ** 2
            method = "description-nearest-neighbour" if nn else "population-prior"
            if nn:
                notes.append("lexical nearest neighbours: " + ", ".join(
                    f"{cand[j]['agent_name']} ({s:.2f})" for j, s in nn)
                    + "; weak evidence: descriptions sharing words need not behave alike")
            else:
                notes.append("no fitted agent's description shares a word with this one: "
                             "population prior")
        else:
            theta = np.zeros(bank.model.rank)
            cov = np.eye(bank.model.rank) * bank.priors.ability_sd ** 2
            method = "population-prior"
            notes.append("no observed tasks: the population prior (run `atlas next-tasks`)"
                         if found is not None else "a new agent (cold start): the "
                         "population prior (run `atlas next-tasks`)")
    population = np.arange(bank.size)
    rate, lo, hi = predicted_rate(bank, items, k, n, theta, cov, population, seed=seed)
    if lo is None:
        notes.append("every task was observed: the success rate is measured, not predicted, "
                     "so it has no prediction interval (use `summary` for its interval)")
    se = float(np.sqrt(cov[0, 0]))
    return AgentEstimate(
        agent=name, agent_id=agent_id, benchmark=bench, ability=float(theta[0]),
        ability_ci_low=float(theta[0] - Z95 * se), ability_ci_high=float(theta[0] + Z95 * se),
        predicted_success_rate=rate, predicted_success_rate_ci_low=lo,
        predicted_success_rate_ci_high=hi, tasks_observed=int(items.size),
        n_tasks=bank.size, method=method, fit_id=fitted.fit_id, notes=notes)


def suggest_tasks(agent: str, source: Source, *, count: int = 10,
                  benchmark: list[str] | str | None = None, seed: int = 0,
                  model: str = "2pl", cell: CellKind = "success",
                  new_agent: bool = False) -> NextTasksResult:
    """``atlas next-tasks``: rows ``benchmark``, ``task_id``, ``task_version_hash``,
    ``information``, ``difficulty``, ``predicted_success`` for tasks ``agent`` has not run,
    most informative first (a :class:`NextTasksResult`: ``.rows``, ``.to_dict()``).
    ``agent`` as in :func:`estimate` (unknown: an error unless ``new_agent``). An agent
    that ran every task gets no rows and a note saying so."""
    bench = _bench(benchmark)
    fitted, matrix, descr, bench = _fit_and_matrix(source, bench, False, seed, model, cell)
    found = find_agent(agent_candidates(matrix, descr), agent, new_agent=new_agent)
    bank = ItemBank.from_fit(fitted)
    _, items, k, n = agent_cells(bank, matrix, found.key if found else None)
    picks = next_tasks(bank, items, k, n, count)
    theta, _cov = ability(bank, items, k, n)
    rows = []
    for j, info in picks:
        rows.append({"benchmark": bank.benchmark[j], "task_id": bank.task_id[j],
                     "task_version_hash": bank.task_version_hash[j], "information": info,
                     "difficulty": float(bank.difficulty[j]),
                     "predicted_success": float(bank.prob(theta, np.array([j]))[0])})
    notes = []
    if not rows and np.unique(items).size >= bank.size:
        notes.append(f"{found.names[0] if found else agent} ran every one of the "
                     f"{bank.size} tasks of this fit: there is no task left to suggest "
                     "(`atlas estimate` gives its measured success rate)")
    return NextTasksResult(rows=rows, meta={"agent": found.names[0] if found else agent},
                           notes=notes)


def drift(source: Source, *, benchmark: list[str] | str | None = None
          ) -> DriftResult:
    """Tasks run under more than one ``task_version_hash``, with the agents on each side
    (a :class:`DriftResult`: ``.rows``, ``.to_dict()``)."""
    frame = _episodes(source, benchmark)
    rows = build_matrix(frame, drift="split", cell="success").drift
    notes = [] if rows else ["no task ran under more than one task_version_hash"]
    return DriftResult(rows=rows, notes=notes)


def matrix(source: Source, *, benchmark: list[str] | str | None = None,
           cell: CellKind = "success", drift_mode: DriftMode = "split") -> ResponseMatrix:
    """The response matrix from the store (long format via ``.long_rows()``)."""
    return build_matrix(_episodes(source, benchmark), cell=cell, drift=drift_mode)


def with_verdicts(items: ItemsResult, findings: FailuresResult) -> ItemsResult:
    """``atlas items`` with the investigator's verdict beside each task's difficulty:
    ``investigated``, ``infeasible``, ``suspect`` and the flags ``suspect`` /
    ``suspect_all_fail`` (:func:`evalatlas.analysis.failures.item_verdict_rows`).
    ``findings``: ``ea.failures(store)`` over the same benchmarks."""
    verdicts = findings.meta.get("task_verdicts", [])
    rows = item_verdict_rows(items.rows, verdicts)
    notes = list(items.notes)
    both = [r["task_id"] for r in rows if "suspect_all_fail" in r["flags"]]
    if both:
        notes.append(f"{len(both)} task(s) every agent fails and the investigator calls "
                     f"infeasible (suspect_all_fail): {', '.join(both[:10])}"
                     f"{' ...' if len(both) > 10 else ''}; `atlas fit --exclude-infeasible` "
                     "leaves suspect tasks out.")
    return ItemsResult(rows=rows, meta=dict(items.meta), notes=notes)
