"""Export the store to Every Eval Ever (EEE) 0.3.0: one aggregate + one samples file per
experiment, laid out as the EEE datastore expects (``data/<dataset>/<developer>/<model>/``).

The mapping follows ``shared/reference/eval-log.md`` §2.5 (cube EvalLog -> EEE, which
passes the EEE validator) and is documented with its decisions in ``docs/eee-export.md``.
The mapping functions (:func:`identity_for`, :func:`instance_record`,
:func:`aggregate_record`) are pure so they can be tested without a store;
:func:`export_eee` streams episodes from the store and writes the files.

Rules that shape the code:

- EEE requires ``score`` and ``is_correct`` on every sample, so an episode whose reward is
  unknown (``None``) has no sample row and is not in the aggregate score either; it is
  counted in ``score_details.details`` and ``detailed_evaluation_results``;
- file names must be UUIDv4-shaped (the validator's path regex) yet an export must be
  reproducible, so the UUID is a uuid5 of the experiment id re-stamped as version 4;
- strict JSON: no NaN or Infinity anywhere (``allow_nan=False``), and every
  ``additional_details`` / ``metadata`` value is a string (Draft-07 rejects others);
- free text (task input, reference, error message) is scrubbed of credential-looking
  substrings; agent configs are redacted again before they are written.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

from evalatlas._version import __version__
from evalatlas.exports.eee_terms import RELATIONSHIPS
from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.records.redact import redact, redact_text
from evalatlas.safe_write import make_folder, output_error, temp_path
from evalatlas.stats.bounded import bounded_mean_interval
from evalatlas.stats.standard_errors import mean_with_interval
from evalatlas.store.db import StoreConnection
from evalatlas.store.export import iter_episodes, iter_experiments
from evalatlas.store.selection import select_experiments

SCHEMA_VERSION = "0.3.0"
"""The EEE schema version written (fixtures: ``shared/fixtures/eee/schema``)."""

CONFIDENCE = 0.95

_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://evalatlas.invalid/export/eee")
# What the EEE publisher refuses in a path component (helpers/io.py).
_INVALID_PATH_CHARS = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                     *(f"LPT{i}" for i in range(1, 10))}
# Developer of a bare model name (``gpt-4o`` -> ``openai``), so ``model_info.id`` is
# HF-style and the datastore path names a developer. Unknown names get ``unknown``.
_DEVELOPERS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), dev) for p, dev in (
        (r"^(gpt-|o[1-9]\b|o[1-9]-|chatgpt|text-embedding|davinci|codex)", "openai"),
        (r"^claude", "anthropic"),
        (r"^(gemini|gemma)", "google"),
        (r"^(meta-)?llama", "meta-llama"),
        (r"^(mistral|mixtral|codestral|devstral|magistral|ministral)", "mistralai"),
        (r"^(qwen|qwq)", "Qwen"),
        (r"^deepseek", "deepseek-ai"),
        (r"^grok", "xai"),
        (r"^command", "cohere"),
        (r"^(kimi|moonshot)", "moonshotai"),
        (r"^glm", "zai-org"),
    )
)


# --- identity ----------------------------------------------------------------------


@dataclass(frozen=True)
class EvalIdentity:
    """Everything that names one experiment's EEE files and joins samples to it."""

    file_uuid: str
    evaluation_id: str
    evaluation_name: str
    evaluation_result_id: str
    model_id: str
    model_name: str
    developer: str
    path_parts: tuple[str, str, str]
    """``(dataset, developer, model)`` directory names under ``data/``."""
    renamed: tuple[tuple[str, str, str], ...] = ()
    """``(part, name, directory)`` for each path part whose directory name differs from
    the name it stands for (characters replaced, shortened)."""

    @property
    def rel_dir(self) -> str:
        return "data/" + "/".join(self.path_parts)

    @property
    def aggregate_rel(self) -> str:
        return f"{self.rel_dir}/{self.file_uuid}.json"

    @property
    def samples_rel(self) -> str:
        return f"{self.rel_dir}/{self.file_uuid}_samples.jsonl"


def file_uuid_for(experiment_id: str) -> str:
    """Deterministic UUID of an experiment's files: uuid5, stamped as version 4.

    EEE's validator and schema accept only UUIDv4-shaped names; a random uuid4 would give
    a new file on every export. The 122 hashed bits keep uuid5's collision resistance.
    """
    return str(uuid.UUID(bytes=uuid.uuid5(_NAMESPACE, experiment_id).bytes, version=4))


