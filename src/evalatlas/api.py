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

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, cast

from evalatlas.arguments import check_choice, check_fraction
from evalatlas.errors import ArgumentError
from evalatlas.exports.eee_terms import RELATIONSHIPS
from evalatlas.lazy_names import lazy_attributes
from evalatlas.pricing import PriceBook, Pricing, UnknownModelCost, default_book
from evalatlas.records.limits import ReadLimits
from evalatlas.selectors import as_selectors
from evalatlas.store import db as _db
from evalatlas.store.frames import episodes_frame, experiments_frame, store_from_frame
from evalatlas.store.ingest import DEFAULT_BATCH_SIZE, IngestReport, ingest_paths
from evalatlas.store.inventory import LISTS
from evalatlas.store.queries import (
    OUTCOMES,
    check_grouping,
    clear_quarantine_rows,
    quarantine_rows,
)
from evalatlas.store.selection import (
    select_agents,
    select_benchmarks,
    select_experiments,
)

if TYPE_CHECKING:
    import pandas as pd

    from evalatlas.adapters.frameworks import Scenario
    from evalatlas.analysis.compare import CompareResult
    from evalatlas.analysis.failures import FailuresResult
    from evalatlas.analysis.frameworks import FrameworkData
    from evalatlas.analysis.gate import GatePlanResult, GateResult
    from evalatlas.analysis.inventory import InventoryResult
    from evalatlas.analysis.lake_results import LakeCompactResult, LakeInfoResult
    from evalatlas.analysis.results import QuarantineResult
    from evalatlas.analysis.speedups import SpeedupDetail, SpeedupResult
    from evalatlas.analysis.summary import SummaryResult
    from evalatlas.analysis.tiers import TierReport
    from evalatlas.errors import Problem, StoreError
    from evalatlas.exports.eee import EeeExport
    from evalatlas.judge.client import JudgeClient
    from evalatlas.judge.investigator import InvestigateResult
    from evalatlas.metrics.outcomes import GradeScale
    from evalatlas.records.models import EpisodeRecord
    from evalatlas.report.document import Report
    from evalatlas.report.frameworks import FrameworkComparison
    from evalatlas.runner.engine import RunSummary
    from evalatlas.runner.loading import FrameworkHandle

__all__ = [
    "CompareResult",
    "GatePlanResult",
    "GateResult",
    "IngestReport",
    "InventoryResult",
    "QuarantineResult",
    "ReadLimits",
    "SpeedupResult",
    "Store",
    "SummaryResult",
    "TierReport",
    "agents",
    "build_report",
    "compare",
    "compare_frameworks",
    "failures",
    "framework_data",
    "gate",
    "gate_plan",
    "investigate",
    "judge_episodes",
    "load_framework",
    "load_scenario",
    "open",
    "read_framework_results",
    "run",
    "speedup_detail",
    "speedups",
    "summary",
    "tiers",
    "validate_eee",
]

_RESULTS = {
    "CompareResult": "evalatlas.analysis.compare",
    "GatePlanResult": "evalatlas.analysis.gate",
    "GateResult": "evalatlas.analysis.gate",
    "InventoryResult": "evalatlas.analysis.inventory",
    "QuarantineResult": "evalatlas.analysis.results",
    "SpeedupResult": "evalatlas.analysis.speedups",
    "SummaryResult": "evalatlas.analysis.summary",
    "TierReport": "evalatlas.analysis.tiers",
}
"""The result classes this module names in ``__all__``, imported on first use as are the
analyses and their composition in the functions below: an ``evalatlas ingest`` needs
none of them (their imports cost it 0.075 s wall, 0.12 CPU s with every module compiled
from source, 0.035 s with bytecode cached; session 21). (Not read from
:mod:`evalatlas`'s table: that package imports this module.)"""

__getattr__, __dir__ = lazy_attributes(globals(), _RESULTS)


BUNDLED_SCENARIOS = Path(__file__).resolve().parent / "data" / "scenarios"
"""Scenarios shipped with evalatlas (``offline_qa`` ...), found by name."""


