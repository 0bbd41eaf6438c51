"""One submission, from spooled file to committed rows (run by the writer thread).

A ``.duckdb`` store: :func:`ingest_submission` ingests the upload inside the
submission's transaction. A lake: the upload was staged in a worker process
(:mod:`.staging`), and :func:`commit_staged` copies the staged rows in."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalatlas.adapters.registry import plan
from evalatlas.errors import Problem
from evalatlas.records.limits import ReadLimits
from evalatlas.store import submissions as sql
from evalatlas.store.db import StoreConnection
from evalatlas.store.ingest import IngestReport, ingest_paths, range_extras
from evalatlas.store.staging import attached, copy_staged

from .spool import Spooled
from .staging import Staged


class NothingValid(Exception):
    """Raised inside the submission's transaction so that it rolls back (422)."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__("nothing valid")
        self.report = report


@dataclass
class Outcome:
    """What to answer: the status and the JSON body."""

    status: int
    body: dict[str, Any]
    episodes: int = 0
    rejected: int = 0
    result: str = "created"
    extra: dict[str, Any] = field(default_factory=dict)


def _problem(p: Problem | dict[str, Any], folder: str, name: str) -> dict[str, Any]:
    """A problem as the client sees it: file paths relative to the upload's name."""
    d = (p if isinstance(p, dict) else
         {"file": p.file, "line": p.line, "record": p.record, "field": p.field,
          "reason": p.reason})
    file = str(d.get("file") or "")
    if folder and file.startswith(folder.rstrip("/") + "/"):
        file = file[len(folder.rstrip("/")) + 1:]
    elif file.startswith("submission:") and "/" in file:
        file = file.split("/", 1)[1]
    reason = str(d.get("reason") or "")
    if folder:
        reason = reason.replace(folder.rstrip("/") + "/", "")
    return {"file": file or name, "line": d.get("line"), "record": d.get("record"),
            "field": d.get("field"), "reason": reason}


def unreadable(spooled: Spooled) -> list[dict[str, Any]] | None:
    """The problems when no adapter reads the file (answered 415), else None. Cheap:
    format detection only, run by the HTTP worker before queueing."""
    problems = []
    for step in plan([spooled.path]):
        if not isinstance(step, Problem):
            return None
        problems.append(_problem(step, str(spooled.folder), spooled.path.name))
    return problems or [{"file": spooled.path.name, "line": None, "record": None,
                         "field": None, "reason": "no reader recognises this file"}]


def ingest_submission(store: StoreConnection, spooled: Spooled, owner: str,
                      limits: ReadLimits) -> Outcome:
    """Ingest one spooled upload as one transaction and record it as ``owner``'s.

    The same bytes from the same owner again: 200 with the first submission's id and
    nothing written. Nothing valid: 422 and nothing written. Otherwise 201."""
    name = spooled.path.name
    folder = str(spooled.folder)
    earlier = sql.find_by_content(store, owner, spooled.sha256)
    if earlier is not None:
        return duplicate(store, earlier, spooled)
    submission_id = uuid.uuid4().hex
    try:
        with store.atomic():
            report = ingest_paths(store, [spooled.path], force=True, limits=limits,
                                  atomic=True)
            if not (report.episodes or report.experiments or report.measurements):
                raise NothingValid(report)
            sql.claim_rows(store, folder, submission_id)
            row = {"submission_id": submission_id, "owner": owner, "name": name,
                   "content_sha256": spooled.sha256, "bytes": spooled.size,
                   "experiments": report.experiments, "episodes": report.episodes,
                   "measurements": report.measurements, "rejected": report.rejected}
            sql.record(store, row)
    except NothingValid as nothing:
        problems = [_problem(p, folder, name) for p in nothing.report.problems]
        return Outcome(422, {"error": "nothing valid",
                             "detail": {"rejected": nothing.report.rejected,
                                        "problems": problems}},
                       rejected=nothing.report.rejected, result="rejected")
    body = {**_counts(row), "duplicate": False,
            "problems": [_problem(p, folder, name) for p in report.problems]}
    return Outcome(201, body, episodes=report.episodes, rejected=report.rejected)


def duplicate(store: StoreConnection, earlier: dict[str, Any], spooled: Spooled) -> Outcome:
    """The answer to the same bytes from the same owner again: 200, the first
    submission's id and counts, its problems; nothing is written."""
    folder, name = str(spooled.folder), spooled.path.name
    return Outcome(200, {**_counts(earlier), "duplicate": True,
                         "problems": [_problem(q, folder, name) for q in
                                      sql.quarantine_of(store, earlier["submission_id"],
                                                        limit=50)]},
                   result="duplicate")


def look_up(store: StoreConnection, owner: str, spooled: Spooled
            ) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Before staging on a lake (reads only): the owner's earlier submission of these
    bytes, if any, and the lake's declared reward ranges (staging checks rewards
    against them). The duplicate check is repeated inside the commit's transaction,
    which alone is exact when two equal uploads are staged at once."""
    return sql.find_by_content(store, owner, spooled.sha256), range_extras(store)


def rejected(staged: Staged, spooled: Spooled) -> Outcome:
    """Nothing valid was staged: 422 with the problems; nothing is written."""
    folder, name = str(spooled.folder), spooled.path.name
    return Outcome(422, {"error": "nothing valid",
                         "detail": {"rejected": staged.rejected,
                                    "problems": [_problem(p, folder, name)
                                                 for p in staged.problems]}},
                   rejected=staged.rejected, result="rejected")


class _Duplicate(Exception):
    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__("duplicate")
        self.row = row


def commit_staged(store: StoreConnection, staged: Staged, spooled: Spooled, owner: str
                  ) -> Outcome:
    """Copy a staged submission (:mod:`.staging`) into the lake and record it, in one
    transaction (the commit lock held from its BEGIN to its COMMIT): all of its rows or,
    after an error or a kill, none. The same bytes committed meanwhile by the same
    owner (two equal uploads staged at once): 200 with that submission, nothing
    written. Run by the writer thread."""
    row = {"submission_id": staged.submission_id, "owner": owner, "name": spooled.path.name,
           "content_sha256": spooled.sha256, "bytes": spooled.size,
           "experiments": staged.experiments, "episodes": staged.episodes,
           "measurements": staged.measurements, "rejected": staged.rejected}
    with attached(store, Path(staged.stage)) as alias:
        try:
            with store.atomic():
                earlier = sql.find_by_content(store, owner, spooled.sha256)
                if earlier is not None:
                    raise _Duplicate(earlier)
                copy_staged(store, alias)
                sql.record(store, row)
        except _Duplicate as dup:
            return duplicate(store, dup.row, spooled)
    folder, name = str(spooled.folder), spooled.path.name
    body = {**_counts(row), "duplicate": False,
            "problems": [_problem(p, folder, name) for p in staged.problems]}
    return Outcome(201, body, episodes=staged.episodes, rejected=staged.rejected)


def _counts(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("submission_id", "name", "experiments", "episodes",
                                "measurements", "rejected")}


def public_row(row: dict[str, Any]) -> dict[str, Any]:
    """A submission row for its owner (JSON-ready)."""
    out = {k: row[k] for k in sql.COLUMNS if k != "content_sha256"}
    out["content_sha256"] = row["content_sha256"]
    out["created_at"] = row["created_at"].isoformat() if row.get("created_at") else None
    return out


def quarantine_rows(store: StoreConnection, submission_id: str) -> list[dict[str, Any]]:
    return [_problem(q, "", "") for q in sql.quarantine_of(store, submission_id)]
