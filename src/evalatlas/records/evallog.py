"""EvalLog: the two-level container and its on-disk layout (seed 002).

::

    <output_dir>/experiment_record.json
    <output_dir>/episodes/<trajectory_id>/episode_record.json
    <output_dir>/episodes/<trajectory_id>/measurements.jsonl     (evalatlas extension)

Differences from cube-harness, on purpose:

- ``load`` skips retried-attempt directories ``<id>.archived_<ts>`` (upstream quirk 1
  double-counted retries);
- writes are atomic (temporary file + rename);
- a bad episode file does not stop a load: it is recorded in ``problems`` with its path
  and reason, unless ``strict=True``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import Field, PrivateAttr, model_validator

from evalatlas.errors import EvalAtlasError, InputError, Problem
from evalatlas.records.ids import ARCHIVED_MARKER, check_safe_id
from evalatlas.records.jsonio import (
    ABSENT,
    atomic_write_text,
    decode_document,
    dumps,
    parse_jsonl_line,
    read_document_bytes,
    read_json_file,
    read_json_file_if_present,
)
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement, Record
from evalatlas.records.redact import redact
from evalatlas.records.strict import checked_episode_json, rows_wanted
from evalatlas.records.validate import parse_record

EXPERIMENT_FILE = "experiment_record.json"
EPISODE_FILE = "episode_record.json"
MEASUREMENTS_FILE = "measurements.jsonl"
EPISODES_DIR = "episodes"


def record_json(record: Record, *, indent: int | None = None) -> str:
    """The canonical JSON text of a record (seed field names, no NaN), redacted: every
    record evalatlas writes (EvalLog dirs, ``export jsonl``) passes through here."""
    return dumps(redact(record.model_dump(mode="json")), indent=indent)


class EvalLog(Record):
    """One experiment record plus its episode records (and measurements)."""

    experiment: ExperimentRecord
    episodes: list[EpisodeRecord] = Field(default_factory=list)
    measurements: list[Measurement] = Field(default_factory=list)

    _problems: list[Problem] = PrivateAttr(default_factory=list)

    @property
    def problems(self) -> list[Problem]:
        """Files skipped by the last :meth:`load`, with their reasons."""
        return self._problems

    @model_validator(mode="after")
    def _same_experiment(self) -> EvalLog:
        eid = self.experiment.experiment_id
        for ep in self.episodes:
            if ep.experiment_id != eid:
                raise ValueError(
                    f"episode {ep.trajectory_id!r} has experiment_id {ep.experiment_id!r}, "
                    f"expected {eid!r} (seed 002 invariant 4)"
                )
        seen: set[str] = set()
        for ep in self.episodes:
            if ep.trajectory_id in seen:
                raise ValueError(f"duplicate trajectory_id {ep.trajectory_id!r}")
            seen.add(ep.trajectory_id)
        return self

    def save(self, output_dir: Path | str) -> None:
        """Write the experiment record and one episode record per trajectory, atomically."""
        root = Path(output_dir)
        atomic_write_text(root / EXPERIMENT_FILE, record_json(self.experiment, indent=2))
        by_traj: dict[str, list[Measurement]] = {}
        for m in self.measurements:
            by_traj.setdefault(m.trajectory_id, []).append(m)
        for ep in self.episodes:
            ep_dir = root / EPISODES_DIR / check_safe_id(ep.trajectory_id)
            atomic_write_text(ep_dir / EPISODE_FILE, record_json(ep, indent=2))
            ms = by_traj.pop(ep.trajectory_id, [])
            if ms:
                text = "".join(record_json(m) + "\n" for m in ms)
                atomic_write_text(ep_dir / MEASUREMENTS_FILE, text)
        if by_traj:
            missing = ", ".join(sorted(by_traj))
            raise EvalAtlasError(f"measurements refer to unknown trajectories: {missing}")

    @classmethod
    def load(cls, output_dir: Path | str, *, strict: bool = False) -> EvalLog:
        """Read an EvalLog directory. Bad episode files go to ``problems`` unless strict."""
        root = Path(output_dir)
        experiment = parse_record(ExperimentRecord, read_json_file(root / EXPERIMENT_FILE),
                                  file=str(root / EXPERIMENT_FILE))
        episodes: list[EpisodeRecord] = []
        measurements: list[Measurement] = []
        problems: list[Problem] = []
        for item in iter_episode_dir(root, experiment.experiment_id):
            if isinstance(item, Problem):
                if strict:
                    raise InputError(item)
                problems.append(item)
            elif isinstance(item, EpisodeRecord):
                episodes.append(item)
            else:
                measurements.append(item)
        log = cls(experiment=experiment, episodes=episodes, measurements=measurements)
        log._problems = problems
        return log

    def to_jsonl(self, path: Path | str) -> None:
        """Write one self-contained EpisodeRecord per line (seed 002 invariant 5)."""
        text = "".join(record_json(ep) + "\n" for ep in self.episodes)
        atomic_write_text(Path(path), text)


def _episode_dir_names(root: Path) -> list[str]:
    """Names of the episode directories under ``root/episodes``, sorted, without
    retried-attempt archives: one directory listing (the entries' types come with it),
    no ``stat`` or Path object per entry."""
    try:
        listing = os.scandir(os.path.join(root, EPISODES_DIR))
    except (FileNotFoundError, NotADirectoryError):
        return []
    with listing:
        return sorted(e.name for e in listing if ARCHIVED_MARKER not in e.name and e.is_dir())


def episode_dirs(root: Path) -> list[Path]:
    """Episode directories in sorted order, without retried-attempt archives."""
    ep_root = Path(root) / EPISODES_DIR
    return [ep_root / name for name in _episode_dir_names(root)]


def iter_episode_dir(
    root: Path,
    experiment_id: str,
    fallback: Callable[[Path, str], EpisodeRecord | None] | None = None,
) -> Iterator[EpisodeRecord | Measurement | Problem]:
    """Stream the episodes (and their measurements) of one EvalLog directory.

    Yields a :class:`Problem` for each file that cannot be read, so a caller can report
    and continue. Episodes whose ``experiment_id`` differs from the experiment's are
    problems too (invariant 4), as are repeated trajectory ids. ``fallback(ep_dir,
    experiment_id)`` builds the record of a directory without ``episode_record.json``
    (e.g. from cube-harness trajectory metadata); it may raise :class:`InputError` or
    return None to skip the directory.

    Per directory: one open and read of its record (absent: the fallback) and one
    ``stat`` for measurements, with plain string paths (10,000 directories spent more
    in pathlib and repeated ``stat`` calls than in reading the files).
    """
    seen: set[str] = set()
    rows = rows_wanted()
    ep_root = os.path.join(root, EPISODES_DIR)
    for name in _episode_dir_names(root):  # names from a listing: no separator in them
        ep_dir = f"{ep_root}{os.sep}{name}"
        path = f"{ep_dir}{os.sep}{EPISODE_FILE}"
        ep: EpisodeRecord | None
        where = path
        try:
            if rows:  # the ingest takes the checked fields: decoded straight into them
                raw = read_document_bytes(path, missing_ok=True)
                checked = None if raw is ABSENT else checked_episode_json(raw)
                data = raw if raw is ABSENT or checked is not None else decode_document(
                    path, raw)
            else:
                checked, data = None, read_json_file_if_present(path)
            if checked is not None:
                ep = checked
            elif data is not ABSENT:
                ep = parse_record(EpisodeRecord, data, file=path)
            elif fallback is not None:
                where = ep_dir
                ep = fallback(Path(ep_dir), experiment_id)
                if ep is None:
                    continue
            else:
                continue  # a trajectory directory without an exported record
        except InputError as exc:
            yield exc.problem
            continue
        if ep.experiment_id != experiment_id:
            yield Problem(where, f"experiment_id {ep.experiment_id!r} does not match the "
                          f"experiment record's {experiment_id!r} (seed 002 invariant 4)",
                          field="experiment_id", record=ep.trajectory_id)
            continue
        if ep.trajectory_id in seen:
            yield Problem(where, "duplicate trajectory_id", field="trajectory_id",
                          record=ep.trajectory_id)
            continue
        seen.add(ep.trajectory_id)
        yield ep
        mpath = f"{ep_dir}{os.sep}{MEASUREMENTS_FILE}"
        if os.path.exists(mpath):
            for item in iter_jsonl_records(Path(mpath), Measurement):
                if isinstance(item, Measurement) and item.experiment_id != experiment_id:
                    yield Problem(mpath, "measurement experiment_id does not match the "
                                  "experiment record's", field="experiment_id",
                                  record=item.benchmark)
                else:
                    yield item


def iter_jsonl_records(
    path: Path, model: type[EpisodeRecord] | type[Measurement]
) -> Iterator[EpisodeRecord | Measurement | Problem]:
    """Stream a JSONL file of one record type, one Problem per bad line."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            data = parse_jsonl_line(raw, path, lineno)
            if isinstance(data, Problem):
                yield data
                continue
            try:
                yield parse_record(model, data, file=str(path), line=lineno)
            except InputError as exc:
                yield exc.problem