class Store(_db.StoreConnection):
    """An evalatlas store (one DuckDB file, or ``":memory:"``). Use as a context manager.

    ``Store(None)`` opens ``$EVALATLAS_DB``, else ``./evalatlas.duckdb``.
    """

    DEFAULT_BATCH_SIZE: ClassVar[int] = DEFAULT_BATCH_SIZE
    """Records per ingest transaction unless ``batch_size`` says otherwise."""
    EEE_RELATIONSHIPS: ClassVar[tuple[str, ...]] = RELATIONSHIPS
    """The values of :meth:`export_eee`'s ``relationship`` (EEE's evaluator_relationship)."""

    def ingest(
        self, *paths: str | Path | Sequence[str | Path], fmt: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE, unknown_model_cost: str = "none",
        force: bool = False, limits: ReadLimits | None = None, benchmark: str | None = None,
        on_progress: Callable[[str, int], None] | None = None, model: str | None = None,
        agent_name: str | None = None, labels: dict[str, str] | None = None,
        prices: str | Path | None = None, presets: Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingest files or folders (any supported format; ``-`` is JSONL on stdin; several
        as arguments or as one list; an empty path is refused, not read as ``.``); returns
        counts and the first quarantined problems (``report.rejected``,
        ``report.problems``).

        Idempotent and transactional: files unchanged since their last ingest are skipped
        (``report.unchanged``) unless ``force``. ``fmt`` forces one adapter;
        ``unknown_model_cost="zero"`` prices tokens of an unpriced model at $0 (as the
        seeds do) instead of leaving the cost unknown; ``prices``: a price file (TOML or
        YAML; see ``evalatlas price --help``) used first when costs are computed from
        tokens, and ``presets`` the bundled price tables after it (default:
        :func:`price_presets`), for this ingest only; ``limits`` bounds what one line,
        file, record or nesting may hold (:class:`ReadLimits`); ``benchmark`` names the
        benchmark of every ingested experiment; ``on_progress(source, n_records)`` is
        called as sources start and every few thousand records (progress bars).
        ``model``, ``agent_name``, ``labels``: set on every experiment this ingest stores,
        for sources that lack them, and recorded in its ``extra["overrides"]``
        (:mod:`evalatlas.records.overrides`)."""
        if unknown_model_cost not in ("none", "zero"):
            raise ArgumentError("unknown_model_cost must be 'none' or 'zero'")
        check_format(fmt)
        from evalatlas.records.overrides import Overrides

        overrides = Overrides(model=model, agent_name=agent_name, labels=dict(labels or {}))
        pricing = Pricing(_price_book(prices, presets),
                          cast("UnknownModelCost", unknown_model_cost))
        return ingest_paths(self, check_paths(paths), fmt=fmt, batch_size=batch_size,
                            on_progress=on_progress, pricing=pricing, force=force,
                            limits=limits, benchmark=benchmark, overrides=overrides)

    @staticmethod
    def check_ingest(*paths: str | Path | Sequence[str | Path], model: str | None = None,
                     agent_name: str | None = None,
                     labels: dict[str, str] | None = None,
                     prices: str | Path | None = None,
                     presets: Sequence[str] | None = None) -> None:
        """Check :meth:`ingest`'s paths, overrides and price file without opening a
        store: the :class:`ArgumentError` (or :class:`InputError`, for a bad price file)
        ``ingest`` would raise (the CLI calls it before it creates a store)."""
        from evalatlas.records.overrides import Overrides

        check_paths(paths)
        Overrides(model=model, agent_name=agent_name, labels=dict(labels or {}))
        _price_book(prices, presets)

    def is_empty(self) -> bool:
        """True when the store holds no episodes and no measurements (nothing ingested)."""
        from evalatlas.store.queries import is_empty

        return is_empty(self)

    def export_jsonl(self, path: str | Path, experiment: str | Sequence[str] | None = None) -> int:
        """Write experiment records, then one self-contained EpisodeRecord per line, then
        measurements (redacted); ``ingest`` of the file rebuilds the same store. Returns
        the number of episodes written. ``experiment``: only these (ids or names)."""
        from evalatlas.store.export import export_jsonl

        return export_jsonl(self, Path(path), select_experiments(self, experiment))

    def export_parquet(self, directory: str | Path) -> dict[str, int]:
        """Every table as ``<table>.parquet`` in ``directory`` (pandas, polars, Spark,
        DuckDB read them; ``ingest DIR`` reads them back); returns rows per table."""
        from evalatlas.store.export import export_parquet

        return export_parquet(self, Path(directory))

    def export_eee(
        self, directory: str | Path, experiment: str | Sequence[str] | None = None, *,
        organization: str = "unknown", relationship: str = "third_party",
    ) -> EeeExport:
        """Every Eval Ever 0.3.0 files (an aggregate with its interval and a samples file
        per experiment) under ``directory/data/<benchmark>/<developer>/<model>/``;
        ``organization`` ran the evaluation, ``relationship`` is one of
        :attr:`EEE_RELATIONSHIPS`. Returns what was written (``.written``: name, score,
        rows, files) and skipped (``.skipped``: id, reason). See docs/eee-export.md."""
        from evalatlas.exports.eee import export_eee

        check_choice(relationship, "relationship", RELATIONSHIPS)
        return export_eee(self, Path(directory), select_experiments(self, experiment),
                          organization=organization,
                          relationship=relationship)

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
        return experiments_frame(self)

    def quarantine(self, *, source: str | None = None,
                   limit: int | None = None) -> QuarantineResult:
        """Input rejected during ingest, newest batch first: rows with file, line, record,
        field, reason and batch; ``.total`` counts every rejected record in the store.
        ``source``: only files whose path contains it; ``limit``: at most this many rows.
        ``.to_pandas()`` for a DataFrame; ``.to_dict()`` is ``evalatlas quarantine
        --format json``. (No pandas is imported unless you ask for a frame.)"""
        from evalatlas.analysis.results import QuarantineResult

        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise ArgumentError(f"limit must be a whole number >= 0 or None, got {limit!r}")
        rows, total = quarantine_rows(self, source=source, limit=limit)
        return QuarantineResult(rows=rows, meta={"total": total})

    def lake_info(self) -> LakeInfoResult:
        """What a lake holds (``evalatlas lake info``): per table its rows, data files and
        bytes; ``meta``: location, data path, the snapshot read and the snapshot range.
        An ArgumentError on a DuckDB file store."""
        from evalatlas.analysis.lake_results import LakeInfoResult
        from evalatlas.store.lake_admin import lake_info

        info = lake_info(self)
        return LakeInfoResult(rows=info["rows"], meta=info["meta"])

    def compact_lake(self, *, older_than: str | int = "7d") -> LakeCompactResult:
        """Merge a lake's small files, expire snapshots older than ``older_than`` (``30m``,
        ``12h``, ``7d`` or seconds) and delete the files no kept snapshot needs, orphans
        (a killed writer's) included once that old (``evalatlas lake compact``). Runs
        under the commit lock, beside running writers."""
        from evalatlas.analysis.lake_results import LakeCompactResult
        from evalatlas.store.lake_admin import compact, parse_age

        seconds = older_than if isinstance(older_than, int) and not isinstance(
            older_than, bool) and older_than >= 0 else parse_age(str(older_than))
        done = compact(self, seconds)
        return LakeCompactResult(rows=[done], meta={"location": self.lake.display,
                                                   "older_than_s": seconds})

    def export_lake(self, location: str, *, data_path: str | Path | None = None
                    ) -> dict[str, int]:
        """Copy this file store into the lake at ``location`` (created when missing,
        ``data_path`` as in :func:`open`) in one transaction; returns rows per table
        (``evalatlas export lake``)."""
        from evalatlas.store.lake_admin import copy_store
        from evalatlas.store.lake_location import is_lake

        if not isinstance(location, str) or not is_lake(location):
            raise ArgumentError("location must be a lake: 'ducklake:postgres:<libpq "
                                "string>' or 'ducklake:<path>.ducklake'")
        with Store(location, data_path=data_path) as lake:
            return copy_store(self, lake)

    def clear_quarantined(self, *, source: str | None = None) -> int:

        """Delete quarantine rows: all, or those of files whose path contains ``source``
        (as :meth:`quarantine` selects them); returns how many (``evalatlas quarantine
        --clear``). A file ingested again re-reports its problems."""
        if source is not None and not isinstance(source, str):
            from evalatlas.errors import ArgumentError

            raise ArgumentError(f"source must be a string or None, got {source!r}")
        return clear_quarantine_rows(self, source=source)


def check_format(fmt: object) -> None:
    """``Store.ingest``'s ``fmt``: None (detect) or the name of an input format (any
    case), else an :class:`ArgumentError` listing the formats (it was a ``KeyError``)."""
    if fmt is None:
        return
    from evalatlas.adapters.registry import adapter_named

    if not isinstance(fmt, str):
        raise ArgumentError(f"fmt must be an input format's name or None, got "
                            f"{type(fmt).__name__} {fmt!r:.60}")
    try:
        adapter_named(fmt)
    except KeyError as exc:
        raise ArgumentError(f"fmt: {exc.args[0] if exc.args else repr(fmt)}") from None


def check_paths(paths: tuple[Any, ...]) -> list[str | Path]:
    """``Store.ingest``'s paths checked: files or folders as text or path objects, also
    given as one list (``store.ingest([a, b])`` ingests both). An empty string (which
    would mean the current directory), None, a number or no path at all is an
    :class:`ArgumentError` (issue 28.2: ``ingest('')`` ingested the working directory and
    ``ingest([a, b])`` nothing)."""
    import os

    out: list[str | Path] = []
    for item in paths:
        for p in (item if isinstance(item, list | tuple) else [item]):
            if isinstance(p, Path) or (isinstance(p, str) and p.strip()):
                out.append(p)
            elif isinstance(p, str):
                raise ArgumentError("paths: an empty path names no file or folder (it "
                                    "would be read as the current directory); pass '.' "
                                    "to ingest that")
            elif isinstance(p, os.PathLike) and isinstance(os.fspath(p), str):
                out.append(Path(p))
            else:
                raise ArgumentError(f"paths must be files or folders (text or Path, or a "
                                    f"list of them), got {type(p).__name__} {p!r:.60}")
    if not out:
        raise ArgumentError("paths: nothing to ingest; give at least one file or folder "
                            "('-' reads JSONL from standard input)")
    return out


def open(path: str | Path | None = None, *, read_only: bool = False,
         wait: float | None = None, create: bool = True,
         data_path: str | Path | None = None, snapshot: int | None = None) -> Store:
    """Open (or create) a store: ``path``, else ``$EVALATLAS_DB``, else
    ``./evalatlas.duckdb``; ``":memory:"`` for one that lives as long as the object.
    ``wait``: seconds to keep retrying while another process holds the lock (None: the
    process default, see :func:`set_default_wait`). ``create=False``: a missing store is
    an error and nothing is created; a new store's folder must exist. Errors (damaged
    file, lock held, read-only or full disk) are :class:`evalatlas.StoreError` naming
    the file and the fix.

    A DuckLake (many writers, snapshots; docs/scale-out.md): ``path`` is
    ``"ducklake:postgres:<libpq string>"`` or ``"ducklake:<path>.ducklake"``;
    ``data_path`` is the folder of a new lake's Parquet files (else
    ``$EVALATLAS_DATA_PATH``; needed only when a PostgreSQL-catalog lake is created);
    ``snapshot`` reads that earlier snapshot (read-only). ``store.snapshot`` is the
    snapshot a reader reads. Needs ``evalatlas[lake]``."""
    if snapshot is not None and (isinstance(snapshot, bool) or not isinstance(snapshot, int)
                                 or snapshot < 0):
        raise ArgumentError(f"snapshot must be a whole number >= 0 (a lake snapshot id) or "
                            f"None, got {snapshot!r}")
    if snapshot is not None and not read_only:
        raise ArgumentError("snapshot: an earlier snapshot is read-only; pass "
                            "read_only=True with it")
    return Store(path, read_only=read_only, wait=wait, create=create, data_path=data_path,
                 snapshot=snapshot)


def set_default_lake(*, data_path: str | Path | None = None,
                     snapshot: int | None = None) -> None:
    """Every lake opened later in this process (also through functions that take a store
    location, such as ``ea.atlas.fit``) uses this ``data_path`` (a new lake's Parquet
    folder) and reads this ``snapshot`` unless its opener says otherwise (the CLI's
    ``--data-path`` and ``--snapshot``). No arguments: back to none."""
    if snapshot is not None and (isinstance(snapshot, bool) or not isinstance(snapshot, int)
                                 or snapshot < 0):
        raise ArgumentError(f"snapshot must be a whole number >= 0 or None, got {snapshot!r}")
    _db.set_default_lake(data_path=None if data_path is None else str(data_path),
                         snapshot=snapshot)


def set_default_wait(seconds: float) -> None:
    """Every store opened later in this process (reading or writing) retries a lock
    held by another process for ``seconds`` unless its opener passes ``wait`` (the CLI's
    ``--wait``). Readers retry; they do not read a copy."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not \
            seconds >= 0:
        from evalatlas.errors import ArgumentError

        raise ArgumentError(f"seconds must be a number >= 0, got {seconds!r}")
    _db.set_default_wait(seconds)


