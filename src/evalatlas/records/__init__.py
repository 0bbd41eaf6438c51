"""The record contract: experiment, episode and measurement records, ids, EvalLog I/O."""

from evalatlas.records.evallog import EvalLog
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