def guess_developer(model: str) -> str | None:
    """The organisation behind a bare model name, from its well-known prefix; else None."""
    for pattern, dev in _DEVELOPERS:
        if pattern.search(model.strip()):
            return dev
    return None


def model_identity(llm_model: str | None) -> tuple[str, str, str]:
    """``(model_id, model_name, developer)`` from the agent's LLM.

    ``dev/model`` ids are kept as given (EEE's first path segment is the developer);
    a bare name gets its developer from :func:`guess_developer`, else ``unknown``.
    """
    name = (llm_model or "").strip() or "unknown"
    parts = name.split("/")
    if len(parts) >= 2 and all(parts):
        return name, name, parts[0]
    dev = guess_developer(name) or "unknown"
    return f"{dev}/{name.replace('/', '_')}", name, dev


MAX_COMPONENT_BYTES = 100
"""The longest directory name an export writes (UTF-8 bytes). File systems stop at 255
bytes per name (ENAMETOOLONG); a 300-character model or a 1 MB benchmark name is
shortened to its first bytes and a hash of the whole name, so two long names that share
a prefix still get different directories."""


def _shorten(v: str, original: str) -> str:
    raw = v.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_COMPONENT_BYTES:
        return v
    digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = raw[:MAX_COMPONENT_BYTES - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head.rstrip('. ') or '_'}-{digest}"


def _path_component(value: str) -> str:
    """A portable directory name, as EEE's publisher derives one (``:`` -> ``_``); the
    other characters it would refuse are replaced too, so an export never fails on a
    name. Never ``.``, ``..``, hidden (a leading dot becomes ``_``) or a path: separators
    are replaced, and the name is at most :data:`MAX_COMPONENT_BYTES` long."""
    v = _INVALID_PATH_CHARS.sub("_", value.strip()).replace("/", "_") or "_"
    if v in {".", ".."} or v.endswith((".", " ")):
        v = v.rstrip(". ") + "_"
    if v.startswith("."):
        v = "_" + v[1:]
    if v.split(".", 1)[0].upper() in _WINDOWS_RESERVED or v == "data":
        v = "_" + v
    return _shorten(v, value)


def _flatten(value: str) -> str:
    return _shorten("_".join(_path_component(p) for p in value.split("/")), value)


def identity_for(exp: ExperimentRecord) -> EvalIdentity:
    """The names of an experiment's EEE files and records, all derived from the record.

    ``evaluation_id`` is ``<benchmark>/<agent>__<model>/<experiment_id>`` (the Exgentic
    converter's shape, with the experiment id where it puts a timestamp): deterministic,
    and unique because experiment ids are.
    """
    model_id, model_name, developer = model_identity(exp.agent.llm_model)
    parts = model_id.split("/")
    tail = "/".join(parts[1:])
    path_parts = (_flatten(exp.benchmark_name), _path_component(parts[0]), _flatten(tail))
    renamed = tuple((part, name, written) for part, name, written, plain in (
        ("benchmark", exp.benchmark_name, path_parts[0], exp.benchmark_name),
        ("developer", parts[0], path_parts[1], parts[0]),
        ("model", model_name, path_parts[2], tail.replace("/", "_"))) if written != plain)
    agent = exp.agent.display_name.replace("/", "_")
    return EvalIdentity(
        file_uuid=file_uuid_for(exp.experiment_id),
        evaluation_id=(f"{exp.benchmark_name}/{agent}__{model_id.replace('/', '_')}/"
                       f"{exp.experiment_id}"),
        evaluation_name=exp.benchmark_name,
        evaluation_result_id=f"{exp.benchmark_name}.reward",
        model_id=model_id,
        model_name=model_name,
        developer=developer,
        path_parts=path_parts,
        renamed=renamed,
    )


# --- small value helpers -------------------------------------------------------------


