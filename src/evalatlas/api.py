"""The public API: a store you can open, and one call per analysis.

Everything here glues :mod:`evalatlas.store` (rows out of DuckDB) to
:mod:`evalatlas.analysis` (numbers out of rows); the CLI commands are a few lines over
these functions, and their ``--format json`` output is the result's ``to_dict()``.

Each analysis takes ``data``: an open :class:`Store`, a path to a store file, or a pandas
DataFrame of episodes (``store.episodes()``, or your own frame with at least
``experiment_id``, ``trajectory_id``, ``task_id`` and the columns the analysis reads). A
frame is loaded into an in-memory store and goes through the very same queries, so a
frame and a store give the same numbers.

Import cost: ``import evalatlas`` does not import this module; ``evalatlas.summary`` and
the others load it (and duckdb, numpy) on first use.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalatlas.analysis.compare import CompareResult, compare_sides
from evalatlas.analysis.frameworks import FrameworkData, group_records
from evalatlas.analysis.published import disagreement_note, published_rows
from evalatlas.analysis.speedups import SpeedupDetail, SpeedupResult, speedup_result, task_payloads
from evalatlas.analysis.summary import (
    SummaryResult,
    coverage_notes,
    group_rows,
    merge_outcomes,
    outcome_rows,
    summary_result,
)
from evalatlas.analysis.tiers import TierReport, tier_table
from evalatlas.pricing import unknown_price_models
from evalatlas.store import db as _db
from evalatlas.store.frames import episodes_frame, store_from_frame
from evalatlas.store.ingest import DEFAULT_BATCH_SIZE, IngestReport, ingest_paths
from evalatlas.store.outcomes import task_outcome_counts
from evalatlas.store.published import published_metrics, score_values, source_notes
from evalatlas.store.queries import (
    OUTCOMES,
    error_counts,
    rewards_by_group,
    summary_totals,
    unmatched_experiments,
)
from evalatlas.store.sides import load_side, pick_score, resolve
from evalatlas.store.speedups import benchmark_detail, load_speedup_rows
from evalatlas.store.tiers import load_tier_runs

if TYPE_CHECKING:
    import pandas as pd

    from evalatlas.metrics.outcomes import GradeScale

__all__ = [
    "CompareResult",
    "IngestReport",
    "SpeedupResult",
    "Store",
    "SummaryResult",
    "TierReport",
    "compare",
    "compare_frameworks",
    "framework_data",
    "judge_episodes",
    "open",
    "speedup_detail",
    "speedups",
    "summary",
    "tiers",
]


class Store(_db.Store):
    """An evalatlas store (one DuckDB file, or ``":memory:"``). Use as a context manager.

    ``Store(None)`` opens ``$EVALATLAS_DB``, else ``./evalatlas.duckdb``.
    """

    def ingest(
        self, *paths: str | Path, fmt: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE, unknown_model_cost: str = "none",
    ) -> IngestReport:
        """Ingest files or folders (any supported format); returns counts and the first
        quarantined problems (``report.rejected``, ``report.problems``)."""
        return ingest_paths(self, paths, fmt=fmt, batch_size=batch_size,
                            unknown_model_cost=unknown_model_cost)

    def episodes(
        self, *, benchmark: str | list[str] | None = None,
        agent: str | list[str] | None = None, experiment: str | list[str] | None = None,
    ) -> pd.DataFrame:
        """Episodes as a DataFrame (every stored episode column plus experiment name,
        agent id/name, benchmark and labels), filtered by benchmark name, agent (name or
        id) and experiment (name or id)."""
        return episodes_frame(self, benchmark=benchmark, agent=agent, experiment=experiment)

    def experiments(self) -> pd.DataFrame:
        """One row per experiment (the ``experiments`` table)."""
        return self.con.execute(
            "SELECT * FROM experiments ORDER BY experiment_name, experiment_id").df()

    def quarantine(self) -> pd.DataFrame:
        """Rejected input: file, line, record, field, reason (the ``quarantine`` table)."""
        return self.con.execute(
            "SELECT source_file, line, record, field, reason, ingest_batch, rejected_at "
            "FROM quarantine "
            "ORDER BY source_file, line").df()


def open(path: str | Path | None = None, *, read_only: bool = False) -> Store:
    """Open (or create) a store: ``path``, else ``$EVALATLAS_DB``, else
    ``./evalatlas.duckdb``; ``":memory:"`` for one that lives as long as the object."""
    return Store(path, read_only=read_only)


Data = Any
"""A :class:`Store` (or :class:`evalatlas.store.db.Store`), a path to a store file, or a
pandas DataFrame of episodes."""


@contextmanager
def _store_of(data: Data) -> Iterator[_db.Store]:
    if isinstance(data, _db.Store):
        yield data
        return
    if isinstance(data, str | Path):
        with _db.Store(data, read_only=True) as store:
            yield store
        return
    if hasattr(data, "columns") and hasattr(data, "iloc"):
        with store_from_frame(data) as store:
            yield store
        return
    raise TypeError(f"expected a Store, a store path or a pandas DataFrame of episodes, "
                    f"got {type(data).__name__}")


def check_experiments(store: _db.Store, experiment: list[str] | None) -> None:
    """ValueError naming the ``experiment`` selectors that match nothing, with close
    names, instead of an empty table that reads as "no results"."""
    if not experiment:
        return
    missing = unmatched_experiments(store, experiment)
    if not missing:
        return
    parts = []
    for sel, close in missing.items():
        hint = f" (did you mean: {', '.join(close)}?)" if close else ""
        parts.append(f"{sel!r}{hint}")
    raise ValueError("no experiment matches " + "; ".join(parts) +
                     " - `evalatlas summary --by experiment` lists them")


def summary(
    data: Data, by: str | Sequence[str] = "agent", *,
    experiment: list[str] | None = None, confidence: float = 0.95,
    ks: Sequence[int] | None = None, outcome: str = "any", missing: str = "ignore",
) -> SummaryResult:
    """One row per group (agent by default; experiment, benchmark, model, task, status,
    ``label:<name>``, or several): success rate with Wilson and task-clustered
    intervals, pass@k (one grouping key), mean reward, errors, tokens, cost, time.
    ``outcome``: ``any`` (harness where present, else judge), ``harness`` or ``judge``.
    ``missing``: ``ignore`` (rate over the reported tasks; a group reporting fewer tasks
    than its benchmark has is flagged) or ``fail`` (missing tasks count as failures).
    ``meta["published"]``: numbers the sources published, recomputed and checked.
    See :class:`evalatlas.analysis.summary.SummaryResult` for every field."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; use one of {', '.join(OUTCOMES)}")
    if missing not in ("ignore", "fail"):
        raise ValueError(f"unknown missing policy {missing!r}; use ignore or fail")
    groups = [by] if isinstance(by, str) else list(by)
    groups = [g.strip() for g in groups if g.strip()] or ["agent"]
    with _store_of(data) as store:
        check_experiments(store, experiment)
        rows = group_rows(summary_totals(store, groups, experiment=experiment, outcome=outcome),
                          error_counts(store, groups, experiment=experiment),
                          rewards_by_group(store, groups, experiment=experiment,
                                           outcome=outcome),
                          groups, confidence=confidence, missing=missing)
        if len(groups) == 1:
            counts, labels = task_outcome_counts(store, groups[0], experiment=experiment,
                                                 outcome=outcome)
            merge_outcomes(rows, outcome_rows(counts, labels, groups[0], ks=ks,
                                              confidence=confidence), groups[0])
        unpriced = unknown_price_models(store)
        published = published_rows(published_metrics(store, experiment),
                                   lambda exp_id, score: score_values(store, exp_id, score))
        disagreements = source_notes(store, experiment)
    result = summary_result(rows, groups, confidence=confidence,
                            unknown_price_models=unpriced)
    result.meta.update(outcome=outcome, missing=missing)
    result.notes.extend(coverage_notes(rows))
    # the source's own numbers (SWE-bench boards, Terminal-Bench headers, Inspect results,
    # EEE aggregates) beside evalatlas's
    result.meta["published"] = published
    note = disagreement_note(published)
    if note:
        result.notes.append(note)
    # what the sources themselves disagree on (labels of one run), as the adapters found it
    result.notes.extend(disagreements)
    return result


