"""One exception family for evalatlas.

Every error that comes from bad input carries *where* it happened (file, line or
record) and *what* was wrong (field, reason), because users feed evalatlas logs from
many harnesses and need to find the offending record without a debugger.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class EvalAtlasError(Exception):
    """Base class of every error evalatlas raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """A located complaint about one piece of input.

    ``line`` is 1-based for line-oriented files (JSONL), ``record`` names a record
    inside a file (a trajectory id, a task id) where lines do not apply.
    """

    file: str | None
    reason: str
    field: str | None = None
    line: int | None = None
    record: str | None = None

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.record is not None:
            where += f" [record {self.record}]"
        if self.field:
            where += f" field {self.field!r}"
        return f"{where}: {self.reason}"


class InputError(EvalAtlasError):
    """Input that cannot be turned into records; carries a :class:`Problem`."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem

    @classmethod
    def at(
        cls,
        file: str | Path | None,
        reason: str,
        *,
        field: str | None = None,
        line: int | None = None,
        record: str | None = None,
    ) -> InputError:
        return cls(
            Problem(
                file=str(file) if file is not None else None,
                reason=reason,
                field=field,
                line=line,
                record=record,
            )
        )


class UnsafeIdError(EvalAtlasError, ValueError):
    """An identifier that could escape the directory it names."""


class StoreError(EvalAtlasError):
    """The store cannot be opened or written."""


class ArgumentError(EvalAtlasError, ValueError):
    """An argument of the public API (or a CLI option behind it) that cannot be used.

    Also a ``ValueError``, as scikit-learn's ``InvalidParameterError`` is, so callers
    that already catch ``ValueError`` keep working. Messages name the argument in API
    words (``by``, ``experiment``), never a CLI flag, and say what would be accepted.
    """


class OutputError(EvalAtlasError, OSError):
    """A file or folder evalatlas was asked to write cannot be written; the message is one
    line naming the path and the reason (see :mod:`evalatlas.safe_write`). Also an
    ``OSError``, so callers that already catch that keep working."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` so the same clean-up runs
    (transactions rolled back, temporary files removed); the CLI exits with 143."""
