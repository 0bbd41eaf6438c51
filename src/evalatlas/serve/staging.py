"""On a lake, submissions are staged in worker processes, in parallel, outside the lock.

Why: a lake's write transaction holds its commit lock (:mod:`evalatlas.store.lake`)
from BEGIN to COMMIT, and the server's DuckDB instance runs one query at a time on a
lake (duckdb-postgres #577). Ingesting an upload inside the submission's transaction
(decompressing, reading, validating, flattening, pricing, redacting: nearly all of its
cost) made the server one writer, and every other writer of the lake wait for it.

So a lake-backed server stages: a worker process (``--workers N`` of them, spawned, each
with its own DuckDB instance that never attaches the lake) ingests the spooled upload
into a private file store in the submission's spool folder and renames its rows'
sources to the submission's (:func:`stage_upload`). The server's writer thread then
copies the staged rows into the lake in one short transaction under the commit lock
(:func:`evalatlas.store.staging.copy_staged`). N uploads are parsed at once, on up to N
cores (processes, not threads: parsing and validating is Python holding the GIL).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalatlas.records.limits import ReadLimits

STAGE_NAME = ".stage.duckdb"
"""The stage's file name inside the submission's spool folder (a leading dot: no
upload can be named so, :func:`evalatlas.serve.spool.safe_name`)."""


class StagingFailed(Exception):
    """Staging met an unexpected error (its type and message, as text: an exception
    object of another type might not survive the trip back from the worker)."""


@dataclass
class Staged:
    """What staging one upload found: counts, example problems, and when and where it
    ran (``started``/``ended``: Unix seconds; ``pid``: the worker process), for the
    access log."""

    stage: str
    submission_id: str
    experiments: int = 0
    episodes: int = 0
    measurements: int = 0
    rejected: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    pid: int = 0
    commit_s: float | None = None
    """Seconds the server's writer spent committing it (the lake transaction, its lock
    wait included); None when nothing was committed."""

    @property
    def valid(self) -> bool:
        """Whether anything valid was staged (else: 422, nothing to commit)."""
        return bool(self.episodes or self.experiments or self.measurements)

    def event(self) -> dict[str, Any]:
        """The access log's ``stage`` field."""
        return {"pid": self.pid, "started": round(self.started, 6),
                "ended": round(self.ended, 6),
                "commit_s": None if self.commit_s is None else round(self.commit_s, 4)}


def stage_upload(upload: str, folder: str, submission_id: str, limits: ReadLimits,
                 stored_extras: dict[str, str]) -> Staged:
    """Ingest ``upload`` into a new file store ``folder/.stage.duckdb`` exactly as a
    submission is ingested (every record validated, redacted, priced; bad ones
    quarantined), then give its rows the submission's source (``submission:<id>/``).
    Run in a worker process. ``stored_extras``: the lake's experiments' declared reward
    ranges (:func:`evalatlas.store.ingest.range_extras`)."""
    from evalatlas.store import submissions as sql
    from evalatlas.store.db import StoreConnection
    from evalatlas.store.ingest import ingest_paths

    started = time.time()
    stage = Path(folder) / STAGE_NAME
    try:
        with StoreConnection(stage) as store:
            report = ingest_paths(store, [upload], force=True, limits=limits, atomic=True,
                                  stored_extras=stored_extras)
            with store.atomic():
                sql.claim_rows(store, folder, submission_id)
    except Exception as exc:  # crosses a process boundary: one picklable type
        raise StagingFailed(f"{type(exc).__name__}: {exc}") from None
    return Staged(stage=str(stage), submission_id=submission_id,
                  experiments=report.experiments, episodes=report.episodes,
                  measurements=report.measurements, rejected=report.rejected,
                  problems=report.rows, started=started, ended=time.time(),
                  pid=os.getpid())


def _worker_start(parent: int) -> None:
    """In each worker: signals are the server's to handle (Ctrl-C reaches the whole
    process group; the server drains, then ends its workers), and a worker whose server
    died (SIGKILL) exits instead of idling for ever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="evalatlas-stager-watch", daemon=True).start()


class Stager:
    """``workers`` staging processes, all started by :meth:`start` (when the server
    starts: the first submissions do not wait for a process to start, and N at once
    are parsed by N processes)."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, int(workers))
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the worker processes (spawned: the server has threads and a DuckDB
        instance, which a fork would copy mid-use). The executor starts a process for
        each task submitted while none is idle, so one trivial task per worker starts
        them all now, in parallel."""
        with self._lock:
            if self._pool is not None:
                return
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_start, initargs=(os.getpid(),))
            for _ in range(self.workers):
                self._pool.submit(os.getpid)

    def submit(self, fn: Callable[..., Staged], *args: Any) -> Future[Staged]:
        """Stage in a worker. A pool broken by a worker that died (killed, out of
        memory) is replaced: that one submission fails, not every later one."""
        self.start()
        with self._lock:
            assert self._pool is not None
            try:
                return self._pool.submit(fn, *args)
            except BrokenProcessPool:
                broken, self._pool = self._pool, None
        broken.shutdown(wait=False, cancel_futures=True)
        self.start()
        with self._lock:
            assert self._pool is not None
            return self._pool.submit(fn, *args)

    def stop(self) -> None:
        """End the workers (after the work they have)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.shutdown(wait=True, cancel_futures=True)


__all__ = ["STAGE_NAME", "Staged", "Stager", "StagingFailed", "stage_upload"]
