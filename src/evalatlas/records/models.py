"""The record contract: pydantic v2 models for seed 002, extended for the other seeds.

Field names, types and meanings follow seed 002 (cube-harness EvalLog, the RFC names).
Reading also accepts the later EEE-aligned names (see :mod:`evalatlas.records.aliases`).

Deliberate differences from the seed, each because a missing value must stay missing:

- ``reward`` is a required key whose value may be ``null`` when the outcome is unknown
  (performance measurements without test results); ``success`` is then ``null`` too.
  Summaries count such episodes apart instead of as failures;
- token counts, cost, step counts and ``timestamp`` are ``None`` when the harness did not
  report them, where the seed defaults to ``0``: a zero would make an unknown cost look
  free and an unknown step count look like an empty trajectory;
- ``UsageSummary.cost_source`` says whether a cost was reported by the harness or
  computed by evalatlas from token counts and a price table.

Extensions that let one contract carry all four seeds (no second record type):

- ``ExperimentRecord.labels``: free-form grouping labels (tier, subtest, scenario, mode,
  framework...); ``ExperimentRecord.extra``: attachments such as code-quality results;
- ``EpisodeRecord.attempt`` (0-based repeat index), ``status``, ``scores`` (named scores:
  judge criteria, impl_rate...), ``input_text`` / ``output_text`` / ``expected_text``,
  ``retrieved_sources`` / ``expected_sources``, ``judge_usage`` (judge tokens and cost,
  kept apart from the agent's), ``error_message``, ``extra``;
- :class:`Measurement`: one row per performance benchmark, linked to its episode.

Unknown fields are rejected rather than dropped, so a typo such as ``wall_time`` for
``wall_time_s`` is reported instead of silently becoming a missing value.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from evalatlas.records import aliases, names
from evalatlas.records.ids import agent_id_for, check_safe_id, redact_secrets

EpisodeStatus = Literal[
    "completed", "error", "timeout", "max_steps", "cancelled", "incomplete", "skipped"
]
"""Why an episode ended. ``completed`` includes clean failures (reward 0, no error)."""

FORMAT_VERSION = 1
"""Version of the record contract written into every record (``format_version``) and every
stored row and export (JSONL field, Parquet column). Bump it when a field changes meaning
or shape, so an older file can be recognised and migrated instead of misread. A record
claiming a newer version than this evalatlas knows is rejected, not guessed at."""


def _check_format_version(v: int) -> int:
    if v > FORMAT_VERSION:
        raise ValueError(f"format_version {v} is newer than this evalatlas reads "
                         f"({FORMAT_VERSION}); upgrade evalatlas")
    return v

CUBE_STATUS_MAP: dict[str, EpisodeStatus] = {
    "COMPLETED": "completed",
    "FAILED": "error",
    "CANCELLED": "cancelled",
    "STALE": "error",
    "MAX_STEPS_REACHED": "max_steps",
    "INVALID_CONFIG": "error",
    "QUEUED": "incomplete",
    "RUNNING": "incomplete",
}
"""cube-harness ``EpisodeStatus`` values to evalatlas statuses."""


def _number_check(nullable: bool) -> BeforeValidator:
    """The record contract's numbers are JSON numbers: a boolean is not one (it is
    ``success``'s job, and Python would read it as 1 or 0), nor is a string (``"0.5"``,
    ``"91"``): pydantic's lax mode would quietly read both as numbers. Our own format
    documents no numeric string (foreign formats that do: :mod:`evalatlas.adapters.coerce`).
    Any other value goes on to the field's own check (a whole number for a count,
    ``>= 0``, finite)."""
    expected = "a JSON number or null" if nullable else "a JSON number"

    def check(v: Any) -> Any:
        if isinstance(v, bool | str):
            raise ValueError(f"must be {expected}, got {type(v).__name__} {v!r:.40}")
        return v

    return BeforeValidator(check)


JSON_NUMBER = _number_check(nullable=False)
JSON_NUMBER_OR_NULL = _number_check(nullable=True)
NUMBER_CHECKS = (JSON_NUMBER, JSON_NUMBER_OR_NULL)
"""The validators that hold a field to its JSON number type (:mod:`evalatlas.records.spec`
reads them as part of the type, not as a further constraint)."""
Count = Annotated[int, JSON_NUMBER]
"""An integer of the contract (a count, an index, a version): a JSON number that is whole."""
OptCount = Annotated[int | None, JSON_NUMBER_OR_NULL]
Number = Annotated[float, JSON_NUMBER]
"""A number of the contract: a JSON number (finite: the record config refuses NaN and
infinity)."""
OptNumber = Annotated[float | None, JSON_NUMBER_OR_NULL]


class Record(BaseModel):
    """Base of every record: unknown fields rejected, NaN and infinity rejected."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, populate_by_name=True)


