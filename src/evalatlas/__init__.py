"""evalatlas: trustworthy, comparable numbers from AI-agent evaluation runs."""

from evalatlas.errors import EvalAtlasError, InputError, Problem
from evalatlas.records import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    EvalLog,
    ExperimentRecord,
    Measurement,
    UsageSummary,
)

__version__ = "0.1.0"

__all__ = [
    "AgentInfo",
    "BenchmarkSubset",
    "EpisodeRecord",
    "EvalAtlasError",
    "EvalLog",
    "ExperimentRecord",
    "InputError",
    "Measurement",
    "Problem",
    "UsageSummary",
    "__version__",
]
