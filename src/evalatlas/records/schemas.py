"""JSON Schemas of the records, as published under ``schemas/``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalatlas.records.evallog import EvalLog
from evalatlas.records.models import RECORD_MODELS


def all_schemas() -> dict[str, dict[str, Any]]:
    """Record name -> JSON Schema (validation mode: what evalatlas accepts)."""
    models: dict[str, type[BaseModel]] = {**RECORD_MODELS, "EvalLog": EvalLog}
    return {name: model.model_json_schema() for name, model in models.items()}


def record_schemas() -> dict[str, dict[str, Any]]:
    """Record name (``ExperimentRecord``, ``EpisodeRecord``, ``Measurement``, ...,
    ``EvalLog``) -> its JSON Schema (validation mode: what evalatlas accepts); the files
    ``evalatlas schema --write DIR`` writes."""
    return all_schemas()