class UsageSummary(Record):
    """Aggregated LLM token usage and cost of one episode (seed 002)."""

    prompt_tokens: OptCount = Field(
        None, ge=0, description="Input tokens, including cached_tokens and "
        "cache_creation_tokens (OpenAI/LiteLLM convention, as cube-harness).")
    completion_tokens: OptCount = Field(None, ge=0, description="Output tokens.")
    total_tokens: OptCount = Field(
        None, ge=0, description="prompt + completion when not reported (as cube-harness)."
    )
    cached_tokens: OptCount = Field(None, ge=0, description="Input tokens read from cache.")
    cache_creation_tokens: OptCount = Field(
        None, ge=0, description="Input tokens written to cache."
    )
    reasoning_tokens: OptCount = Field(None, ge=0, description="Extension; informational.")
    total_cost_usd: OptNumber = Field(None, ge=0, description="None when unknown, not 0.")
    cost_source: str | None = Field(
        None, pattern=r"^(reported|computed)(: .*)?$",
        description="Extension: who produced total_cost_usd: 'reported' (the harness) or "
        "'computed' from tokens, optionally followed by ': <price used and its date>'.",
    )
    n_llm_calls: OptCount = Field(None, ge=0)
    model: str | None = Field(
        None, description="Extension: model that consumed these tokens, used for pricing."
    )

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = aliases.rename(aliases.drop_type_keys(data), aliases.USAGE_ALIASES, "usage")
        return data

    @model_validator(mode="after")
    def _derive(self) -> UsageSummary:
        if (
            self.total_tokens is None
            and self.prompt_tokens is not None
            and self.completion_tokens is not None
        ):
            self.total_tokens = self.prompt_tokens + self.completion_tokens
        if self.total_cost_usd is not None and self.cost_source is None:
            self.cost_source = "reported"
        return self


class AgentInfo(Record):
    """Who ran: the agent's identity, runtime and provenance (seed 002)."""

    agent_id: str = Field("", description="SHA-256 of the redacted config as sorted JSON.")
    name: str | None = Field(None, description="Extension: human-readable agent name.")
    config_type: str = "unknown"
    config: dict[str, Any] = Field(default_factory=dict)
    llm_model: str | None = None
    framework_version: str = "unknown"
    dependency_versions: dict[str, str] = Field(default_factory=dict)
    git_commit: str | None = None
    git_remote_url: str | None = None
    git_is_dirty: bool | None = None
    cube_standard_git_commit: str | None = None
    cube_standard_git_is_dirty: bool | None = None
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _prepare(cls, data: Any) -> Any:
        if isinstance(data, dict):
            config = data.get("config")
            # ``_type`` keys inside the config are part of the config (upstream hashes
            # them); only the record-level discriminator is dropped.
            data = {k: v for k, v in data.items() if k != "_type"}
            if isinstance(config, dict):
                data["config"] = redact_secrets(config)
        return data

    @model_validator(mode="after")
    def _fill_id(self) -> AgentInfo:
        if not self.agent_id:
            self.agent_id = agent_id_for(self.config)
        if self.config_type == "unknown" and isinstance(self.config.get("_type"), str):
            self.config_type = self.config["_type"]
        return self

    @property
    def display_name(self) -> str:
        """A name for tables: explicit name, else config type and model, else the id."""
        if self.name:
            return self.name
        if self.config_type != "unknown" and self.llm_model:
            return f"{self.config_type}:{self.llm_model}"
        return self.llm_model or self.agent_id[:12]


class BenchmarkSubset(Record):
    """Which part of a benchmark was run; ``n_tasks`` is the completion denominator."""

    name: str
    n_tasks: Count = Field(ge=0)
    filter: str | None = None


class InvestigatorLLMConfig(Record):
    """The LLM investigator used for post-hoc episode assessment (seed 002)."""

    model: str
    prompt_version: str
    investigated_at: str | None = None


