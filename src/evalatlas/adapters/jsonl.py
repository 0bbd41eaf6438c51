"""Flat JSONL of records: the seed's ATLAS submission file (one EpisodeRecord per line).

evalatlas also accepts experiment records and measurements in the same file (told apart
by their keys), so a single JSONL can carry a whole store export. Each bad line becomes
a :class:`Problem` naming the file, the line and the field; the other lines are read.
"""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Container, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.jsonl_stream import (
    COMPRESSED_SUFFIXES,
    DEFAULT_CHUNK_BYTES,
    STDIN,
    Chunk,
    StreamError,
    display_name,
    head_of,
    iter_chunks,
    iter_plain_chunks,
    open_stream,
)
from evalatlas.errors import InputError, Problem
from evalatlas.records import limits
from evalatlas.records.jsonio import parse_jsonl_line
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement
from evalatlas.records.validate import parse_record

if TYPE_CHECKING:
    import hashlib

SUFFIXES = tuple(s + c for s in (".jsonl", ".ndjson") for c in ("", *COMPRESSED_SUFFIXES))


_MARKERS = ("trajectory_id", "experiment_id", "evaluation_id", "experiment_name")


def _detect(path: Path) -> bool:
    """A ``.jsonl`` whose first record carries one of our id keys, or cannot be parsed.

    Other harnesses' JSONL (lm-eval samples, EEE instance files) are not ours and are
    left alone; a broken or empty file is claimed so its problems get reported.
    """
    if not path.name.endswith(SUFFIXES) or path.is_dir():
        return False
    head = head_of(path, 64 * 1024) if path.name.endswith(COMPRESSED_SUFFIXES) else \
        head_bytes(path, 64 * 1024)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    # Every Eval Ever instance files are JSONL too; they are not EvalLog records.
    if b'"interaction_type"' in head and b'"schema_version"' in head:
        return False
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    try:
        data = json.loads(first)
    except ValueError:
        return True  # unparseable (or cut by the sniff window): let the reader report it
    return not isinstance(data, dict) or any(k in data for k in _MARKERS)


def record_kind(data: Container[str]
                ) -> type[EpisodeRecord] | type[ExperimentRecord] | type[Measurement]:
    """Which record a JSON object is, from its keys (the object, or the set of them)."""
    if "agent" in data and ("experiment_name" in data or "benchmark_subset" in data):
        return ExperimentRecord
    if "benchmark" in data and "task_id" not in data and "sample_id" not in data:
        return Measurement
    return EpisodeRecord


def parse_chunk(
    chunk: Chunk, source: str, seen: dict[tuple[str, str], int], max_depth: int
) -> Iterator[tuple[int, Item]]:
    """(line, record or problem) for every line of ``chunk``: the exact path.

    ``seen`` maps (experiment_id, trajectory_id) to the first line that used it in this
    file; a later line with the same key is a problem naming that first line.
    """
    for lineno, raw in chunk.lines():
        size = chunk.oversized.get(lineno)
        if size is not None:
            yield lineno, Problem(source, f"line is {size:,} bytes, over the "
                                  f"{limits.current().max_line_bytes:,}-byte limit for one "
                                  f"record ({limits.current().raise_hint('max_line_bytes')})",
                                  line=lineno)
            continue
        if not raw.strip():
            yield lineno, Problem(source, "empty line (0-byte record)", line=lineno)
            continue
        data = parse_jsonl_line(raw, source, lineno, max_depth)
        if isinstance(data, Problem):
            yield lineno, data
            continue
        if not isinstance(data, dict):
            yield lineno, Problem(source, f"expected a JSON object, got {type(data).__name__}",
                                  line=lineno)
            continue
        try:
            rec = parse_record(record_kind(data), data, file=source, line=lineno)
        except InputError as exc:
            yield lineno, exc.problem
            continue
        if isinstance(rec, EpisodeRecord):
            key = (rec.experiment_id, rec.trajectory_id)
            first = seen.get(key)
            if first is not None:
                yield lineno, duplicate_problem(source, lineno, first, rec.trajectory_id)
                continue
            seen[key] = lineno
        yield lineno, rec


def duplicate_problem(source: str, line: int, first: int, trajectory_id: str) -> Problem:
    return Problem(source, f"duplicate trajectory_id within this file (first at line {first}); "
                   "this line was not ingested", field="trajectory_id", line=line,
                   record=trajectory_id)


def iter_file_chunks(path: Path | str, source: str, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                     hasher: hashlib._Hash | None = None) -> Iterator[Chunk | Problem]:
    """The chunks of a JSONL input (file, compressed file or ``-``), or the problem that
    stops it (unreadable, over the file-size limit, empty)."""
    lim = limits.current()
    if str(path) != STDIN:
        p = Path(path)
        if p.is_dir():
            yield Problem(source, "is a directory, expected a JSONL file")
            return
        try:
            size = p.stat().st_size
        except OSError as exc:
            yield Problem(source, f"cannot read: {exc.strerror or exc}")
            return
        if size > lim.max_file_bytes:
            yield Problem(source, f"file is {size:,} bytes, over the {lim.max_file_bytes:,}-byte "
                          "limit (raise it with --max-file-bytes)")
            return
    try:
        fh = open_stream(path)
    except (OSError, StreamError) as exc:
        yield Problem(source, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
        return
    any_line = False
    with fh:
        try:
            plain = (str(path) != STDIN and isinstance(fh, io.BufferedReader)
                     and stat.S_ISREG(os.fstat(fh.fileno()).st_mode))
            chunks = (iter_plain_chunks(fh, max_line_bytes=lim.max_line_bytes,
                                        chunk_bytes=chunk_bytes, hasher=hasher)
                      if plain else
                      iter_chunks(fh, max_line_bytes=lim.max_line_bytes,
                                  chunk_bytes=chunk_bytes, max_total_bytes=lim.max_file_bytes,
                                  hasher=hasher))
            for chunk in chunks:
                any_line = True
                yield chunk
        except StreamError as exc:
            yield Problem(source, str(exc))
            return
        except (OSError, EOFError, ValueError) as exc:  # corrupt gzip/zstd, read errors
            yield Problem(source, f"cannot read (stopped here): {exc}")
            return
    if not any_line:
        yield Problem(source, "empty file")


def read_jsonl(path: Path) -> Iterator[Item]:
    source = display_name(path)
    seen: dict[tuple[str, str], int] = {}
    depth = limits.current().max_json_depth
    for chunk in iter_file_chunks(path, source):
        if isinstance(chunk, Problem):
            yield chunk
            continue
        for _, item in parse_chunk(chunk, source, seen, depth):
            yield item


ADAPTER = Adapter(
    name="jsonl",
    kind="file",
    detect=_detect,
    read=read_jsonl,
    priority=20,
    description="JSONL of EpisodeRecords (seed 002 submission), optionally with "
    "experiment records and measurements; also .jsonl.gz / .jsonl.zst and `-` (stdin)",
)
