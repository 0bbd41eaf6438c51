"""Ingest: walk input paths, adapt foreign formats to records, write them in batches.

Streaming: items flow from adapters into a bounded batch buffer, so memory does not grow
with input size. Transactional: each batch is one DuckDB transaction. Idempotent: rows
are upserted by primary key, and within a batch the last occurrence of a key wins.
Rejected input is quarantined with its location and reason; nothing good next to it is
dropped.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evalatlas.adapters.registry import plan
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement
from evalatlas.records.redact import redact_text
from evalatlas.store.db import Store
from evalatlas.store.fast_jsonl import FAST_PATH_MIN_BYTES, NotClean, try_fast_ingest
from evalatlas.store.rows import episode_row, experiment_row, measurement_row
from evalatlas.walk import Skipped

DEFAULT_BATCH_SIZE = 50_000


@dataclass
class IngestReport:
    """What one ingest did. ``problems`` holds at most ``max_problems`` examples."""

    experiments: int = 0
    episodes: int = 0
    measurements: int = 0
    rejected: int = 0
    batches: int = 0
    sources: int = 0
    problems: list[Problem] = field(default_factory=list)
    max_problems: int = 50
    fast_path_files: int = 0
    fast_path_declined: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    """Paths the walk left out (symlinks leaving the tree or looping, FIFOs, devices)."""

    def add_problem(self, p: Problem) -> None:
        self.rejected += 1
        if len(self.problems) < self.max_problems:
            # the report is printed: a reason may quote the rejected input, secrets included
            self.problems.append(dataclasses.replace(
                p, reason=redact_text(p.reason),
                record=redact_text(p.record) if p.record is not None else None,
                field=redact_text(p.field) if p.field is not None else None))

    def as_dict(self) -> dict[str, object]:
        return {
            "experiments": self.experiments,
            "episodes": self.episodes,
            "measurements": self.measurements,
            "rejected": self.rejected,
            "batches": self.batches,
            "sources": self.sources,
            "fast_path_files": self.fast_path_files,
            "fast_path_declined": self.fast_path_declined,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "problems": [
                {"file": p.file, "line": p.line, "record": p.record, "field": p.field,
                 "reason": p.reason}
                for p in self.problems
            ],
        }


class _Batch:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.experiments: dict[str, tuple] = {}
        self.episodes: dict[tuple[str, str], tuple] = {}
        self.measurements: dict[tuple[str, str, str], tuple] = {}
        self.problems: list[Problem] = []
        self.sources: list[str] = []
        self.requarantine: list[str] = []
        self.started = _dt.datetime.now(_dt.UTC)
        self.batch_id = store.next_batch_id()

    @property
    def size(self) -> int:
        return (len(self.experiments) + len(self.episodes) + len(self.measurements)
                + len(self.problems))

    def flush(self, report: IngestReport) -> None:
        if self.size == 0:
            return
        self.store.write_batch(
            batch_id=self.batch_id,
            experiments=list(self.experiments.values()),
            episodes=list(self.episodes.values()),
            measurements=list(self.measurements.values()),
            problems=self.problems,
            sources=self.sources,
            started_at=self.started,
            requarantine=self.requarantine,
        )
        report.batches += 1
        self.experiments.clear()
        self.episodes.clear()
        self.measurements.clear()
        self.problems.clear()
        self.requarantine.clear()
        self.sources = self.sources[-1:]  # the current source continues in the next batch
        self.started = _dt.datetime.now(_dt.UTC)
        self.batch_id += 1


def ingest_paths(
    store: Store,
    paths: Iterable[str | Path],
    *,
    fmt: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_progress: Callable[[str, int], None] | None = None,
    fast: bool | None = None,
    unknown_model_cost: str = "none",
    benchmark: str | None = None,
) -> IngestReport:
    """Ingest every recognised input under ``paths`` into ``store``.

    ``on_progress(source, n_items)`` is called as sources start and every few thousand
    items, for progress bars. ``fast``: use the DuckDB-native path for JSONL files
    (:mod:`evalatlas.store.fast_jsonl`) always (True), never (False) or for files of at
    least 8 MiB (None); a file it cannot prove clean goes through the exact path anyway.
    ``unknown_model_cost="zero"`` prices tokens of models without a known price at $0
    (the seeds' behaviour) instead of leaving the cost unknown.
    ``benchmark``: name the benchmark (and subset) of every ingested experiment this
    (e.g. a py-irt matrix, otherwise named after its file); disables the fast path.
    Returns counts and example problems.
    """
    if unknown_model_cost not in ("none", "zero"):
        raise ValueError(f"unknown_model_cost must be 'none' or 'zero', got {unknown_model_cost!r}")
    store.unknown_model_cost = unknown_model_cost
    report = IngestReport()
    batch = _Batch(store)
    n_items = 0
    for step in plan([Path(p) for p in paths], fmt, report.skipped):
        if isinstance(step, Problem):
            batch.problems.append(step)
            report.add_problem(step)
            continue
        path, adapter = step
        source = str(path)
        report.sources += 1
        if on_progress:
            on_progress(source, n_items)
        if benchmark is None and adapter.name == "jsonl" and (fast is True or (
                fast is None and path.stat().st_size >= FAST_PATH_MIN_BYTES)):
            batch.flush(report)
            try:
                n = try_fast_ingest(store, path, batch.batch_id)
            except NotClean as exc:
                report.fast_path_declined.append(redact_text(f"{source}: {exc}"))  # quotes input
            else:
                report.episodes += n
                report.batches += 1
                report.fast_path_files += 1
                n_items += n
                batch.batch_id += 1
                continue
        batch.sources.append(source)
        batch.requarantine.append(source)
        try:
            items = adapter.read(path)
            for item in items:
                n_items += 1
                if isinstance(item, Problem):
                    batch.problems.append(item)
                    report.add_problem(item)
                elif isinstance(item, EpisodeRecord):
                    batch.episodes[(item.experiment_id, item.trajectory_id)] = episode_row(
                        item, source, batch.batch_id)
                    report.episodes += 1
                elif isinstance(item, ExperimentRecord):
                    if benchmark is not None:
                        item = item.model_copy(update={
                            "benchmark_name": benchmark,
                            "benchmark_subset": item.benchmark_subset.model_copy(
                                update={"name": benchmark})})
                    batch.experiments[item.experiment_id] = experiment_row(
                        item, source, batch.batch_id)
                    report.experiments += 1
                elif isinstance(item, Measurement):
                    batch.measurements[(item.experiment_id, item.trajectory_id,
                                        item.benchmark)] = measurement_row(
                        item, source, batch.batch_id)
                    report.measurements += 1
                if batch.size >= batch_size:
                    batch.flush(report)
                if on_progress and n_items % 5000 == 0:
                    on_progress(source, n_items)
        except Exception as exc:  # an adapter bug must not lose the batch of others' data
            p = Problem(source, f"adapter {adapter.name!r} failed: {type(exc).__name__}: {exc}")
            batch.problems.append(p)
            report.add_problem(p)
    batch.flush(report)
    if on_progress:
        on_progress("", n_items)
    return report