def store_error(exc: BaseException, path: str | Path | None = None) -> StoreError:
    """The one-line :class:`evalatlas.StoreError` for a DuckDB error met while using the
    store at ``path`` (default as :func:`open`): damaged (the same line whether met at
    open or in a query), its disk full or read-only, or the query's first line."""
    from evalatlas.errors import StoreError
    from evalatlas.safe_write import errno_in_text

    where = _db.resolve_db_path(path)
    location = _db.resolve_location(path)
    if location.startswith("ducklake:"):  # before the file's checks: a lake's server
        from evalatlas.store.lake import use_error_message

        text = use_error_message(location, exc)
        if text is not None:
            return StoreError(text)
    if _db.is_damage(exc):
        return StoreError(_db.damaged_message(where, exc))
    if isinstance(exc, OSError) or errno_in_text(str(exc)) is not None:
        return StoreError(_db.write_error_message(where, exc))
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(f"store {where}: {first}")


def _price_book(prices: str | Path | None, presets: Sequence[str] | None) -> PriceBook:
    """The price book of :meth:`Store.ingest`'s ``prices`` and ``presets`` (the default
    book when neither is given). Raises :class:`InputError` on a bad file."""
    if prices is None and presets is None:
        return default_book()
    if presets is not None:
        from evalatlas.pricing.tables import PRESETS

        if isinstance(presets, str) or not all(p in PRESETS for p in presets):
            raise ArgumentError(f"presets must be a list of preset names, each one of "
                                f"{sorted(PRESETS)}; got {presets!r:.80}")
    return PriceBook(prices, None if presets is None else list(presets))


