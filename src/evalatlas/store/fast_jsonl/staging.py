"""Where the fast path keeps a chunk between reading and committing it.

- chunk files: each chunk is written to a temporary folder of this process
  (``evalatlas-chunk-<pid>-...``) for DuckDB's ``read_json`` and deleted once read; a
  killed ingest cannot clean up, so the next one removes folders whose process is gone
  (:func:`remove_stale_chunk_dirs`);
- staged rows: each chunk's checked rows are an Arrow table in this process
  (:attr:`~evalatlas.store.fast_jsonl.state.Prepared.rows`), registered on the
  committing connection while its group is written, gone with the process (a killed
  ingest leaves nothing behind in the store file);
- the shape pass runs on a private DuckDB instance (:func:`scratch_instance`), which
  deep input can invalidate without harming the store's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

import duckdb

from evalatlas.safe_write import process_alive

CHUNK_DIR = "evalatlas-chunk-"
"""Prefix of the temporary directory holding the chunk files DuckDB reads, followed by
the ingesting process's id."""

_swept: list[str] = []
"""The stale chunk directories this process removed (see :func:`remove_stale_chunk_dirs`)."""


def chunk_dir() -> str:
    """A new chunk folder of this process; stale ones of killed ingests are removed first
    (once per process). An OSError ($TMPDIR full) leaves nothing to undo."""
    if not _swept:  # once per process: other ingests' leftovers only
        _swept.extend(remove_stale_chunk_dirs())
    return tempfile.mkdtemp(prefix=f"{CHUNK_DIR}{os.getpid()}-")


def remove_stale_chunk_dirs(root: str | None = None) -> list[str]:
    """Delete the chunk directories of ingests that were killed (their process is gone),
    and return them: a killed ingest cannot clean up after itself, and each left up to
    :data:`~evalatlas.store.fast_jsonl.pipeline.IN_FLIGHT` chunk files behind. A
    directory whose process id is alive (maybe reused) is kept; so is everything on
    Windows, where ``os.kill(pid, 0)`` is not a harmless probe."""
    root = root or tempfile.gettempdir()
    removed: list[str] = []
    if os.name == "nt":
        return removed
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            pid, _, rest = entry.name.removeprefix(CHUNK_DIR).partition("-")
            if (not entry.name.startswith(CHUNK_DIR) or not pid.isdigit() or not rest
                    or not entry.is_dir(follow_symlinks=False) or process_alive(int(pid))):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def scratch_instance() -> duckdb.DuckDBPyConnection:
    """A private DuckDB instance for the shape pass (deep input can invalidate an
    instance; it must not be the store's)."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false; SET preserve_insertion_order = false; "
                "SET memory_limit = '256MB'")
    return con
