"""Turn pydantic validation failures into located :class:`~evalatlas.errors.InputError`."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError

from evalatlas.errors import InputError, UnsafeIdError
from evalatlas.records.models import EpisodeRecord, Record
from evalatlas.records.strict import checked_episode, rows_wanted, strict_episode

R = TypeVar("R", bound=Record)


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) if loc else ""


def format_validation_error(exc: ValidationError) -> tuple[str | None, str]:
    """(first offending field, a reason listing every error) for a ValidationError."""
    errors = exc.errors(include_url=False)
    if not errors:
        return None, str(exc)
    parts = []
    for err in errors[:5]:
        loc = _loc(err.get("loc", ()))
        msg = err.get("msg", "invalid")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field (not part of the record contract)"
        elif err.get("type") == "missing":
            msg = "required field is missing"
        parts.append(f"{loc}: {msg}" if loc else msg)
    if len(errors) > 5:
        parts.append(f"... and {len(errors) - 5} more")
    first = _loc(errors[0].get("loc", ())) or None
    return first, "; ".join(parts)


def parse_record(
    model: type[R],
    data: Any,
    *,
    file: str | None = None,
    line: int | None = None,
    record: str | None = None,
) -> R:
    """Validate ``data`` as ``model``; on failure raise InputError naming file/line/field.

    An episode in the contract's strict form is built without pydantic's validation
    (:func:`~evalatlas.records.strict.strict_episode`); inside
    :func:`~evalatlas.records.strict.handing_over_rows` (an ingest reading an adapter
    that hands over rows) it is returned as its checked fields, a
    :data:`~evalatlas.records.strict.CheckedEpisode`, for the store to flatten."""
    if not isinstance(data, dict):
        raise InputError.at(
            file,
            f"expected a JSON object for {model.__name__}, got {type(data).__name__}",
            line=line,
            record=record,
        )
    if model is EpisodeRecord:  # data already in strict form: built without validation
        if rows_wanted():  # the ingest takes the checked fields as they are
            checked = checked_episode(data)
            if checked is not None:
                return checked  # type: ignore[no-any-return]  # a CheckedEpisode: see handing_over_rows
        else:
            built = strict_episode(data)
            if built is not None:
                return built  # type: ignore[return-value]  # R is EpisodeRecord here (mypy does not narrow a TypeVar by `is`)
    if record is None:
        rid = data.get("trajectory_id") or data.get("experiment_id") or data.get("evaluation_id")
        record = rid if isinstance(rid, str) else None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, reason = format_validation_error(exc)
        raise InputError.at(file, reason, field=field, line=line, record=record) from exc
    except (UnsafeIdError, ValueError) as exc:
        raise InputError.at(file, str(exc), line=line, record=record) from exc
