"""The record contract: experiment, episode and measurement records, ids, EvalLog I/O.

:class:`EvalLog` is imported on first use (module ``__getattr__``): every ``import
evalatlas.records.<module>`` runs this file, and an ingest needs no EvalLog.
"""

from typing import TYPE_CHECKING

from evalatlas.lazy_names import lazy_attributes
from evalatlas.records.ids import (
    agent_id_for,
    check_safe_id,
    experiment_id_for,
    redact_secrets,
    task_version_hash_for,
)
from evalatlas.records.models import (
    RECORD_MODELS,
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    EpisodeStatus,
    ExperimentRecord,
    Findings,
    InvestigatorLLMConfig,
    Measurement,
    UsageSummary,
    Verifier,
)
from evalatlas.records.redact import REDACTED, redact, redact_text

if TYPE_CHECKING:
    from evalatlas.records.evallog import EvalLog


__getattr__, __dir__ = lazy_attributes(globals(), {"EvalLog": "evalatlas.records.evallog"})

__all__ = [
    "RECORD_MODELS",
    "REDACTED",
    "AgentInfo",
    "BenchmarkSubset",
    "EpisodeRecord",
    "EpisodeStatus",
    "EvalLog",
    "ExperimentRecord",
    "Findings",
    "InvestigatorLLMConfig",
    "Measurement",
    "UsageSummary",
    "Verifier",
    "agent_id_for",
    "check_safe_id",
    "experiment_id_for",
    "redact",
    "redact_secrets",
    "redact_text",
    "task_version_hash_for",
]