def validate_eee(directory: str | Path) -> list[str]:
    """Problems in the Every Eval Ever files under ``directory`` against the EEE 0.3.0
    JSON Schemas (empty when all are valid). Needs ``evalatlas[eee]`` (an ImportError
    naming the extra otherwise)."""
    from evalatlas.exports.eee_validate import validate_export

    return validate_export(directory)


Data: TypeAlias = "_db.StoreConnection | str | os.PathLike[str] | pd.DataFrame"
"""What every analysis reads, its argument ``data``: a :class:`Store` (or
:class:`evalatlas.store.db.StoreConnection`), a path to a store file (opened read-only; it must
exist), or a pandas DataFrame of episodes. There is no default: the API opens no store it
was not given."""


@contextmanager
def _store_of(data: Data) -> Iterator[_db.StoreConnection]:
    if isinstance(data, _db.StoreConnection):
        yield data
        return
    if isinstance(data, str | os.PathLike) and str(data).strip():
        with _db.StoreConnection(os.fspath(data), read_only=True) as store:
            yield store
        return
    if hasattr(data, "columns") and hasattr(data, "iloc"):
        with store_from_frame(cast("pd.DataFrame", data)) as store:
            yield store
        return
    raise ArgumentError(f"data must be a Store, a store file's path or a pandas DataFrame "
                        f"of episodes, got {type(data).__name__} {data!r:.60}")


def _check_groups(by: str | Sequence[str]) -> list[str]:
    """``by`` (one grouping key, or a list of them; blanks dropped, default agent) as a
    list of known keys, else an :class:`ArgumentError` naming ``by``."""
    items: list[object] = [by] if isinstance(by, str) or not isinstance(by, Sequence) \
        else list(by)
    groups = [check_grouping(g.strip() if isinstance(g, str) else g) for g in items
              if not isinstance(g, str) or g.strip()]
    return groups or ["agent"]