def compare(
    data: Data, *selectors: str, pair_by: Literal["task", "attempt"] = "task",
    score: str | None = None, confidence: float = 0.95, detect: float = 0.05,
    alpha: float = 0.05,
) -> CompareResult:
    """Paired comparison of two or more agents / experiments / ``label:<name>=<value>``
    on the tasks they share: difference with interval, McNemar or Wilcoxon (Holm with
    more than two), cost, and a sentence per pair."""
    if len(selectors) == 1 and not isinstance(selectors[0], str):
        selectors = tuple(selectors[0])
    if len(selectors) < 2:
        raise ValueError("compare needs at least two agents, experiments or label values")
    with _store_of(data) as store:
        sides = [resolve(store, s) for s in selectors]
        used = score if score is not None else pick_score(store, sides)
        arrays = [load_side(store, s, used) for s in sides]
    names = [s.name for s in sides]
    if len(set(names)) < len(names):
        names = [f"{s.name} [{s.selector}]" for s in sides]
    rows = compare_sides(names, arrays, pair_by=pair_by, confidence=confidence,
                         detect=detect, alpha=alpha)
    return CompareResult(rows=rows, meta={
        "selectors": list(selectors), "pair_by": pair_by, "score": used or "reward",
        "confidence": confidence, "alpha": alpha, "detect": detect})