def _s(value: Any) -> str:
    """A metadata string: floats in shortest round-trip form, booleans lower-case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _strings(items: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """``additional_details`` / ``metadata``: string values only; None and non-finite
    numbers dropped (a missing value stays missing, never ``"None"`` or ``"nan"``)."""
    out = {}
    for k, v in items:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            continue
        out[k] = _s(v)
    return out


scrub = redact_text
"""Free text with credentials replaced: the one redaction function
(:mod:`evalatlas.records.redact`)."""


def _epoch(ts: float | None) -> str | None:
    return None if ts is None or not math.isfinite(ts) else str(int(ts))


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


# --- instance rows -------------------------------------------------------------------


def _num_turns(ep: EpisodeRecord) -> int | None:
    """Agent + env steps (cube's and Inspect's count of messages); None when unknown or 0
    (EEE requires >= 1)."""
    n = ep.n_steps
    if n is None and ep.n_agent_steps is not None and ep.n_env_steps is not None:
        n = ep.n_agent_steps + ep.n_env_steps
    return n if n is not None and n >= 1 else None


def _token_usage(ep: EpisodeRecord) -> dict[str, int] | None:
    """EEE's token_usage needs all three counts; partial usage is left out, not zero-filled."""
    u = ep.usage
    if u.prompt_tokens is None or u.completion_tokens is None or u.total_tokens is None:
        return None
    out = {"input_tokens": u.prompt_tokens, "output_tokens": u.completion_tokens,
           "total_tokens": u.total_tokens}
    for key, value in (("input_tokens_cache_read", u.cached_tokens),
                       ("input_tokens_cache_write", u.cache_creation_tokens),
                       ("reasoning_tokens", u.reasoning_tokens)):
        if value is not None:
            out[key] = value
    return out


def _error(ep: EpisodeRecord) -> str | None:
    parts = [p for p in (ep.error_type, ep.error_message) if p]
    if not parts and ep.status != "completed":
        parts = [ep.status]
    return scrub(": ".join(parts)) if parts else None