def agents(
    data: Data, what: str = "agents", *, experiment: str | Sequence[str] | None = None,
    agent: str | Sequence[str] | None = None, benchmark: str | Sequence[str] | None = None,
) -> InventoryResult:
    """What the store holds (``evalatlas agents``): one row per agent, or with ``what``
    ``"experiments"`` / ``"benchmarks"`` one per experiment or benchmark, with its id,
    name, episodes, tasks, experiments, agents and benchmarks. ``experiment``, ``agent``,
    ``benchmark``: only what these names select (matched as every selector is)."""
    from evalatlas.compose.inventory import inventory_of

    if what not in LISTS:
        raise ArgumentError(f"what must be one of {', '.join(LISTS)}, got {what!r}")
    with _store_of(data) as store:
        return inventory_of(store, what, experiment=experiment, agent=agent,
                            benchmark=benchmark)


def summary(
    data: Data, by: str | Sequence[str] = "agent", *,
    experiment: str | Sequence[str] | None = None, benchmark: str | Sequence[str] | None = None,
    agent: str | Sequence[str] | None = None, confidence: float = 0.95,
    ks: Sequence[int] | None = None, outcome: Literal["any", "harness", "judge"] = "any",
    missing: Literal["ignore", "fail"] = "ignore",
) -> SummaryResult:
    """One row per group (agent by default; experiment, benchmark, model, task, status,
    ``label:<name>``, or several), ranked by success rate (ties by name): success rate
    with Wilson and task-clustered intervals, pass@k and pass^k (one grouping key; each k
    over the tasks with at least k scored attempts), mean reward, errors, tokens, cost,
    cost per episode and per success with intervals, time, the run status
    (``incomplete`` when an experiment did not finish) and the source's published
    headline beside the success rate.

    Grouped by agent, an agent that ran several benchmarks gets a row per benchmark
    (rates of different benchmarks are never pooled). ``benchmark``/``agent``: keep only
    these benchmarks / agents (names or ids, any case). ``outcome``: ``any`` (harness
    where present, else judge), ``harness`` or ``judge``. ``missing``: ``ignore`` (rate
    over the reported tasks; a group reporting fewer tasks than its benchmark has is
    flagged) or ``fail`` (missing tasks count as failures). ``meta["published"]``:
    numbers the sources published, recomputed and checked. See
    :class:`evalatlas.analysis.summary.SummaryResult` for every field."""
    from evalatlas.compose.summary import summary_of

    if outcome not in OUTCOMES:
        raise ArgumentError(f"outcome: unknown outcome {outcome!r}; use one of "
                            f"{', '.join(OUTCOMES)}")
    if missing not in ("ignore", "fail"):
        raise ArgumentError(f"missing: unknown missing policy {missing!r}; use ignore or "
                            "fail")
    groups = _check_groups(by)
    check_fraction(confidence, "confidence", 0.95)
    with _store_of(data) as store:
        return summary_of(store, groups, experiment=experiment, benchmark=benchmark,
                          agent=agent, confidence=confidence, ks=ks, outcome=outcome,
                          missing=missing)


def compare(
    data: Data, *selectors: str, pair_by: Literal["task", "attempt"] = "task",
    score: str | None = None, confidence: float = 0.95, detect: float = 0.05,
    alpha: float = 0.05,
) -> CompareResult:
    """Paired comparison of two or more agents / experiments / ``label:<name>=<value>``
    on the tasks they share: difference with interval, McNemar or Wilcoxon (Holm with
    more than two), cost, and a sentence per pair."""
    from evalatlas.compose.compare import compare_of

    if len(selectors) == 1 and not isinstance(selectors[0], str):
        selectors = tuple(selectors[0])
    if len(selectors) < 2:
        raise ArgumentError("selectors: compare needs at least two agents, experiments "
                            "or label values")
    check_choice(pair_by, "pair_by", ("task", "attempt"))
    check_fraction(confidence, "confidence", 0.95)
    check_fraction(alpha, "alpha", 0.05)
    check_fraction(detect, "detect", 0.05)
    with _store_of(data) as store:
        return compare_of(store, selectors, pair_by=pair_by, score=score,
                          confidence=confidence, detect=detect, alpha=alpha)


def gate(
    data: Data, baseline: str, candidate: str, *, baseline_data: Data | None = None,
    metric: Literal["success", "reward"] = "success", max_drop: float = 0.0,
    alpha: float = 0.05, by: Literal["benchmark", "split", "none"] = "benchmark",
    exclude_flaky: bool = False, sequential: bool = False, power: float = 0.8,
) -> GateResult:
    """The CI gate: is ``candidate`` worse than ``baseline`` by more than ``max_drop``
    (a fraction), per benchmark (``by``), on the tasks both ran? One-sided paired tests
    (McNemar or sign-flip; ``sequential``: an anytime-valid e-process), Holm across groups,
    the minimum detectable drop, flaky and hard-regressed tasks. Selectors are those of
    :func:`compare`; ``baseline_data`` reads the baseline from another store (default:
    ``data``). ``result.verdict`` is pass, regression or inconclusive;
    ``result.exit_code()`` the CLI's."""
    from evalatlas.analysis.gate import check_gate_arguments
    from evalatlas.compose.gate import gate_of, gate_side

    check_gate_arguments(metric=metric, max_drop=max_drop, alpha=alpha, by=by, power=power)
    with _store_of(data) as store:
        cand = gate_side(store, candidate)
        if baseline_data is None:
            base = gate_side(store, baseline)
    if baseline_data is not None:
        with _store_of(baseline_data) as other:
            base = gate_side(other, baseline)
    return gate_of(base, cand, baseline_selector=baseline, candidate_selector=candidate,
                   metric=metric, max_drop=max_drop, alpha=alpha, by=by,
                   exclude_flaky=exclude_flaky, sequential=sequential, power=power)