class Findings(Record):
    """Per-episode investigator assessment. Extra keys (cube's BaseFindings) are kept."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    difficulty: str | None = None
    feasible: bool | None = None
    failure_root_cause: str | None = None


class Verifier(Record):
    """Task verifier reference for reproducibility (seed 002)."""

    ref: str | None = None
    source: str | None = None


def _drop_type(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if k != "_type"}
    return data


class PublishedMetric(Record):
    """A number the source itself published about an experiment, kept beside the episodes.

    Inspect's per-scorer ``results`` (accuracy, stderr after its epochs reducer), an Every
    Eval Ever aggregate score with its uncertainty, a leaderboard percentage: evalatlas
    keeps them as reported so a summary can show them next to its own numbers from the
    episodes and flag a disagreement, and never uses them in place of the episodes.
    """

    source: str = Field(description="Who published it: inspect, eee, tau-bench, ...")
    metric: str = Field(description="Metric name as published: accuracy, stderr, mean ...")
    value: OptNumber = Field(description="As published; None when it was not a number.")
    score: str | None = Field(
        None, description="The per-episode quantity it summarises: 'reward' or the name of "
        "a score in EpisodeRecord.scores; None when it matches none.")
    name: str | None = Field(None, description="The source's label (scorer, result id).")
    reducer: str | None = Field(
        None, description="How a task's attempts were combined first (Inspect epochs "
        "reducer: mean, max, mode, pass_at_2 ...); None when not said.")
    stderr: OptNumber = None
    ci_low: OptNumber = None
    ci_high: OptNumber = None
    confidence: OptNumber = Field(None, gt=0, lt=1)
    n: OptCount = Field(None, ge=0, description="Samples (tasks) it was computed over.")
    params: dict[str, Any] = Field(default_factory=dict)


class ExperimentRecord(Record):
    """One experiment: agent, benchmark and provenance shared by all its episodes."""

    experiment_id: str
    experiment_name: str
    timestamp: OptNumber = None
    framework_version: str = "unknown"
    framework_name: str | None = Field(None, description="Extension: the harness's name.")
    agent: AgentInfo
    benchmark_name: str
    benchmark_version: str | None = None
    benchmark_subset: BenchmarkSubset
    investigator_llm_config: InvestigatorLLMConfig | None = None
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extension: grouping labels (tier, scenario, ...)."
    )
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Extension: attachments (code quality, notes)."
    )
    published_metrics: list[PublishedMetric] = Field(
        default_factory=list, description="Extension: the source's own reported numbers.")
    format_version: Count = Field(FORMAT_VERSION, ge=1, description="Record contract version.")

    @field_validator("format_version")
    @classmethod
    def _known_format(cls, v: int) -> int:
        return _check_format_version(v)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = aliases.normalise_experiment(_drop_type(data))
            for key in ("benchmark_subset", "investigator_llm_config"):
                if key in data:
                    data[key] = _drop_type(data[key])
            labels = data.get("labels")
            if isinstance(labels, dict):
                data["labels"] = {
                    str(k): v if isinstance(v, str) else str(v) for k, v in labels.items()
                }
            _canonical_benchmark(data)
        return data

    @field_validator("experiment_id")
    @classmethod
    def _safe_experiment_id(cls, v: str) -> str:
        return check_safe_id(v, "experiment_id")


_OUTCOME_SOURCE = re.compile(r"^(harness|judge|judge:[^\x00-\x1f\x7f]{1,200})$")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _canonical_benchmark(data: dict[str, Any]) -> None:
    """One name per benchmark (:mod:`evalatlas.records.names`); the source's spelling is
    kept in ``extra["original_names"]["benchmark_name"]``."""
    name = data.get("benchmark_name")
    if not isinstance(name, str):
        return
    canonical = names.canonical_benchmark(name)
    if canonical != name:
        extra = dict(data.get("extra") or {})
        extra["original_names"] = {**(extra.get("original_names") or {}),
                                   "benchmark_name": name}
        data["extra"] = extra
        data["benchmark_name"] = canonical


def _clean_score(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


class EpisodeRecord(Record):
    """One episode (one attempt of one task by one agent), seed 002 plus extensions."""

    experiment_id: str
    task_id: str
    task_version_hash: str | None = None
    seed: OptCount = None
    split: str | None = None
    task_description: str | None = None
    tool_names: list[str] = Field(default_factory=list)
    success: bool | None = Field(
        None, description="reward > 0 (seed 002 invariant 5); None when reward is None.")
    reward: OptNumber = Field(
        description="Required key. None only when the outcome is unknown (e.g. speed "
        "measurements without test results), never as a stand-in for failure.")
    outcome_source: str | None = Field(
        None, description="Where reward/success came from: 'harness' (the benchmark's own "
        "verdict; the default whenever reward is set), 'judge:<model>' (an LLM judge filled "
        "an outcome the harness did not report), 'judge' (the input arrived already "
        "judged, e.g. framework comparison results). None when the outcome is unknown.")
    error_type: str | None = None
    n_steps: OptCount = Field(None, ge=0)
    n_agent_steps: OptCount = Field(None, ge=0)
    n_env_steps: OptCount = Field(None, ge=0)
    wall_time_s: OptNumber = Field(None, ge=0)
    usage: UsageSummary = Field(default_factory=UsageSummary)
    trajectory_id: str
    timestamp: OptNumber = None
    verifier: Verifier | None = None
    findings: Findings | None = None
    # --- extensions -------------------------------------------------------------
    attempt: OptCount = Field(None, ge=0, description="0-based repeat index of the task.")
    status: EpisodeStatus = "completed"
    error_message: str | None = None
    scores: dict[str, OptNumber] = Field(
        default_factory=dict, description="Named scores; None (or NaN on input) = missing."
    )
    input_text: str | None = None
    output_text: str | None = None
    expected_text: str | None = None
    retrieved_sources: list[str] | None = None
    expected_sources: list[str] | None = None
    judge_usage: UsageSummary | None = None
    investigation_metadata: dict[str, Any] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    format_version: Count = Field(FORMAT_VERSION, ge=1, description="Record contract version.")

    @field_validator("format_version")
    @classmethod
    def _known_format(cls, v: int) -> int:
        return _check_format_version(v)

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = aliases.normalise_episode(_drop_type(data))
            for key in ("verifier", "findings"):
                if isinstance(data.get(key), dict):
                    data[key] = _drop_type(data[key])
            scores = data.get("scores")
            if isinstance(scores, dict):
                data["scores"] = {k: _clean_score(v) for k, v in scores.items()}
            if not _is_number(data.get("reward")):
                data["outcome_source"] = None  # an unknown outcome has no source
            elif data.get("outcome_source") is None:
                data["outcome_source"] = "harness"
            if "success" not in data or data["success"] is None:
                reward = data.get("reward")
                if isinstance(reward, int | float) and not isinstance(reward, bool):
                    data["success"] = reward > 0
        return data

    @field_validator("trajectory_id")
    @classmethod
    def _safe_trajectory_id(cls, v: str) -> str:
        return check_safe_id(v, "trajectory_id")

    @field_validator("outcome_source")
    @classmethod
    def _known_outcome_source(cls, v: str | None) -> str | None:
        if v is not None and not _OUTCOME_SOURCE.match(v):
            raise ValueError(f"outcome_source must be 'harness', 'judge' or "
                             f"'judge:<model>', got {v!r}")
        return v

    @model_validator(mode="after")
    def _invariant_success(self) -> EpisodeRecord:
        if self.reward is None:
            if self.success is not None:
                raise ValueError("success is set but reward is null: an unknown outcome "
                                 "has no success (seed 002: success = reward > 0)")
            return self
        if self.success != (self.reward > 0):
            raise ValueError(
                f"success={self.success} disagrees with reward={self.reward}: "
                "seed 002 defines success = reward > 0"
            )
        return self


class Measurement(Record):
    """One performance benchmark inside an episode (FC-Eval), linked by trajectory_id.

    Timings are seconds (or the benchmark's unit); speedups are ratios against the
    baseline ("nop"): ``speedup_agent = median(baseline) / median(agent)``.
    """

    experiment_id: str
    trajectory_id: str
    benchmark: str
    module: str | None = None
    class_name: str | None = None
    function: str | None = None
    params: str | None = None
    unit: str | None = "seconds"
    baseline_samples: list[Number] | None = None
    agent_samples: list[Number] | None = None
    oracle_samples: list[Number] | None = None
    baseline_time: OptNumber = None
    agent_time: OptNumber = None
    oracle_time: OptNumber = None
    speedup_agent: OptNumber = None
    speedup_oracle: OptNumber = None
    advantage: OptNumber = None
    valid: bool | None = None
    fallback_to_baseline: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)
    format_version: Count = Field(FORMAT_VERSION, ge=1, description="Record contract version.")

    @field_validator("format_version")
    @classmethod
    def _known_format(cls, v: int) -> int:
        return _check_format_version(v)

    @field_validator("trajectory_id")
    @classmethod
    def _safe_trajectory_id(cls, v: str) -> str:
        return check_safe_id(v, "trajectory_id")


RECORD_MODELS: dict[str, type[Record]] = {
    "UsageSummary": UsageSummary,
    "AgentInfo": AgentInfo,
    "BenchmarkSubset": BenchmarkSubset,
    "InvestigatorLLMConfig": InvestigatorLLMConfig,
    "Findings": Findings,
    "Verifier": Verifier,
    "ExperimentRecord": ExperimentRecord,
    "EpisodeRecord": EpisodeRecord,
    "Measurement": Measurement,
    "PublishedMetric": PublishedMetric,
}