def instance_record(ep: EpisodeRecord, ident: EvalIdentity) -> dict[str, Any] | None:
    """One EEE instance row (``interaction_type`` agentic), or None when the reward is
    unknown: EEE requires ``score`` and ``is_correct``, and inventing them would turn an
    unknown outcome into a failure."""
    if ep.reward is None or not math.isfinite(ep.reward):
        return None
    if ep.input_text:
        raw, source = ep.input_text, "input_text"
    elif ep.task_description:
        raw, source = ep.task_description, "task_description"
    else:
        raw, source = ep.task_id, "task_id"
    reference = [scrub(ep.expected_text)] if ep.expected_text is not None else []
    row: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": ident.evaluation_id,
        "model_id": ident.model_id,
        "evaluation_name": ident.evaluation_name,
        "evaluation_result_id": ident.evaluation_result_id,
        "sample_id": str(ep.task_id),
    }
    raw = scrub(raw)
    if source != "task_id":
        # EEE's canonical sample_hash (eval-log.md §2.3), only over a real input: a task id
        # is not a sample's content.
        canon = json.dumps({"raw": raw, "reference": reference}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
        row["sample_hash"] = hashlib.sha256(canon.encode("utf-8")).hexdigest()
    row.update({
        "interaction_type": "agentic",
        "input": {"raw": raw, "reference": reference},
        "output": None,
        "messages": [],
        "answer_attribution": [],
        "evaluation": {
            "score": float(ep.reward),
            "is_correct": bool(ep.reward > 0),
            "num_turns": _num_turns(ep),
            "tool_calls_count": None,
        },
    })
    usage = _token_usage(ep)
    if usage is not None:
        row["token_usage"] = usage
    latency = _finite(ep.wall_time_s)
    if latency is not None:
        row["performance"] = {"latency_ms": latency * 1000.0}
    err = _error(ep)
    if err is not None:
        row["error"] = err
    u = ep.usage
    meta = _strings([
        ("trajectory_id", ep.trajectory_id), ("attempt", ep.attempt), ("seed", ep.seed),
        ("split", ep.split), ("status", ep.status), ("error_type", ep.error_type),
        ("task_version_hash", ep.task_version_hash), ("input_source", source),
        ("cost_usd", u.total_cost_usd), ("cost_source", u.cost_source),
        ("n_llm_calls", u.n_llm_calls), ("usage_model", u.model), ("n_steps", ep.n_steps),
        ("n_agent_steps", ep.n_agent_steps), ("n_env_steps", ep.n_env_steps),
        ("timestamp", ep.timestamp),
        ("verifier_ref", ep.verifier.ref if ep.verifier else None),
        *((f"score.{k}", v) for k, v in sorted(ep.scores.items())),
    ])
    row["metadata"] = meta
    return row


# --- aggregate -----------------------------------------------------------------------


@dataclass
class ScoreAccumulator:
    """What the aggregate needs from an experiment's episodes, gathered while streaming."""

    rewards: list[float] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    episodes: int = 0
    outcome_unknown: int = 0

    def add(self, ep: EpisodeRecord) -> None:
        self.episodes += 1
        self.tools.update(ep.tool_names)
        if ep.reward is None or not math.isfinite(ep.reward):
            self.outcome_unknown += 1
            return
        self.rewards.append(float(ep.reward))
        self.tasks.append(ep.task_id)


def _metric_config(rewards: np.ndarray) -> dict[str, Any]:
    """Success rate when every reward is 0/1 (eval-log.md §2.5), mean reward otherwise.
    Bounds are [0, 1] unless a reward lies outside, then that side is unbounded (a score
    outside its bounds is an EEE validator error)."""
    binary = bool(np.all((rewards == 0) | (rewards == 1)))
    lo = 0.0 if rewards.min() >= 0 else "-Infinity"
    hi = 1.0 if rewards.max() <= 1 else "Infinity"
    if binary:
        ident = {"metric_id": "success_rate", "metric_name": "Success rate",
                 "metric_kind": "pass_rate", "metric_unit": "proportion"}
        desc = "Share of episodes (task attempts) that succeeded (reward 1)."
    else:
        ident = {"metric_id": "mean_reward", "metric_name": "Mean reward",
                 "metric_kind": "mean_score", "metric_unit": "reward"}
        desc = "Mean episode reward over the episodes whose outcome is known."
    return {"evaluation_description": desc, **ident, "lower_is_better": False,
            "score_type": "continuous", "min_score": lo, "max_score": hi}


def _uncertainty(rewards: np.ndarray, tasks: list[str]) -> tuple[float, dict[str, Any], int]:
    """Mean, EEE ``uncertainty`` and the task count. Task-clustered (attempts of one task
    are not independent; Miller 2024), via :func:`evalatlas.stats.mean_with_interval`.

    The interval lies inside the metric's range (issue 10): rewards in [0, 1] (the
    metric's ``min_score``/``max_score``, :func:`_metric_config`) get
    :func:`evalatlas.stats.bounded.bounded_mean_interval` (Wilson on an effective sample
    size from the clustered SE), other rewards the t interval; none is written where it
    cannot be estimated (one task, every reward equal at a bound of an unbounded metric)
    rather than a zero-width one."""
    clusters = np.asarray(tasks, dtype=object)
    iv = mean_with_interval(rewards, clusters=clusters, confidence=CONFIDENCE)
    out: dict[str, Any] = {"num_samples": int(iv.n)}
    se = _finite(iv.se)
    if se is not None:
        out["standard_error"] = {"value": se, "method": f"{iv.method}, tasks as clusters"}
    lo, hi = _finite(iv.low), _finite(iv.high)
    method = f"t with {(iv.n_clusters or 0) - 1} df x {iv.method} standard error"
    if rewards.size and rewards.min() >= 0 and rewards.max() <= 1:
        b = bounded_mean_interval(rewards, clusters=clusters, confidence=CONFIDENCE)
        lo, hi = _finite(b.low), _finite(b.high)
        method = (f"Wilson score interval on the effective sample size of the {iv.method} "
                  f"standard error (z from t with {(iv.n_clusters or 0) - 1} df), in [0, 1]")
    if lo is not None and hi is not None and lo < hi:
        out["confidence_interval"] = {
            "lower": float(lo), "upper": float(hi), "confidence_level": CONFIDENCE,
            "method": method,
        }
    if rewards.size >= 2:
        out["standard_deviation"] = float(np.std(rewards, ddof=1))
    return float(iv.estimate), out, int(iv.n_clusters or 0)


def aggregate_record(
    exp: ExperimentRecord,
    ident: EvalIdentity,
    acc: ScoreAccumulator,
    detail: dict[str, Any],
    *,
    retrieved_timestamp: str,
    organization: str = "unknown",
    relationship: str = "third_party",
) -> dict[str, Any]:
    """The EEE aggregate (EvaluationLog) of one experiment; ``acc`` must hold at least
    one known reward (EEE requires a score), ``detail`` is ``detailed_evaluation_results``.
    """
    if not acc.rewards:
        raise ValueError(f"experiment {exp.experiment_id} has no episode with a known reward")
    if relationship not in RELATIONSHIPS:
        raise ValueError(f"relationship must be one of {RELATIONSHIPS}, got {relationship!r}")
    rewards = np.asarray(acc.rewards, dtype=float)
    score, uncertainty, n_tasks_scored = _uncertainty(rewards, acc.tasks)
    successes = int(np.count_nonzero(rewards > 0))
    a = exp.agent
    config = json.dumps(redact(a.config), sort_keys=True, ensure_ascii=False,
                        allow_nan=False, default=str)
    result: dict[str, Any] = {
        "evaluation_result_id": ident.evaluation_result_id,
        "evaluation_name": ident.evaluation_name,
        "source_data": {
            "dataset_name": exp.benchmark_name,
            "source_type": "other",
            "additional_details": _strings([
                ("benchmark_version", exp.benchmark_version),
                ("subset", exp.benchmark_subset.name),
                ("n_tasks", exp.benchmark_subset.n_tasks),
                ("subset_filter", exp.benchmark_subset.filter),
            ]),
        },
        "metric_config": _metric_config(rewards),
        "score_details": {
            "score": score,
            "details": _strings([
                ("episodes", acc.episodes),
                ("episodes_scored", int(rewards.size)),
                ("episodes_outcome_unknown", acc.outcome_unknown),
                ("tasks_scored", n_tasks_scored),
                ("successes", successes),
                ("success_rate", successes / rewards.size),
            ]),
            "uncertainty": uncertainty,
        },
    }
    ts = _epoch(exp.timestamp)
    if ts is not None:
        result["evaluation_timestamp"] = ts
    if acc.tools:
        result["generation_config"] = {"generation_args": {"agentic_eval_config": {
            "available_tools": [{"name": t} for t in sorted(acc.tools)]}}}
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": ident.evaluation_id,
    }
    if ts is not None:
        record["evaluation_timestamp"] = ts
    record.update({
        "retrieved_timestamp": retrieved_timestamp,
        "source_metadata": {
            "source_name": exp.experiment_name,
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": relationship,
            "additional_details": _strings([
                ("experiment_id", exp.experiment_id),
                ("experiment_name", exp.experiment_name),
                ("exported_by", f"evalatlas {__version__}"),
                *((f"label.{k}", v) for k, v in sorted(exp.labels.items())),
            ]),
        },
        "eval_library": {
            "name": exp.framework_name or "unknown",
            "version": exp.framework_version or "unknown",
        },
        "model_info": {
            "name": ident.model_name,
            "id": ident.model_id,
            "developer": ident.developer,
            "additional_details": {
                "deployment_type": "unknown",
                "model_availability": "unknown",
                **_strings([
                    ("agent_id", a.agent_id), ("agent_name", a.display_name),
                    ("agent_config_type", a.config_type), ("agent_config", config),
                    ("agent_framework_version", a.framework_version),
                    ("agent_git_commit", a.git_commit),
                    ("agent_git_is_dirty", a.git_is_dirty),
                    ("agent_description", a.description),
                ]),
            },
        },
        "evaluation_results": [result],
        "detailed_evaluation_results": detail,
    })
    return record