def gate_plan(
    data: Data, baseline: str, *, drop: float = 0.03, power: float = 0.8,
    alpha: float = 0.05, attempts: int | None = None,
) -> GatePlanResult:
    """How many tasks (and attempts per task) a gate needs to detect a uniform ``drop``
    (a fraction) of the success rate with ``power`` at one-sided ``alpha``, from the
    ``baseline``'s own per-task outcomes. ``attempts``: the design to answer for (default:
    the baseline's median); ``result.meta["tasks_needed"]``."""
    from evalatlas.compose.gate import gate_plan_of

    with _store_of(data) as store:
        return gate_plan_of(store, baseline, drop=drop, power=power, alpha=alpha,
                            attempts=attempts)


def tiers(
    data: Data, *, baseline: str | None = "T0", label: str = "tier",
    experiment: str | Sequence[str] | None = None, confidence: float = 0.95,
    weights: tuple[float, float] = (0.5, 0.5), scale: GradeScale = "seed", ddof: int = 0,
    n_resamples: int = 2_000, seed: int = 0,
) -> TierReport:
    """ProjectScylla's per-tier table (tier = an experiment label): pass rate [CI], impl
    rate, median composite [CI], grade, cost, cost of pass, uplift [CI] vs ``baseline``."""
    from evalatlas.compose.tiers import tiers_of

    check_fraction(confidence, "confidence", 0.95)
    with _store_of(data) as store:
        return tiers_of(store, baseline=baseline, label=label, experiment=experiment,
                        confidence=confidence, weights=weights, scale=scale, ddof=ddof,
                        n_resamples=n_resamples, seed=seed)


def speedups(
    data: Data, *, by: Literal["agent", "task"] = "agent", level: int = 4,
    experiment: str | Sequence[str] | None = None,
    agent: str | Sequence[str] | None = None, task: str | Sequence[str] | None = None,
    confidence: float = 0.95, resamples: int = 2000,
) -> SpeedupResult:
    """FC-Eval speedups per agent:model (or per task): mean speedup, advantage at
    ``level`` with a bootstrap interval over tasks, beat-oracle share, success rate,
    pass@k, cost and trajectory length. Needs a store (measurements are not in an
    episodes frame)."""
    from evalatlas.compose.speedups import speedups_of

    check_choice(by, "by", ("agent", "task"))
    check_fraction(confidence, "confidence", 0.95)
    with _store_of(data) as store:
        return speedups_of(store, by=by, level=level, experiment=experiment, agent=agent,
                           task=as_selectors(task, "task"), confidence=confidence,
                           resamples=resamples)


def speedup_detail(
    data: Data, *, experiment: str | Sequence[str] | None = None,
    agent: str | Sequence[str] | None = None, task: str | Sequence[str] | None = None,
    limit: int | None = None,
) -> SpeedupDetail:
    """Per-benchmark FC-Eval rows (speedups, advantage, validity, fallback) as stored."""
    from evalatlas.compose.speedups import speedup_detail_of

    with _store_of(data) as store:
        return speedup_detail_of(store, experiment=experiment, agent=agent,
                                 task=as_selectors(task, "task"), limit=limit)


