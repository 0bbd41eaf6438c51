"""Ingest: walk input paths, adapt foreign formats to records, write them in batches.

Streaming: items flow from adapters into a bounded batch buffer, so memory does not grow
with input size. Transactional: each batch is one DuckDB transaction. Idempotent: rows
are upserted by primary key, and within a batch the last occurrence of a key wins.
Rejected input is quarantined with its location and reason; nothing good next to it is
dropped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import duckdb

from evalatlas import collector, interrupts
from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.jsonl import duplicate_problem, iter_file_chunks, parse_chunk
from evalatlas.adapters.jsonl_stream import DEFAULT_CHUNK_BYTES, STDIN, Chunk, is_compressed
from evalatlas.adapters.registry import plan
from evalatlas.errors import InputError, Problem
from evalatlas.pricing import Pricing
from evalatlas.records.limits import ReadLimits
from evalatlas.records.limits import current as current_limits
from evalatlas.records.limits import using as limits_in_force
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement
from evalatlas.records.overrides import Overrides, apply_overrides
from evalatlas.records.redact import redact_text
from evalatlas.records.strict import CheckedEpisode, handing_over_rows
from evalatlas.results import ResultViews
from evalatlas.safe_write import errno_in_text, reason
from evalatlas.store.columnar import arrow_rows, batch_problems, with_agent_models, without_rows
from evalatlas.store.db import SMALL_BATCH, StoreConnection
from evalatlas.store.fast_jsonl import (
    FAST_PATH_MIN_BYTES,
    FastJsonl,
    GroupLost,
    NotClean,
    Prepared,
    whole,
)
from evalatlas.store.rows import (
    checked_row,
    declared_reward_range,
    episode_row,
    experiment_row,
    fill_agent_models,
    measurement_row,
    row_problem,
)
from evalatlas.store.schema import EPISODE_COLUMNS, EXPERIMENT_COLUMNS
from evalatlas.walk import Skipped

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

DEFAULT_BATCH_SIZE = 50_000


@dataclass(repr=False)
class IngestReport(ResultViews):
    """What one ingest did. ``problems`` holds at most ``max_problems`` examples.

    A result (:class:`evalatlas.results.Result`): ``rows`` are the example problems,
    ``meta`` the counts, ``to_dict()`` is ``evalatlas ingest --format json``; its repr is
    one line of counts."""

    SCHEMA: ClassVar[str] = "evalatlas.ingest/1"

    experiments: int = 0
    episodes: int = 0
    measurements: int = 0
    rejected: int = 0
    batches: int = 0
    sources: int = 0
    problems: list[Problem] = field(default_factory=list)
    max_problems: int = 50
    fast_path_files: int = 0
    fast_path_chunks: int = 0
    unchanged: list[str] = field(default_factory=list)
    """Files skipped because they are unchanged since their last ingest."""
    _fast_sources: set[str] = field(default_factory=set, repr=False)
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

    @property
    def schema(self) -> str:
        return self.SCHEMA

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The example problems (at most ``max_problems``): file, line, record, field,
        reason."""
        return [{"file": p.file, "line": p.line, "record": p.record, "field": p.field,
                 "reason": p.reason} for p in self.problems]

    @property
    def meta(self) -> dict[str, Any]:
        """The counts and lists of :meth:`to_dict`, without the problems."""
        return {k: v for k, v in self.to_dict().items() if k != "problems"}

    @property
    def notes(self) -> list[str]:
        """What a reader should know: rejected records beyond the examples kept."""
        if self.rejected > len(self.problems):
            return [f"{self.rejected} records were rejected; the first {len(self.problems)} "
                    "are shown (all are in the store's quarantine)"]
        return []

    def to_pandas(self) -> pd.DataFrame:
        """The example problems as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["file", "line", "record", "field", "reason"])

    def __repr__(self) -> str:
        counts = ", ".join(f"{getattr(self, k)} {k}" for k in (
            "experiments", "episodes", "measurements", "rejected"))
        extra = f", {len(self.unchanged)} unchanged" if self.unchanged else ""
        return f"<IngestReport {self.schema}: {counts}{extra}>"

    def as_dict(self) -> dict[str, object]:
        """Deprecated: :meth:`to_dict` (every other result's name)."""
        import warnings

        warnings.warn("IngestReport.as_dict() is deprecated; use to_dict()",
                      DeprecationWarning, stacklevel=2)
        return self.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """The counts, lists and example problems (``evalatlas ingest --format json``)."""
        return {
            "experiments": self.experiments,
            "episodes": self.episodes,
            "measurements": self.measurements,
            "rejected": self.rejected,
            "batches": self.batches,
            "sources": self.sources,
            "fast_path_files": self.fast_path_files,
            "fast_path_chunks": self.fast_path_chunks,
            "fast_path_declined": self.fast_path_declined,
            "unchanged": self.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "problems": [
                {"file": p.file, "line": p.line, "record": p.record, "field": p.field,
                 "reason": p.reason}
                for p in self.problems
            ],
        }


def range_extras(store: StoreConnection) -> dict[str, str]:
    """``extra`` (JSON text) of every stored experiment that declares a reward range
    (``extra.reward_range``), by experiment id: what an episode's reward is checked
    against when its experiment was stored by an earlier ingest."""
    return dict(store.con.execute(
        "SELECT experiment_id, CAST(extra AS VARCHAR) FROM experiments "
        "WHERE contains(CAST(extra AS VARCHAR), 'reward_range')").fetchall())


class _Batch:
    def __init__(self, store: StoreConnection, pricing: Pricing,
                 known_extras: dict[str, str] | None, written: Callable[[], None]) -> None:
        self.store = store
        self.pricing = pricing
        self.known_extras = known_extras
        self.experiments: dict[str, tuple] = {}
        self.episodes: dict[tuple[str, str], tuple] = {}
        """Episode rows by key (the last occurrence wins); checked column by column when
        the batch is written (:meth:`episode_rows`). Rows, not records: a batch holds
        one object per episode, not a dozen for the cyclic collector to scan."""
        self.lines: dict[tuple[str, str], int] = {}
        self.measurements: dict[tuple[str, str, str], tuple] = {}
        self.problems: list[Problem] = []
        self.sources: list[str] = []
        self.requarantine: list[str] = []
        self.started = _dt.datetime.now(_dt.UTC)
        self.batch_id = store.next_batch_id()
        self.ranges: dict[str, tuple[float, float]] = {}
        self._stored_extras: dict[str, str] | None = None
        self.files: dict[str, tuple[str, int, int, str]] = {}
        """Input files read to their end, by resolved path: (path, size, mtime_ns,
        sha256), remembered in the next write's transaction (not a commit of their own)."""
        self.written = written
        """Called after each write (of this batch or of a fast-path group): the
        collector's step (:func:`evalatlas.collector.paused_in_steps`)."""

    def reward_range(self, experiment_id: str) -> tuple[float, float]:
        """The experiment's declared reward range (``extra.reward_range``), else [0, 1]."""
        found = self.ranges.get(experiment_id)
        if found is None:
            row = self.experiments.get(experiment_id)
            extra = row[EXPERIMENT_COLUMNS.index("extra")] if row else None
            if row is None:
                extra = self.stored_extras().get(experiment_id)
            found = self.ranges[experiment_id] = declared_reward_range(extra)
        return found

    def stored_extras(self) -> dict[str, str]:
        """``extra`` of every stored experiment that declares a reward range, read once per
        batch: one query, not one per experiment (each query on a lake reads its catalog:
        50 experiments cost 50 round trips to PostgreSQL). A staged ingest (``known``,
        :func:`ingest_paths`' ``stored_extras``) adds those of the store it is staged for."""
        if self._stored_extras is None:
            self._stored_extras = {**(self.known_extras or {}),
                                   **range_extras(self.store)}
        return self._stored_extras

    @property
    def size(self) -> int:
        return (len(self.experiments) + len(self.episodes) + len(self.measurements)
                + len(self.problems))

    def episode_rows(self, report: IngestReport) -> list[tuple] | pa.Table:
        """The batch's episodes as rows for :meth:`StoreConnection.write_batch`: one Arrow table
        (the columnar path, :mod:`evalatlas.store.columnar`) or, for a few rows, tuples
        (Arrow's conversion imports pandas, a second a small ingest need not pay). A
        row a value of which its column cannot hold is quarantined here, by file, line,
        record, field and reason, and left out; the other rows are written."""
        if not self.episodes:
            return []
        keys = list(self.episodes)
        if len(keys) > SMALL_BATCH:
            table = arrow_rows(self.store.arrow_schema("episodes", EPISODE_COLUMNS),
                               list(self.episodes.values()))
            if table is not None:
                return with_agent_models(table, self.experiments)
        columns = fill_agent_models(
            dict(zip(EPISODE_COLUMNS, map(list, zip(*self.episodes.values(), strict=True)),
                     strict=True)), self.experiments)
        bad = batch_problems("episodes", columns)
        for i, (field_, why) in sorted(bad.items()):
            p = Problem(columns["source_file"][i], why, field=field_,
                        line=self.lines.get(keys[i]), record=keys[i][1])
            self.problems.append(p)
            report.add_problem(p)
            report.episodes -= 1
        if bad:
            columns = without_rows(columns, set(bad))
        return list(zip(*columns.values(), strict=True))

    def flush(self, report: IngestReport, last: bool = False) -> None:
        """Write the batch (one transaction) and start the next. ``last``: the ingest's
        last write, whose commit checkpoints (:meth:`StoreConnection.write_batch`)."""
        if self.size == 0:
            if self.requarantine:  # nothing to write, but old problems to forget
                self.store.clear_quarantine(self.requarantine)
                self.requarantine.clear()
            if self.files:
                self.store.remember_files(list(self.files.values()))
                self.files.clear()
            return
        episodes = self.episode_rows(report)
        self.store.write_batch(
            batch_id=self.batch_id,
            experiments=list(self.experiments.values()),
            episodes=episodes,
            measurements=list(self.measurements.values()),
            problems=self.problems,
            sources=self.sources,
            started_at=self.started,
            requarantine=self.requarantine,
            pricing=self.pricing,
            files=list(self.files.values()),
            checkpoint=last,
            models_filled=not isinstance(episodes, list),  # with_agent_models did
        )
        report.batches += 1
        self.files.clear()
        self.experiments.clear()
        self.episodes.clear()
        self.lines.clear()
        self.measurements.clear()
        self.problems.clear()
        self.requarantine.clear()
        self.sources = self.sources[-1:]  # the current source continues in the next batch
        self.started = _dt.datetime.now(_dt.UTC)
        self.batch_id += 1
        self.written()


def _add_record(batch: _Batch, report: IngestReport,
                item: EpisodeRecord | ExperimentRecord | Measurement, source: str,
                line: int | None = None) -> None:
    """Add one record to the batch, or quarantine it when its reward lies outside the
    benchmark's range or (experiments, measurements) a value cannot be stored (see
    :func:`evalatlas.store.rows.row_problem`); the other records of the batch are
    unaffected. An episode is flattened with the batch's other episodes when the batch
    is written (:meth:`_Batch.episode_rows`, which quarantines a value its column cannot
    hold)."""
    bad = None
    if isinstance(item, EpisodeRecord):
        _add_episode(batch, report, item, source, line)
        return
    if isinstance(item, ExperimentRecord):
        row = experiment_row(item, source, batch.batch_id)
        rid = item.experiment_id
        bad = row_problem("experiments", row)
    else:
        row = measurement_row(item, source, batch.batch_id)
        rid = item.trajectory_id
        bad = row_problem("measurements", row)
    if bad is not None:
        p = Problem(source, bad[1], field=bad[0], line=line,
                    record=rid)
        batch.problems.append(p)
        report.add_problem(p)
        return
    if isinstance(item, ExperimentRecord):
        batch.experiments[item.experiment_id] = row
        batch.ranges.pop(item.experiment_id, None)
        report.experiments += 1
    else:
        batch.measurements[(item.experiment_id, item.trajectory_id, item.benchmark)] = row
        report.measurements += 1


def _add_episode(batch: _Batch, report: IngestReport, item: EpisodeRecord | Any,
                 source: str, line: int | None) -> None:
    """:func:`_add_record` of an episode (an EpisodeRecord, or the checked fields an
    adapter hands over, :data:`~evalatlas.records.strict.CheckedEpisode`): flattened into
    its row, or quarantined when its reward lies outside its experiment's range."""
    reward = item.reward
    if reward is not None:
        eid = item.experiment_id
        found = batch.ranges.get(eid)
        lo, hi = found if found is not None else batch.reward_range(eid)
        if not lo <= reward <= hi:
            p = Problem(source, f"reward {reward!r} is outside [{lo:g}, {hi:g}] (declare "
                        "another range in the experiment's extra.reward_range)",
                        field="reward", line=line, record=item.trajectory_id)
            batch.problems.append(p)
            report.add_problem(p)
            return
    key = (item.experiment_id, item.trajectory_id)
    batch.episodes[key] = (checked_row if type(item) is CheckedEpisode else episode_row)(
        item, source, batch.batch_id)
    if line is not None:
        batch.lines[key] = line
    elif batch.lines:
        batch.lines.pop(key, None)
    report.episodes += 1


def ingest_paths(
    store: StoreConnection,
    paths: Iterable[str | Path],
    *,
    fmt: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_progress: Callable[[str, int], None] | None = None,
    fast: bool | None = None,
    pricing: Pricing | None = None,
    limits: ReadLimits | None = None,
    fast_min_bytes: int = FAST_PATH_MIN_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    force: bool = False,
    benchmark: str | None = None,
    overrides: Overrides | None = None,
    atomic: bool = False,
    stored_extras: dict[str, str] | None = None,
) -> IngestReport:
    """Ingest every recognised input under ``paths`` into ``store``.

    ``paths`` may include ``-`` for JSONL on standard input (plain, gzip or zstd).
    ``on_progress(source, n_items)`` is called as sources start and every few thousand
    items, for progress bars. ``fast``: use the DuckDB-native path for JSONL chunks
    (:mod:`evalatlas.store.fast_jsonl`) always (True), never (False) or for inputs of at
    least ``fast_min_bytes`` (None); a chunk it cannot prove clean goes through the exact
    path. ``limits``: line, file, record and nesting limits (defaults:
    :class:`evalatlas.records.limits.ReadLimits`). A file whose path, size and
    modification time (or, when only the time changed, content hash) match the last
    ingest of it is skipped unless ``force``. ``pricing``: the price book that completes
    costs from tokens and what a model without a known price costs (default: the default
    book, unknown; :class:`~evalatlas.pricing.Pricing`). ``benchmark``: name the
    benchmark (and subset) of every ingested experiment this (e.g. a py-irt matrix,
    otherwise named after its file); disables the fast path. ``overrides``: model, agent
    name and labels set on every ingested experiment and recorded as overrides
    (:mod:`evalatlas.records.overrides`); disables the fast path. ``atomic``: everything
    in one transaction (:meth:`StoreConnection.atomic`: all valid records or, after an error or a
    kill, none), for a submission to ``evalatlas serve``; the fast path is off (it
    commits its row groups itself) and batches still bound memory. ``stored_extras``:
    for an ingest staged in a private store before it is copied into another
    (``evalatlas serve`` on a lake), the other store's :func:`range_extras`, so that
    rewards are checked against the ranges its experiments declare. Returns counts and
    example problems.
    """
    paths = list(paths)
    check_named_paths(paths, fmt)
    overrides = overrides or Overrides()
    # The cyclic collector is paused over the ingest and run on the young objects after
    # each write (collector.paused_in_steps): 3-8% of an adapter ingest's CPU.
    with limits_in_force(limits or ReadLimits()), store.one_thread(), \
            (store.atomic() if atomic else contextlib.nullcontext()), \
            collector.paused_in_steps() as step:
        batch = _Batch(store, pricing or Pricing(), stored_extras, step)
        run = _Run(store, IngestReport(), batch, batch_size, on_progress,
                   False if benchmark is not None or overrides or atomic else fast,
                   fast_min_bytes, chunk_bytes, force, benchmark, overrides)
        run.ingest(paths, fmt)
    return run.report


def check_named_paths(paths: list[str | Path], fmt: str | None) -> None:
    """Raise :class:`~evalatlas.errors.InputError` for a named input that is a mistake
    of the command line, not bad data: a path that does not exist (a typo would
    otherwise stay in the quarantine for ever), or a file given to an adapter that
    reads a folder (``--input-format swebench`` takes the run folder). Nothing is read
    or stored when one is wrong."""
    forced = None
    if fmt:
        from evalatlas.adapters.registry import adapter_named

        try:
            forced = adapter_named(fmt)
        except KeyError:
            return  # the plan reports the unknown format, as before
    for p in paths:
        if str(p) == STDIN:
            continue
        path = Path(p)
        if not path.exists() and not path.is_symlink():
            raise InputError.at(path, "no such file or folder (nothing was ingested)")
        if forced is not None and forced.kind == "dir" and not path.is_dir():
            raise InputError.at(path, f"the {forced.name!r} input format reads a folder, "
                                f"not a file: pass the folder that holds it "
                                f"({path.parent})")


@dataclass
class _Run:
    store: StoreConnection
    report: IngestReport
    batch: _Batch
    batch_size: int
    on_progress: Callable[[str, int], None] | None
    fast: bool | None
    fast_min_bytes: int
    chunk_bytes: int
    force: bool
    benchmark: str | None = None
    overrides: Overrides = field(default_factory=Overrides)
    n_items: int = 0

    def problem(self, p: Problem) -> None:
        self.batch.problems.append(p)
        self.report.add_problem(p)

    def progress(self, source: str) -> None:
        if self.on_progress:
            self.on_progress(source, self.n_items)

    def ingest(self, paths: Iterable[str | Path], fmt: str | None) -> None:
        named = [str(p) for p in paths]
        if STDIN in named and fmt not in (None, "jsonl"):
            self.problem(Problem("<stdin>", f"standard input is read as JSONL, not {fmt}"))
        elif STDIN in named:
            self.report.sources += 1
            self.progress("<stdin>")
            self.jsonl(STDIN, "<stdin>")
        for step in plan([Path(p) for p in named if p != STDIN], fmt, self.report.skipped):
            if isinstance(step, Problem):
                self.problem(step)
                continue
            path, adapter = step
            source = str(path)
            self.report.sources += 1
            self.progress(source)
            known = None
            if adapter.kind == "file" and not self.force:
                known = self.unchanged(path)
                if known is True:
                    self.report.unchanged.append(source)
                    continue
            if adapter.name == "jsonl":
                # the digest is of the bytes on disk (what unchanged() compares): a
                # compressed file's chunks are its text, so it is hashed beside them
                beside = Sha256Beside(path) if is_compressed(path) else None
                read = _Digest()
                ok = self.jsonl(path, source, None if beside else read)
                if ok:
                    self.remember_file(path, beside.result() if beside
                                       else read.hasher.hexdigest())
                elif beside is not None:
                    beside.join()
            elif adapter.kind == "file":
                digest = Sha256Beside(path)
                ok = self.generic(path, source, adapter)
                if ok:
                    self.remember_file(path, digest.result())
                else:
                    digest.join()
            else:
                self.generic(path, source, adapter)
        self.batch.flush(self.report, last=True)
        self.progress("")

    # -- unchanged files -------------------------------------------------------------
    def unchanged(self, path: Path) -> bool:
        """Same path, size and mtime as last time; or same size and content hash (last
        time: as stored, or as read earlier in this ingest and not yet written)."""
        st = path.stat()
        resolved = str(path.resolve())
        pending = self.batch.files.get(resolved)
        row = pending[1:] if pending is not None else self.store.con.execute(
            "SELECT size, mtime_ns, sha256 FROM files WHERE path = ?", [resolved]).fetchone()
        if row is None or row[0] != st.st_size:
            return False
        if row[1] == st.st_mtime_ns:
            return True
        if file_sha256(path) == row[2]:
            if pending is not None:
                self.batch.files[resolved] = (resolved, st.st_size, st.st_mtime_ns, row[2])
            else:
                self.store.con.execute("UPDATE files SET mtime_ns = ? WHERE path = ?",
                                       [st.st_mtime_ns, resolved])
            return True
        return False

    def remember_file(self, path: Path, digest: str) -> None:
        """Remember a file read to its end, with its SHA-256 (``digest``), in the
        transaction of the next write (the batch holding its last records, or a later
        one): one commit, not two."""
        st = path.stat()
        if digest == _EMPTY_SHA:  # a stream hashed nothing (or the file is empty)
            digest = file_sha256(path)
        resolved = str(path.resolve())
        self.batch.files[resolved] = (resolved, st.st_size, st.st_mtime_ns, digest)

    # -- any adapter -----------------------------------------------------------------
    def generic(self, path: Path, source: str, adapter: Adapter) -> bool:
        batch = self.batch
        batch.sources.append(source)
        batch.requarantine.append(source)
        report, size = self.report, self.batch_size
        # an adapter that hands over rows does so while it runs (the generator's body
        # sees the context of each next()): the whole loop is inside
        rows = handing_over_rows() if adapter.rows else contextlib.nullcontext()
        try:
            with rows:
                # room for episodes and problems before the batch is full (its
                # experiments and measurements change only outside the episodes' path)
                room = size - len(batch.experiments) - len(batch.measurements)
                for item in adapter.read(path):
                    self.n_items += 1
                    kind = type(item)
                    if kind is CheckedEpisode or kind is EpisodeRecord:  # most items
                        _add_episode(batch, report, item, source, None)
                        if len(batch.episodes) + len(batch.problems) < room \
                                and self.n_items % 5000:
                            continue
                    elif isinstance(item, Problem):
                        self.problem(item)
                    else:
                        _add_record(batch, report, self.rename(item), source)
                    if batch.size >= size:
                        batch.flush(report)
                    if self.n_items % 5000 == 0:
                        self.progress(source)
                    room = size - len(batch.experiments) - len(batch.measurements)
        except Exception as exc:  # an adapter bug must not lose the batch of others' data
            interrupts.reraise(exc)  # unless it was Ctrl-C inside a DuckDB query
            if isinstance(exc, duckdb.Error) and errno_in_text(str(exc)):
                raise  # the store's disk is full or read-only: not the adapter's fault
            self.problem(Problem(source, f"adapter {adapter.name!r} failed: "
                                 f"{type(exc).__name__}: {exc}"))
            return False
        return True

    # -- JSONL, chunk by chunk ---------------------------------------------------------
    def exact_chunks(self, chunks: Iterable[Chunk | Problem], source: str,
                     seen: dict[tuple[str, str], int], depth: int) -> None:
        """Every chunk through the exact path (a small file, or no room to stage the fast
        path's chunks); a problem the chunker found is quarantined as it comes."""
        for chunk in chunks:
            if isinstance(chunk, Problem):
                self.problem(chunk)
            else:
                self.exact_chunk(chunk, source, seen, depth, None)

    def jsonl(self, path: Path | str, source: str, digest: _Digest | None = None) -> bool:
        """One JSONL input through the fast path (whole, else chunk by chunk), the exact
        path for any chunk (or line) the fast path cannot prove clean; ``digest`` takes
        the SHA-256 of a plain file's bytes."""
        batch, report = self.batch, self.report
        batch.flush(report)
        batch.sources.append(source)
        depth = current_limits().max_json_depth
        size = None if str(path) == STDIN else Path(path).stat().st_size
        if self.fast is False:
            use_fast: bool | None = False
        elif self.fast is True:
            use_fast = True
        else:
            use_fast = None if size is None else size >= self.fast_min_bytes
        seen: dict[tuple[str, str], int] = {}
        # Old quarantine rows of this source go now: everything below re-reports.
        batch.requarantine.append(source)
        batch.flush(report)
        if use_fast and digest is not None and whole.eligible(
                self.store, path, bool(self.narrowed_ranges())):
            if self.whole_file(Path(path), source, digest.hasher, depth):
                return True
            digest.restart()  # the chunked path reads the file again from its start
        hasher = digest.hasher if digest is not None else None
        chunks = iter_file_chunks(path, source, chunk_bytes=self.chunk_bytes, hasher=hasher)
        if use_fast is None:  # a stream: decided by its first chunk
            first = next(chunks, None)
            if first is None:
                return True
            use_fast = isinstance(first, Chunk) and first.size >= self.fast_min_bytes
            chunks = itertools.chain([first], chunks)
        if not use_fast:
            self.exact_chunks(chunks, source, seen, depth)
            return True
        try:
            fj = FastJsonl(self.store, source, depth, self.batch.pricing)
        except OSError as exc:  # no room for the chunk folder in $TMPDIR: the exact path
            report.fast_path_declined.append(
                f"{source}: cannot stage chunks in the temporary folder ({reason(exc)})")
            self.exact_chunks(chunks, source, seen, depth)
            return True
        try:
            for chunk, prep in fj.pipeline(chunks):
                if isinstance(chunk, Problem):
                    self.problem(chunk)
                    continue
                assert prep is not None
                if not self.fast_chunk(fj, prep, source):
                    self.exact_chunk(chunk, source, {}, depth, fj)
            self.fast_flush(fj, source)
        finally:
            fj.close()
        return True

    def whole_file(self, path: Path, source: str, hasher: hashlib._Hash, depth: int
                   ) -> bool:
        """The fast path's first try: the whole file as one batch
        (:mod:`evalatlas.store.fast_jsonl.whole`); False (nothing written) when it
        needs the chunked path, which then reads it from its start."""
        report, batch = self.report, self.batch
        done = self.n_items

        def progress(lines: int) -> None:  # from the checking thread, while this one
            # waits in DuckDB's statement: the callback is never called twice at once
            if self.on_progress:
                self.on_progress(source, done + lines)

        def write_others(lines: list[tuple[int, bytes]]) -> None:
            """Experiment records and measurements, as the chunked path writes them
            (:meth:`fast_chunk`), in the whole-file try's transaction."""
            for lineno, raw in lines:
                for line, item in parse_chunk(Chunk(lineno, raw + b"\n", 1), source, {},
                                              depth):
                    self.add(item, source, line)
            batch.flush(report)

        episodes = batch.batch_id  # the episodes' batch; the other records' after it
        batch.batch_id += 1
        try:
            n = whole.store_whole(self.store, path, source, episodes,
                                  pricing=batch.pricing, hasher=hasher, max_depth=depth,
                                  write_others=write_others, progress=progress)
        except whole.Declined:  # nothing written: write_others was not called
            batch.batch_id = episodes
            return False
        batch.written()
        report.batches += bool(n)
        report.episodes += n
        self.fast_written(source, 1)
        self.n_items += n
        self.progress(source)
        return True

    def fast_chunk(self, fj: FastJsonl, prep: Prepared, source: str) -> bool:
        """Add a prepared chunk to the fast path's open group, written at the end of its
        row group; False (nothing written) when it needs the exact path."""
        batch, report, chunk = self.batch, self.report, prep.chunk
        if prep.reason is not None:
            report.fast_path_declined.append(  # DuckDB errors quote input
                redact_text(f"{source}:{chunk.first_line}: {prep.reason}"))
            return False
        if prep.other_lines:  # experiment records and measurements: exact, stored first,
            # the open group staying open (see FastJsonl.insert: the same rows)
            wanted = {chunk.first_line + i - 1 for i in prep.other_lines}
            for lineno, raw in chunk.lines_at(wanted):
                one = Chunk(lineno, raw + b"\n", 1)
                for line, item in parse_chunk(one, source, {}, fj.max_depth):
                    self.add(item, source, line)
        if batch.size or batch.requarantine:
            batch.flush(report)
        try:
            ranges = self.narrowed_ranges()
            if ranges and (bad := fj.out_of_range(prep, ranges)):
                raise NotClean(f"a reward outside its experiment's declared reward_range: {bad}")
            fj.insert(prep)
        except (NotClean, duckdb.Error) as exc:  # a key of an earlier chunk, or a failed check
            interrupts.reraise(exc)
            fj.discard(prep)
            report.fast_path_declined.append(  # DuckDB errors quote input
                redact_text(f"{source}:{chunk.first_line}: {exc}"))
            return False
        if fj.group_ready(chunk):
            self.fast_flush(fj, source, whole=True)
        return True

    def narrowed_ranges(self) -> dict[str, tuple[float, float]]:
        """The declared reward ranges narrower than [0, 1] (the fast path's own check) of
        the experiments stored now, and of the store a staged ingest is for: a chunk with
        a reward outside one takes the exact path, which quarantines it (as
        :func:`_add_record` does)."""
        extras = {**(self.batch.known_extras or {}), **range_extras(self.store)}
        ranges = {eid: declared_reward_range(extra) for eid, extra in extras.items()}
        return {eid: (lo, hi) for eid, (lo, hi) in ranges.items() if lo > 0 or hi < 1}

    def fast_flush(self, fj: FastJsonl, source: str, whole: bool = False) -> None:
        """Write the fast path's open group, if any, as one batch (``whole``: only whole
        row groups of it, see :meth:`FastJsonl.flush`)."""
        report = self.report
        try:
            group = fj.flush(self.batch.batch_id, whole)
        except GroupLost as lost:
            self.group_lost(fj, lost, source)
            return
        if group is None:
            return
        self.batch.written()
        self.batch.batch_id += 1
        report.batches += 1
        report.episodes += group.n
        self.fast_written(source, len(group.preps))
        self.n_items += group.n
        self.progress(source)

    def fast_written(self, source: str, chunks: int) -> None:
        """Count ``chunks`` of ``source`` written by the fast path (a file stored whole
        counts one), and the file once."""
        report = self.report
        report.fast_path_chunks += chunks
        if source not in report._fast_sources:
            report._fast_sources.add(source)
            report.fast_path_files += 1

    def group_lost(self, fj: FastJsonl, lost: GroupLost, source: str) -> None:
        """A write that failed was rolled back: its chunks take the exact path."""
        for chunk in lost.chunks:
            self.report.fast_path_declined.append(  # DuckDB errors quote input
                redact_text(f"{source}:{chunk.first_line}: {lost}"))
            self.exact_chunk(chunk, source, {}, fj.max_depth, fj)

    def exact_chunk(self, chunk: Chunk, source: str, seen: dict[tuple[str, str], int],
                    depth: int, fj: FastJsonl | None) -> None:
        items = list(parse_chunk(chunk, source, seen, depth))
        if fj is not None:
            self.fast_flush(fj, source)
            keys = [(it.experiment_id, it.trajectory_id, line) for line, it in items
                    if isinstance(it, EpisodeRecord)]
            earlier = fj.earlier_lines(keys)
            if earlier:
                items = [(line, duplicate_problem(source, line, earlier[key], it.trajectory_id)
                          if isinstance(it, EpisodeRecord)
                          and (key := (it.experiment_id, it.trajectory_id)) in earlier
                          else it) for line, it in items]
            fj.remember([k for k in keys if (k[0], k[1]) not in earlier])
        for line, item in items:
            self.add(item, source, line)
        if fj is not None:
            self.batch.flush(self.report)

    def rename(self, item: ExperimentRecord | EpisodeRecord | Measurement,
               ) -> ExperimentRecord | EpisodeRecord | Measurement:
        """``--benchmark``: an experiment record takes the given benchmark name;
        ``--model``/``--agent-name``/``--label``: the overrides, recorded."""
        if isinstance(item, ExperimentRecord) and self.overrides:
            item = apply_overrides(item, self.overrides)
        if self.benchmark is not None and isinstance(item, ExperimentRecord):
            return item.model_copy(update={
                "benchmark_name": self.benchmark,
                "benchmark_subset": item.benchmark_subset.model_copy(
                    update={"name": self.benchmark})})
        return item

    def add(self, item: Item, source: str, line: int | None) -> None:
        self.n_items += 1
        if isinstance(item, Problem):
            self.problem(item)
        else:
            _add_record(self.batch, self.report, self.rename(item), source,
                        line)
        if self.batch.size >= self.batch_size:
            self.batch.flush(self.report)
        if self.n_items % 5000 == 0:
            self.progress(source)


_EMPTY_SHA = hashlib.sha256().hexdigest()


class _Digest:
    """The SHA-256 of a plain JSONL input's bytes as they are read; restarted when the
    fast path's whole-file try is declined, since the chunked path then reads the file
    again from its start."""

    def __init__(self) -> None:
        self.hasher = hashlib.sha256()

    def restart(self) -> None:
        self.hasher = hashlib.sha256()


class Sha256Beside:
    """The SHA-256 of a file an adapter reads (for skipping it unchanged next time),
    computed in a thread beside the read when the file is large: hashlib and the file
    reads release the GIL, so on a second core the hash costs no wall time (an 8.4 MB
    Inspect log: ~12 ms of CPU that the ingest's wall clock waited for after the read).
    A small file is hashed when :meth:`result` is asked (a thread costs more than its
    hash). The digest is of the bytes on disk, read once more as before."""

    THREAD_MIN_BYTES = 1 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self.digest: str | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        try:
            large = path.stat().st_size >= self.THREAD_MIN_BYTES
        except OSError:
            large = False  # the adapter's read reports it
        if large:
            self.thread = threading.Thread(target=self._run, name="evalatlas-sha256",
                                           daemon=True)
            self.thread.start()

    def _run(self) -> None:
        try:
            self.digest = file_sha256(self.path)
        except BaseException as exc:  # raised again in the ingest's thread by result()
            self.error = exc

    def join(self) -> None:
        """Wait for the thread, if any (the digest is then not wanted)."""
        if self.thread is not None:
            self.thread.join()

    def result(self) -> str:
        """The file's SHA-256 hex digest (raises what reading the file raised)."""
        if self.thread is None:
            return file_sha256(self.path)
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.digest is not None
        return self.digest


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 256 KiB blocks into one reused buffer.

    Why the buffer: a fresh 4 MiB ``bytes`` per block was new memory for every block
    (its page faults cost as much as the hash): an 8.4 MB Inspect log 10 -> 5.4 ms of
    CPU (no ``mmap``: a file cut short while mapped kills the process with SIGBUS)."""
    h = hashlib.sha256()
    buf = bytearray(256 * 1024)
    view = memoryview(buf)
    with path.open("rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()