# --- writer --------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportedEvaluation:
    """One experiment written: its files and the numbers a caller reports."""

    experiment_id: str
    experiment_name: str
    aggregate: Path
    samples: Path
    rows: int
    outcome_unknown: int
    score: float
    renamed: tuple[tuple[str, str, str], ...] = ()
    """``(part, name, directory)``: path parts written under another name (see
    :attr:`EvalIdentity.renamed`)."""


@dataclass
class EeeExport:
    """Result of :func:`export_eee`: files written and experiments skipped (with why)."""

    written: list[ExportedEvaluation] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _dump_line(row: dict[str, Any]) -> bytes:
    """One samples line, redacted as a whole (the checksum covers what is written)."""
    return (json.dumps(redact(row), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_experiment(
    exp: ExperimentRecord,
    episodes: Iterable[EpisodeRecord],
    directory: Path,
    *,
    retrieved_timestamp: str,
    organization: str = "unknown",
    relationship: str = "third_party",
) -> ExportedEvaluation | None:
    """Write one experiment's samples then aggregate file under ``directory``; None (and
    no files, stale ones removed) when no episode has a known reward.

    Samples stream to a temporary file while the checksum and the score inputs are
    gathered; both files are renamed into place only when complete.
    """
    ident = identity_for(exp)
    target = directory / ident.rel_dir
    try:
        target.mkdir(parents=True, exist_ok=True)  # inside the export folder: its layout
    except OSError as exc:
        raise output_error(target, exc) from exc
    agg_path = directory / ident.aggregate_rel
    samples_path = directory / ident.samples_rel
    acc = ScoreAccumulator()
    digest = hashlib.sha256()
    rows = 0
    try:
        # samples renamed into place first, then the aggregate that names their checksum
        with temp_path(agg_path) as tmp_agg, temp_path(samples_path) as tmp_samples:
            try:
                with tmp_samples.open("wb") as fh:
                    for ep in episodes:
                        acc.add(ep)
                        row = instance_record(ep, ident)
                        if row is None:
                            continue
                        line = _dump_line(row)
                        fh.write(line)
                        digest.update(line)
                        rows += 1
            except OSError as exc:
                raise output_error(samples_path, exc) from exc
            if rows == 0:
                raise _NothingToWrite
            detail = {
                "format": "jsonl",
                "file_path": ident.samples_rel,
                "hash_algorithm": "sha256",
                "checksum": digest.hexdigest(),
                "total_rows": rows,
                "additional_details": {
                    "episodes": str(acc.episodes),
                    "rows_left_out_outcome_unknown": str(acc.outcome_unknown),
                },
            }
            record = aggregate_record(exp, ident, acc, detail,
                                      retrieved_timestamp=retrieved_timestamp,
                                      organization=organization, relationship=relationship)
            try:
                tmp_agg.write_text(json.dumps(redact(record), indent=2, ensure_ascii=False,
                                              allow_nan=False) + "\n", encoding="utf-8")
            except OSError as exc:
                raise output_error(agg_path, exc) from exc
    except _NothingToWrite:
        remove_files(exp, directory)
        return None
    return ExportedEvaluation(exp.experiment_id, exp.experiment_name, agg_path, samples_path,
                              rows, acc.outcome_unknown,
                              record["evaluation_results"][0]["score_details"]["score"],
                              ident.renamed)


class _NothingToWrite(Exception):
    """No episode of the experiment has a known reward: its temporary files go."""


def export_eee(
    store: StoreConnection,
    directory: Path,
    experiment: list[str] | None = None,
    *,
    retrieved_timestamp: str | None = None,
    organization: str = "unknown",
    relationship: str = "third_party",
) -> EeeExport:
    """Export every (or the selected) experiment to EEE files under ``directory/data/``.

    Episodes are streamed in one ordered pass (:func:`~evalatlas.store.export.iter_episodes`),
    so memory holds one experiment's rewards, not its rows. ``retrieved_timestamp``
    (Unix seconds as a string) defaults to now; pass one for byte-identical re-exports.
    """
    if relationship not in RELATIONSHIPS:
        raise ValueError(f"relationship must be one of {RELATIONSHIPS}, got {relationship!r}")
    retrieved = retrieved_timestamp or str(int(time.time()))
    # names (or ids) people type -> ids, by the one matcher (an unknown name is an error)
    experiment = select_experiments(store, experiment)
    make_folder(directory)
    experiments = {e.experiment_id: e for e in iter_experiments(store, experiment)}
    result = EeeExport()
    seen: set[str] = set()
    for exp_id, group in groupby(iter_episodes(store, experiment), key=_experiment_of):
        exp = experiments.get(exp_id)
        if exp is None:
            _drain(group)
            result.skipped.append((exp_id, "episodes without an experiment record"))
            continue
        seen.add(exp_id)
        out = write_experiment(exp, group, directory, retrieved_timestamp=retrieved,
                               organization=organization, relationship=relationship)
        if out is None:
            result.skipped.append((exp_id, "no episode with a known reward"))
        else:
            result.written.append(out)
    for exp_id in sorted(set(experiments) - seen):
        remove_files(experiments[exp_id], directory)
        result.skipped.append((exp_id, "no episodes"))
    return result


def remove_files(exp: ExperimentRecord, directory: Path) -> None:
    """Remove an experiment's files from an earlier export: an experiment that now has
    nothing to export must not leave its old score behind."""
    ident = identity_for(exp)
    for rel in (ident.aggregate_rel, ident.samples_rel):
        (directory / rel).unlink(missing_ok=True)


def _experiment_of(ep: EpisodeRecord) -> str:
    return ep.experiment_id


def _drain(it: Iterator[Any]) -> None:
    for _ in it:
        pass