def tiers(
    data: Data, *, baseline: str | None = "T0", label: str = "tier",
    experiment: list[str] | None = None, confidence: float = 0.95,
    weights: tuple[float, float] = (0.5, 0.5), scale: GradeScale = "seed", ddof: int = 0,
    n_resamples: int = 2_000, seed: int = 0,
) -> TierReport:
    """ProjectScylla's per-tier table (tier = an experiment label): pass rate [CI], impl
    rate, median composite [CI], grade, cost, cost of pass, uplift [CI] vs ``baseline``."""
    with _store_of(data) as store:
        check_experiments(store, experiment)
        runs = load_tier_runs(store, label, experiment)
    return tier_table(runs, baseline=baseline, label=label, confidence=confidence,
                      weights=weights, scale=scale, ddof=ddof, n_resamples=n_resamples,
                      seed=seed)


def speedups(
    data: Data, *, by: str = "agent", level: int = 4, experiment: list[str] | None = None,
    agent: list[str] | None = None, task: list[str] | None = None,
    confidence: float = 0.95, resamples: int = 2000,
) -> SpeedupResult:
    """FC-Eval speedups per agent:model (or per task): mean speedup, advantage at
    ``level`` with a bootstrap interval over tasks, beat-oracle share, success rate,
    pass@k, cost and trajectory length. Needs a store (measurements are not in an
    episodes frame)."""
    if by not in ("agent", "task"):
        raise ValueError(f"--by must be agent or task, got {by!r}")
    with _store_of(data) as store:
        rows = load_speedup_rows(store, experiment=experiment, agent=agent, task=task)
    payloads = task_payloads(rows.episodes, rows.measurements, rows.bounds)
    return speedup_result(payloads, by, level=level, confidence=confidence,
                          resamples=resamples)


def speedup_detail(
    data: Data, *, experiment: list[str] | None = None, agent: list[str] | None = None,
    task: list[str] | None = None, limit: int | None = None,
) -> SpeedupDetail:
    """Per-benchmark FC-Eval rows (speedups, advantage, validity, fallback) as stored."""
    with _store_of(data) as store:
        rows = benchmark_detail(store, experiment=experiment, agent=agent, task=task,
                                limit=limit)
    notes = [] if rows else ["no measurements; run `evalatlas ingest PATH` first"]
    return SpeedupDetail(rows=rows, notes=notes)


async def judge_episodes(
    store: _db.Store, judge: Any, *, experiment: list[str] | None = None,
    rejudge: bool = False, limit: int | None = None, docs: dict[str, str] | None = None,
) -> dict[str, int]:
    """LLM-judge the store's completed episodes this judge has not scored (all with
    ``rejudge``) with ``judge`` (a :class:`evalatlas.JudgeClient`); scores are added under
    ``judge.<model>.<criterion>`` and a harness outcome is never changed. ``docs`` (source
    name -> text) lets the judge see sources. Returns counts (judged, failed, ...).
    Awaitable: ``asyncio.run(ea.judge_episodes(store, client))``."""
    from evalatlas.judge.episodes import judge_rows, select_unjudged

    rows = select_unjudged(store, experiment, rejudge, limit, judge.config.model)
    return await judge_rows(store, rows, judge, docs or {})


def framework_data(
    data: Data, *, scenario: str | None = None, mode: str | None = None,
    frameworks: Sequence[str] | None = None, scenario_def: Any = None,
) -> list[FrameworkData]:
    """Framework-comparison runs grouped per framework x scenario x mode."""
    from evalatlas.store.frameworks import load_framework_records

    with _store_of(data) as store:
        experiments, episodes = load_framework_records(store, scenario=scenario, mode=mode,
                                                       frameworks=frameworks)
    return group_records(experiments, episodes, scenario=scenario, mode=mode,
                         scenario_def=scenario_def)


def compare_frameworks(
    data: Data | list[FrameworkData], *, scenario: str | None = None,
    mode: str | None = None, frameworks: Sequence[str] | None = None,
    scenario_def: Any = None, scorecard_mode: str = "relative", confidence: float = 0.95,
) -> dict[str, Any]:
    """The agent-framework comparison report (summary, scorecard, latency, profile
    metrics, code quality, correctness intervals, paired differences) as a JSON-ready
    dict; :func:`evalatlas.report.frameworks.render_markdown` renders it."""
    from evalatlas.analysis.framework_report import build_report

    fds = data if isinstance(data, list) else framework_data(
        data, scenario=scenario, mode=mode, frameworks=frameworks, scenario_def=scenario_def)
    order = [q.id for q in scenario_def.questions] if scenario_def is not None else None
    return build_report(fds, scorecard_mode=scorecard_mode, confidence=confidence,
                        question_order=order)