async def judge_episodes(
    store: _db.StoreConnection, judge: Any, *, experiment: str | Sequence[str] | None = None,
    rejudge: bool = False, limit: int | None = None, docs: dict[str, str] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """LLM-judge the store's completed episodes this judge has not scored (all with
    ``rejudge``) with ``judge`` (a :class:`evalatlas.JudgeClient`); scores are added under
    ``judge.<model>.<criterion>`` and a harness outcome is never changed. ``docs`` (source
    name -> text) lets the judge see sources. ``on_progress(done, total)`` is called once
    before the first call and after each judged episode. Returns counts (judged,
    failed, cached). Awaitable: ``asyncio.run(ea.judge_episodes(store, client))``."""
    from evalatlas.judge.episodes import judge_rows, select_unjudged

    rows = select_unjudged(store, select_experiments(store, experiment), rejudge, limit,
                           judge.config.model)
    if on_progress is None:
        return await judge_rows(store, rows, judge, docs or {})
    done = 0
    on_progress(0, len(rows))

    def advance() -> None:
        nonlocal done
        done += 1
        on_progress(done, len(rows))

    return await judge_rows(store, rows, judge, docs or {}, on_done=advance)


async def investigate(
    store: _db.StoreConnection, client: JudgeClient, *, only: str = "failed",
    agent: str | Sequence[str] | None = None, benchmark: str | Sequence[str] | None = None,
    sample: int | None = None, seed: int = 0, budget_usd: float | None = None,
    reinvestigate: bool = False, max_input_tokens: int = 6000,
    on_progress: Callable[[int, int], None] | None = None,
) -> InvestigateResult:
    """Ask an LLM investigator why each selected episode failed and whether its task is
    feasible; the answers become the episodes' ``findings`` (seed 002 names plus
    ``failure_category`` and ``evidence``), the experiments' ``investigator_llm_config``
    records model, prompt version and time. Harness outcomes are never changed.

    ``client``: a :class:`evalatlas.JudgeClient` (retries, cache, key scrubbing).
    ``only``: ``failed`` (default) or ``all``; ``agent`` / ``benchmark``: names (or agent
    ids); ``sample`` episodes drawn with ``seed``; ``budget_usd`` stops before a call
    that could exceed it (at most one call over); episodes with findings are skipped
    unless ``reinvestigate``. Failed calls leave findings missing and are counted.
    Awaitable: ``asyncio.run(ea.investigate(store, client))``. See docs/investigate.md."""
    from evalatlas.errors import ArgumentError
    from evalatlas.judge.investigator import investigate_store
    from evalatlas.store.findings import ONLY

    if only not in ONLY:
        raise ArgumentError(f"only must be one of {', '.join(ONLY)}, got {only!r}")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int)
                               or sample < 1):
        raise ArgumentError(f"sample must be a whole number >= 1 (episodes), got {sample!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"seed must be an integer, got {seed!r}")
    if budget_usd is not None and (isinstance(budget_usd, bool)
                                   or not isinstance(budget_usd, int | float)
                                   or not budget_usd > 0):
        raise ArgumentError(f"budget_usd must be a positive number of US dollars, got "
                            f"{budget_usd!r}")
    if isinstance(max_input_tokens, bool) or not isinstance(max_input_tokens, int) \
            or max_input_tokens < 100:
        raise ArgumentError(f"max_input_tokens must be an integer >= 100, got "
                            f"{max_input_tokens!r}")
    return await investigate_store(
        store, client, only=only, agent=select_agents(store, agent),
        benchmark=select_benchmarks(store, benchmark), sample=sample, seed=seed,
        budget_usd=budget_usd, reinvestigate=reinvestigate,
        max_input_tokens=max_input_tokens, on_progress=on_progress)


def failures(data: Data, by: str = "agent", *, benchmark: str | Sequence[str] | None = None,
             agent: str | Sequence[str] | None = None, confidence: float = 0.95
             ) -> FailuresResult:
    """Why agents fail, from the investigator's findings: per group (``by``: agent,
    experiment, benchmark, model, ``label:<name>`` ...) the share of investigated failed
    episodes in each failure category with task-clustered intervals and how many
    failures were not investigated; the top root causes (near-duplicates grouped); the
    tasks judged infeasible and the *suspect* ones (infeasible in a majority of >= 3
    episodes by >= 2 agents). See :class:`evalatlas.analysis.failures.FailuresResult`."""
    from evalatlas.compose.failures import failures as compose_failures

    check_grouping(by)
    check_fraction(confidence, "confidence", 0.95)
    with _store_of(data) as store:
        return compose_failures(store, by=by, agent=agent, benchmark=benchmark,
                                confidence=confidence)


def load_scenario(scenario: str | Path) -> Scenario:
    """A scenario (spec.yaml, documents, questions) from its directory or ``spec.yaml``, or
    by the name of a bundled one (``offline_qa``). :class:`evalatlas.EvalAtlasError`
    naming the file and field on bad input, or the bundled names when none matches."""
    from evalatlas.adapters.frameworks import load_scenario as _load
    from evalatlas.errors import EvalAtlasError

    p = Path(scenario)
    if p.exists():
        return _load(p)
    if (BUNDLED_SCENARIOS / str(scenario)).is_dir():
        return _load(BUNDLED_SCENARIOS / str(scenario))
    known = ", ".join(sorted(d.name for d in BUNDLED_SCENARIOS.iterdir() if d.is_dir())) \
        if BUNDLED_SCENARIOS.is_dir() else "(none)"
    raise EvalAtlasError(f"scenario {str(scenario)!r} not found (no such directory; "
                         f"bundled: {known})")


def load_framework(spec: str) -> FrameworkHandle:
    """An agent framework to run: ``module:Class`` (or ``module:factory``),
    ``cmd:<command line>`` (a subprocess speaking JSON lines) or a bundled example
    (``bm25``, ``echo``). :class:`evalatlas.EvalAtlasError` when it cannot be loaded."""
    from evalatlas.runner.loading import load_framework as _load

    return _load(spec)


async def run(
    scenario: str | Path | Scenario, framework: str | FrameworkHandle, *,
    store: _db.StoreConnection | None = None, judge: JudgeClient | None = None,
    mode: str = "baseline", runs: int = 1, query_timeout_s: float = 120.0,
    concurrency: int = 1, output_dir: str | Path = "runs", skip_code_quality: bool = False,
    skip_code_review: bool = False,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> RunSummary:
    """Run ``framework`` over ``scenario``'s questions (``runs`` repeats, per-question
    timeout, ``concurrency`` in flight), score each answer (lexical; LLM judge when
    ``judge`` is given; code quality unless skipped) and write every finished episode at
    once to an EvalLog directory under ``output_dir`` and, with ``store``, to the store
    (the run directory is ingested at the end). Running again resumes: finished
    episodes are not redone. ``judge`` stays open (the caller closes it).
    Returns a :class:`evalatlas.RunSummary` (run_dir, experiment, planned, resumed,
    done, statuses, judge_failures, wall_s, notes). Awaitable:
    ``asyncio.run(ea.run("offline_qa", "bm25", store=store))``."""
    from evalatlas.runner.engine import RunConfig, run_scenario

    scen = scenario if not isinstance(scenario, str | Path) else load_scenario(scenario)
    handle = framework if not isinstance(framework, str) else load_framework(framework)
    cfg = RunConfig(mode=mode, runs=runs, query_timeout_s=query_timeout_s,
                    concurrency=concurrency, output_dir=Path(output_dir),
                    skip_code_quality=skip_code_quality, skip_code_review=skip_code_review)
    result = await run_scenario(scen, handle, cfg, judge=judge, store=store,
                                on_episode=on_episode)
    if store is not None:
        ingest_paths(store, [result.run_dir])
    return result


def framework_data(
    data: Data, *, scenario: str | None = None, mode: str | None = None,
    frameworks: Sequence[str] | None = None, scenario_def: Any = None,
) -> list[FrameworkData]:
    """Framework-comparison runs grouped per framework x scenario x mode."""
    from evalatlas.compose.frameworks import framework_data_of

    with _store_of(data) as store:
        return framework_data_of(store, scenario=scenario, mode=mode,
                                 frameworks=frameworks, scenario_def=scenario_def)


def read_framework_results(
    paths: Sequence[str | Path], *, scenario: str | None = None, mode: str | None = None,
    frameworks: Sequence[str] | None = None, scenario_def: Any = None,
) -> tuple[list[FrameworkData], list[Problem]]:
    """Upstream framework-comparison results files (run-averaged ones included; a folder
    stands for the results files under it) grouped per framework x scenario x mode, and
    the problems met (missing files, records that could not be read). ``frameworks``:
    only these (framework name or display name)."""
    from evalatlas.adapters.framework_results import ADAPTER, read_results_file
    from evalatlas.analysis.frameworks import group_records
    from evalatlas.errors import Problem as _Problem
    from evalatlas.records.models import EpisodeRecord, ExperimentRecord

    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += [f for f in sorted(p.rglob("*.json")) if ADAPTER.detect(f)]
        else:
            files.append(p)
    experiments: list[ExperimentRecord] = []
    episodes: list[EpisodeRecord] = []
    problems: list[Problem] = []
    for f in files:
        if not f.is_file():
            problems.append(_Problem(str(f), "no such file"))
            continue
        for item in read_results_file(f, allow_averaged=True):
            if isinstance(item, ExperimentRecord):
                experiments.append(item)
            elif isinstance(item, EpisodeRecord):
                episodes.append(item)
            elif isinstance(item, _Problem):
                problems.append(item)
    data = group_records(experiments, episodes, scenario=scenario, mode=mode,
                         scenario_def=scenario_def)
    if frameworks:
        data = [d for d in data if d.framework in frameworks or d.display_name in frameworks]
    return data, problems


def compare_frameworks(
    data: Data | list[FrameworkData], *, scenario: str | None = None,
    mode: str | None = None, frameworks: Sequence[str] | None = None,
    scenario_def: Any = None, scorecard_mode: str = "relative", confidence: float = 0.95,
) -> FrameworkComparison:
    """The agent-framework comparison report (summary, scorecard, latency, profile
    metrics, code quality, correctness intervals, paired differences): a JSON-ready dict
    whose ``to_dict()`` is ``evalatlas compare-frameworks --format json`` and whose
    ``to_markdown()`` is the full Markdown report. ``data``: a store (or path, or
    episodes frame) or the list :func:`framework_data` / :func:`read_framework_results`
    return. ``scorecard_mode``: relative, absolute or upstream."""
    from evalatlas.analysis.framework_report import framework_comparison
    from evalatlas.report.frameworks import FrameworkComparison

    fds = data if isinstance(data, list) else framework_data(
        data, scenario=scenario, mode=mode, frameworks=frameworks, scenario_def=scenario_def)
    order = [q.id for q in scenario_def.questions] if scenario_def is not None else None
    return FrameworkComparison(framework_comparison(fds, scorecard_mode=scorecard_mode,
                                                    confidence=confidence,
                                                    question_order=order))


def build_report(
    data: Data, *, title: str = "evalatlas report", by: str = "agent",
    experiment: str | Sequence[str] | None = None, confidence: float = 0.95, alpha: float = 0.05,
) -> Report:
    """The offline HTML report (``evalatlas report``): leaderboard with intervals, paired
    comparisons, cost vs success rate, agent x task heatmap, per-task drill-down, and
    tiers, speedups and framework scorecards where the data has them. ``by``: one
    grouping key (as :func:`summary`). Returns a :class:`evalatlas.Report`: ``.to_html()``
    (one self-contained page), ``.to_dict()`` (its specs and data, ``--format json``),
    ``.write_static(dir)`` (SVG + PNG per chart, needs ``evalatlas[report]``)."""
    from evalatlas.report.build import ReportOptions
    from evalatlas.report.document import report_of

    if isinstance(by, str) and "," in by:
        raise ArgumentError("by takes one grouping key for the report")
    check_grouping(by)
    check_fraction(confidence, "confidence", 0.95)
    check_fraction(alpha, "alpha", 0.05)
    with _store_of(data) as store:
        ids = select_experiments(store, experiment)
        opts = ReportOptions(title=title, by=by, experiment=None if ids is None else tuple(ids),
                             confidence=confidence, alpha=alpha)
        return report_of(store, opts)
