"""Flat JSONL of records: the seed's ATLAS submission file (one EpisodeRecord per line).

evalatlas also accepts experiment records and measurements in the same file (told apart
by their keys), so a single JSONL can carry a whole store export. Each bad line becomes
a :class:`Problem` naming the file, the line and the field; the other lines are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.errors import InputError, Problem
from evalatlas.records.jsonio import parse_jsonl_line
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement
from evalatlas.records.validate import parse_record

MAX_LINE_BYTES = 16 * 1024 * 1024
"""Longer lines are rejected (a record this large is almost surely not a record)."""

SUFFIXES = (".jsonl", ".ndjson")


_MARKERS = ("trajectory_id", "experiment_id", "evaluation_id", "experiment_name")


def _detect(path: Path) -> bool:
    """A ``.jsonl`` whose first record carries one of our id keys, or cannot be parsed.

    Other harnesses' JSONL (lm-eval samples, EEE instance files) are not ours and are
    left alone; a broken or empty file is claimed so its problems get reported.
    """
    if not path.name.endswith(SUFFIXES) or path.is_dir():
        return False
    head = head_bytes(path, 64 * 1024)
    # Every Eval Ever instance files are JSONL too; they are not EvalLog records.
    if b'"interaction_type"' in head and b'"schema_version"' in head:
        return False
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    try:
        data = json.loads(first)
    except ValueError:
        return True  # unparseable (or cut by the sniff window): let the reader report it
    return not isinstance(data, dict) or any(k in data for k in _MARKERS)


def record_kind(data: dict) -> type[EpisodeRecord] | type[ExperimentRecord] | type[Measurement]:
    """Which record a JSON object is, from its keys."""
    if "agent" in data and ("experiment_name" in data or "benchmark_subset" in data):
        return ExperimentRecord
    if "benchmark" in data and "task_id" not in data and "sample_id" not in data:
        return Measurement
    return EpisodeRecord


def read_jsonl(path: Path) -> Iterator[Item]:
    if path.is_dir():
        yield Problem(str(path), "is a directory, expected a JSONL file")
        return
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield Problem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    seen: dict[tuple[str, str], int] = {}
    any_line = False
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            any_line = True
            if len(raw) > MAX_LINE_BYTES:
                yield Problem(str(path), f"line is {len(raw):,} bytes, over the "
                              f"{MAX_LINE_BYTES:,}-byte limit for one record", line=lineno)
                continue
            if not raw.strip():
                yield Problem(str(path), "empty line (0-byte record)", line=lineno)
                continue
            data = parse_jsonl_line(raw, path, lineno)
            if isinstance(data, Problem):
                yield data
                continue
            if not isinstance(data, dict):
                yield Problem(str(path), f"expected a JSON object, got {type(data).__name__}",
                              line=lineno)
                continue
            try:
                rec = parse_record(record_kind(data), data, file=str(path), line=lineno)
            except InputError as exc:
                yield exc.problem
                continue
            if isinstance(rec, EpisodeRecord):
                key = (rec.experiment_id, rec.trajectory_id)
                first = seen.get(key)
                if first is not None:
                    yield Problem(str(path), f"duplicate trajectory_id within this file (first "
                                  f"at line {first}); this line was not ingested",
                                  field="trajectory_id", line=lineno, record=rec.trajectory_id)
                    continue
                seen[key] = lineno
            yield rec
    if not any_line:
        yield Problem(str(path), "empty file")


ADAPTER = Adapter(
    name="jsonl",
    kind="file",
    detect=_detect,
    read=read_jsonl,
    priority=20,
    description="JSONL of EpisodeRecords (seed 002 submission), optionally with "
    "experiment records and measurements",
)
