"""Inspect AI logs (log format version 2): ``.eval`` zip archives and ``.json`` logs.

One experiment per log (task x model run) and one episode per (sample id, epoch):

- **What is read.** From a ``.eval``: ``header.json`` (eval spec, results, stats, status,
  error) and ``summaries.json`` (one small summary per sample and epoch);
  ``reductions.json`` (nothing stored comes from it) and ``samples/*`` (full
  transcripts) are never opened. A log still in
  progress or crashed has no ``header.json``: ``_journal/start.json`` gives the spec and
  ``_journal/summaries/<n>.json`` the samples finished so far, in order. A sample logged
  again (a retry, a re-scored sample) replaces the earlier entry: the last one wins. A
  ``.json`` log holds the same data in one document (its ``samples`` carry the same
  fields as the summaries).
- **Members** may be deflate (older Inspect) or zstd (Inspect >= 0.3.2xx writes zstd by
  default; Python's ``zipfile`` gained zstd only in 3.14, so zstd members are read with
  ``zstandard``, across frames). The file is read by
  :mod:`evalatlas.adapters.inspect_archive`; this module maps the log to records.
- **Scores.** Each scorer's value is kept as written (``extra["score_values"]``) and as a
  float in ``scores[<scorer>]`` with Inspect's own ``value_to_float`` mapping (C = 1,
  P = 0.5, I = N = 0, booleans, numbers, numeric strings, yes/no/true/false) except
  that a value it cannot map is **missing** (None), where Inspect silently uses 0. A
  dict value (several metrics from one scorer) gives ``scores["<scorer>.<key>"]``. The
  episode's ``reward`` is the headline scorer's float (``results.headline``, else the
  first scorer); a sample without that score (an error) has an unknown outcome.
- **Usage.** ``usage`` is the evaluated model's (``eval.model``) tokens: Inspect's
  ``input_tokens`` plus cache reads and writes as ``prompt_tokens`` (the contract's
  OpenAI convention, so ``total = prompt + completion`` as Inspect's own total),
  ``input_tokens_cache_read`` -> ``cached_tokens``, ``input_tokens_cache_write`` ->
  ``cache_creation_tokens``, ``reasoning_tokens``, ``total_cost`` when every entry has
  one. Every *other* model of a sample (a grader through model roles, a scorer model) is
  evaluation usage: their sum is the episode's ``judge_usage``. The run's totals (agent,
  evaluation by model, and both) are the sums of the per-sample ``model_usage`` of the
  samples kept, in the experiment's ``extra["inspect"]["usage_totals"]`` (the header's
  ``stats.model_usage`` also counts retries). Every model's usage as logged stays in
  ``extra["model_usage"]``.
- **Bad values.** Every value goes through the one coercion rule
  (:mod:`evalatlas.adapters.coerce`): a sample whose ``id`` is an object, whose
  ``epoch`` is not a whole number >= 1 (``"2"`` would otherwise overwrite epoch 1), whose
  ``model_usage`` is not an object or has a token count that is a string, a boolean or a
  fraction, is quarantined naming the field; a negative count or duration is missing
  with a note (``extra["coercion_notes"]``). A log of an unknown format ``version`` is
  refused by name; an archive with two members of one name (``header.json``,
  ``summaries.json``) is refused naming the member (a zip reader takes the last one
  silently). Members are inflated in a stream that stops one byte past their declared
  size and never past ``--max-record-bytes``: a zip bomb costs kilobytes.
- **Time, errors, limits.** ``total_time`` -> ``wall_time_s``, ``working_time`` ->
  ``extra["working_time_s"]``; an ``error`` -> status ``error``, ``error_type`` the
  exception class; a ``limit`` -> ``error_type`` ``<type>_limit`` with status
  ``timeout`` (time, working) or ``max_steps`` (message, token, turn, cost ...); the
  sample may still be scored. ``retries`` (or ``error_retries``) -> ``extra["retries"]``.
- **Published metrics.** ``results.scores`` (per scorer: each metric after the epochs
  reducer) become :class:`~evalatlas.records.models.PublishedMetric` rows, so
  ``summary`` can show Inspect's numbers next to evalatlas's own.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import NOTES_KEY, Fields, count, describe, number, or_none
from evalatlas.adapters.inspect_archive import SampleScore, SampleSummary, read_log
from evalatlas.errors import InputError, Problem, UnsafeIdError
from evalatlas.records.ids import check_safe_id, experiment_id_for
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
    PublishedMetric,
    UsageSummary,
)
from evalatlas.records.strict import CheckedEpisode, CheckedUsage, rows_wanted
from evalatlas.records.validate import parse_record

_ID_NAMESPACE = "inspect_ai"
_MAX_ERROR_CHARS = 2000
_EXC_NAME = re.compile(r"^([A-Za-z_][\w.]*)\(")
_TIME_LIMITS = {"time", "working"}

# --- detection -----------------------------------------------------------------------


def _detect(path: Path) -> bool:
    """``*.eval`` zip archives, and ``*.json`` whose head looks like an Inspect EvalLog."""
    name = path.name.lower()
    if name.endswith(".eval"):
        return head_bytes(path, 4) == b"PK\x03\x04"
    if not name.endswith(".json"):
        return False
    head = head_bytes(path, 8192)
    return (b'"eval"' in head and b'"task"' in head and b'"run_id"' in head
            and (b'"status"' in head or b'"version"' in head))


# --- value mapping -------------------------------------------------------------------


def score_to_float(value: Any) -> float | None:
    """Inspect's ``value_to_float`` (scorer/_metric.py), with None where it would use 0.

    C -> 1, P -> 0.5, I and N -> 0; booleans and finite numbers as floats; strings
    "yes"/"true" -> 1, "no"/"false" -> 0, numeric strings parsed. Anything else (a list,
    a dict, free text, a non-finite number) is missing: Inspect logs a warning and
    counts it as 0, which would turn an unreadable score into a failure.
    """
    if isinstance(value, str):
        if value == "C":
            return 1.0
        if value == "P":
            return 0.5
        if value in ("I", "N"):
            return 0.0
        low = value.lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        # numeric strings are documented here: the one coercion rule with strings
        return or_none(number, value, strings=True)
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return or_none(number, value)


def _json_value(value: Any) -> Any:
    """A score value as JSON can hold it (non-finite floats become None)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


# --- mapping -------------------------------------------------------------------------


def _timestamp(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _int(x: Any) -> int | None:
    """A header count (the one coercion rule; None for what it refuses)."""
    return or_none(count, x)


def _scorer_names(log: dict[str, Any]) -> list[str]:
    names = [s.get("name") for s in log["eval"].get("scorers") or [] if isinstance(s, dict)]
    names += [s.get("name") for s in (log.get("results") or {}).get("scores") or []
              if isinstance(s, dict)]
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def headline_scorer(log: dict[str, Any]) -> str | None:
    """The scorer whose value is the episode reward: Inspect's headline, else the first."""
    headline = (log.get("results") or {}).get("headline")
    if isinstance(headline, dict) and isinstance(headline.get("scorer"), str):
        return headline["scorer"]
    names = _scorer_names(log)
    return names[0] if names else None


def _trajectory_id(sample_id: str, epoch: int) -> str:
    tid = f"{sample_id}_epoch_{epoch}"
    try:
        return check_safe_id(tid)
    except UnsafeIdError:
        digest = hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:16]
        return f"sample-{digest}_epoch_{epoch}"


def _error(err: Any) -> str | None:
    """An ``error`` (a log's or a sample's) as text: its ``message`` when an object."""
    if isinstance(err, dict):
        err = err.get("message")
    if not err:
        return None
    return str(err)[:_MAX_ERROR_CHARS]


SAMPLE_TEXT_LIMIT = 10_000
"""Characters of a sample's input, target or output kept (Inspect's summaries are
already thinned; a full ``.json`` log can hold whole transcripts)."""


def _sample_text(value: Any) -> str | None:
    """The text of an Inspect input, target or output: a string as is; a list of chat
    messages (or of targets) as their text contents joined by newlines; cut to
    :data:`SAMPLE_TEXT_LIMIT` characters. Anything else is not text: None."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list):
        parts = []
        for item in value:
            content = item.get("content") if isinstance(item, dict) else item
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):  # content parts: keep the text ones
                parts += [c["text"] for c in content
                          if isinstance(c, dict) and isinstance(c.get("text"), str)]
        text = "\n".join(parts)
    else:
        return None
    if not text.strip():
        return None
    return text if len(text) <= SAMPLE_TEXT_LIMIT else text[: SAMPLE_TEXT_LIMIT - 1] + "…"


def _given_text(value: Any) -> str | None:
    """:func:`_sample_text` of a sample's input or target, with a plain short string (the
    common case, checked first without the general walk) kept as it is."""
    if type(value) is str and 0 < len(value) <= SAMPLE_TEXT_LIMIT and not value.isspace():
        return value
    return _sample_text(value)


def _sample_output(sample: SampleSummary, headline: str | None) -> str | None:
    """What the model answered: the completion of a full sample (``.json`` logs), else
    the headline scorer's extracted ``answer`` (sample summaries keep no completion)."""
    output = sample.output
    if isinstance(output, dict) and isinstance(output.get("completion"), str):
        return _sample_text(output["completion"])
    scores = sample.scores
    if isinstance(scores, dict) and headline:
        score = scores.get(headline)
        if type(score) is SampleScore:
            return _sample_text(score.answer)
        if isinstance(score, dict):
            return _sample_text(score.get("answer"))
    return None


def _published(log: dict[str, Any]) -> list[PublishedMetric]:
    cfg = log["eval"].get("config") or {}
    reducers = cfg.get("epochs_reducer")
    default_reducer = reducers[0] if isinstance(reducers, list) and len(reducers) == 1 \
        else ("mean" if not reducers else None)
    results = log.get("results") or {}
    cfg_epochs = cfg.get("epochs")
    epochs = cfg_epochs if isinstance(cfg_epochs, int) else 1
    completed = _int(results.get("completed_samples"))
    # older logs do not say how many samples a scorer scored: completed / epochs
    inferred = completed // epochs if completed is not None and epochs > 0 \
        and completed % epochs == 0 else None
    out = []
    for entry in results.get("scores") or []:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name") or entry.get("scorer") or "")
        reducer = entry.get("reducer") if isinstance(entry.get("reducer"), str) \
            else default_reducer
        n = _int(entry.get("scored_samples"))
        params = {k: entry[k] for k in ("scorer", "unscored_samples") if k in entry}
        if n is None and inferred is not None:
            n = inferred
            params["n_from"] = "completed_samples / epochs"
        for metric in (entry.get("metrics") or {}).values():
            if not isinstance(metric, dict):
                continue
            value = metric.get("value")
            out.append(PublishedMetric(
                source="inspect", metric=str(metric.get("name")), score=name or None,
                name=name or None, value=or_none(number, value), reducer=reducer,
                n=n, params={**params, **({"params": metric["params"]}
                                          if metric.get("params") else {})}))
    return out


def experiment_of(log: dict[str, Any], path: Path,
                  usage_totals: dict[str, Any] | None = None) -> ExperimentRecord:
    """The experiment record of one log (see the module docstring); ``usage_totals``
    (:func:`usage_totals`) go to ``extra["inspect"]["usage_totals"]``."""
    ev = log["eval"]
    model = ev.get("model") if isinstance(ev.get("model"), str) else None
    plan = log.get("plan") or {}
    solvers = [s.get("solver") for s in plan.get("steps") or [] if isinstance(s, dict)]
    config = {
        "model": model, "model_args": ev.get("model_args") or {},
        "generate_config": ev.get("model_generate_config") or plan.get("config") or {},
        "model_roles": ev.get("model_roles") or {}, "solvers": solvers,
    }
    version = (ev.get("packages") or {}).get("inspect_ai", "unknown")
    dataset = ev.get("dataset") or {}
    sample_ids = dataset.get("sample_ids")
    n_tasks = len(sample_ids) if isinstance(sample_ids, list) else \
        (_int(dataset.get("samples")) or 0)
    cfg = ev.get("config") or {}
    limit = cfg.get("limit")
    task = str(ev.get("task") or "unknown")
    key = ev.get("eval_id") or f"{ev.get('run_id')}/{ev.get('task_id')}"
    results = log.get("results") or {}
    stats = log.get("stats") or {}
    revision = ev.get("revision") or {}
    return ExperimentRecord(
        experiment_id=experiment_id_for(str(key), _ID_NAMESPACE),
        experiment_name=path.name.removesuffix(".eval").removesuffix(".json"),
        timestamp=_timestamp(ev.get("created")),
        framework_name="inspect_ai",
        framework_version=str(version),
        agent=AgentInfo(name=model, config=config, config_type="inspect_ai",
                        llm_model=model, framework_version=str(version),
                        git_commit=revision.get("commit"),
                        git_remote_url=revision.get("origin")),
        benchmark_name=task,
        benchmark_version=None if ev.get("task_version") is None else str(ev["task_version"]),
        benchmark_subset=BenchmarkSubset(
            name=str(dataset.get("name") or task), n_tasks=n_tasks,
            filter=None if limit is None else f"limit={limit}"),
        labels={"inspect_status": str(log.get("status") or "unknown")},
        extra={"inspect": {
            "eval_id": ev.get("eval_id"), "run_id": ev.get("run_id"),
            "task_id": ev.get("task_id"), "status": log.get("status"),
            "from_journal": bool(log.get("_from_journal")),
            "epochs": cfg.get("epochs"), "epochs_reducer": cfg.get("epochs_reducer"),
            "dataset_samples": dataset.get("samples"),
            "total_samples": results.get("total_samples"),
            "completed_samples": results.get("completed_samples"),
            "headline_scorer": headline_scorer(log),
            "started_at": stats.get("started_at"), "completed_at": stats.get("completed_at"),
            "model_usage": stats.get("model_usage") or {},
            "error": _error(log.get("error")),
            **({} if usage_totals is None else {"usage_totals": usage_totals}),
        }},
        published_metrics=_published(log),
    )


_PLAIN_ID = re.compile(r"[A-Za-z0-9_\-]{1,200}")
"""A sample id that is safe as a trajectory id as it is (no dot, separator, control
character or colon: nothing :func:`check_safe_id` rejects), checked without its per-char
loop."""
_LETTER_SCORES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_USAGE_TEMPLATE = dict.fromkeys(UsageSummary.model_fields)
_EPISODE_TEMPLATE = dict(EpisodeRecord(
    experiment_id="x", task_id="x", trajectory_id="x", reward=None).__dict__)
"""Every field with its default, in declaration order (mutable defaults replaced per
record)."""
_USAGE_FIELDS_SET = frozenset(UsageSummary.model_fields)
_EPISODE_FIELDS_SET = frozenset(EpisodeRecord.model_fields)
_setattr = object.__setattr__


class _Episodes:
    """Episodes of one log. What is the same for every sample (experiment id, headline
    scorer, evaluated model, empty record templates) is worked out once; each sample's
    values are checked here by type and range (``_int``/``_float``/``score_to_float``
    semantics, a safe trajectory id, printable free text), so the record is built without
    pydantic re-validating them: the hot path, 4,000 samples in a few tens of ms. A sample
    whose free text is not plain (control characters, an unusual id) goes through full
    validation instead (:func:`~evalatlas.records.validate.parse_record`). Inside the
    ingest's :func:`~evalatlas.records.strict.handing_over_rows` (``rows``, read once per
    log) the checked values are handed over as a
    :data:`~evalatlas.records.strict.CheckedEpisode`, which the store flattens into its
    row, instead of a record built only to be read back (~1.5 us an episode)."""

    def __init__(self, exp: ExperimentRecord, headline: str | None, model: str | None,
                 path: Path) -> None:
        self.experiment_id = exp.experiment_id
        self.headline = headline
        self.model = model
        self.path = path
        self.file = str(path)
        self.rows = rows_wanted()

    def episode(self, sample: SampleSummary, sid: str | None = None,
                epoch: int | None = None) -> EpisodeRecord:
        """One episode from a sample summary (or a full sample of a ``.json`` log);
        ``sid`` and ``epoch`` as :func:`sample_key` checked them."""
        if sid is None or epoch is None:
            sid, epoch = sample_key(sample, self.path, "sample")
        checks = Fields(self.file, f"{sid} epoch {epoch}")
        raw_scores: Any = sample.scores  # as written when not read as SampleScores
        values: dict[str, Any] = {}
        scores: dict[str, float | None] = {}
        if raw_scores:
            if not isinstance(raw_scores, dict):
                raise InputError.at(self.path, "scores is not an object", field="scores",
                                    record=f"{sid} epoch {epoch}")
            letters = _LETTER_SCORES
            for name, score in raw_scores.items():
                shape = type(score)
                value = score.value if shape is SampleScore else \
                    score.get("value") if shape is dict else score
                if type(value) is str:
                    values[name] = value
                    f = letters.get(value)
                    scores[name] = f if f is not None else score_to_float(value)
                    continue
                values[name] = _json_value(value)
                if isinstance(value, dict):
                    for key, v in value.items():
                        scores[f"{name}.{key}"] = score_to_float(v)
                else:
                    scores[name] = score_to_float(value)
        reward = scores.get(self.headline) if self.headline else None
        error = _error(sample.error) if sample.error else None
        limit = sample.limit
        if type(limit) is not dict:
            limit = None
        status, error_type = "completed", None
        if sample.completed is False:
            status = "incomplete"
        if limit:
            kind = str(limit.get("type") or "unknown")
            error_type = f"{kind}_limit"
            status = "timeout" if kind in _TIME_LIMITS else "max_steps"
        if error:
            status = "error"
            m = _EXC_NAME.match(error)
            error_type = m.group(1) if m else "error"
        retries = sample.retries
        if retries is None and isinstance(sample.error_retries, list):
            retries = len(sample.error_retries)
        model_usage = sample.model_usage
        if model_usage is None:
            model_usage = {}
        elif type(model_usage) is not dict:
            raise checks.error("model_usage", f"{describe(model_usage)}, expected an object of "
                          "per-model usage")
        extra: dict[str, Any] = {"score_values": values}
        if sample.uuid is not None:
            extra["uuid"] = sample.uuid
        if retries is not None:
            extra["retries"] = retries
        working = _seconds(sample.working_time, "working_time", checks)
        if working is not None:
            extra["working_time_s"] = working
        if model_usage:
            extra["model_usage"] = model_usage
        if limit is not None:
            extra["limit"] = limit
        if sample.message_count is not None:
            extra["message_count"] = sample.message_count
        plain = _PLAIN_ID.fullmatch(sid) is not None
        tid = f"{sid}_epoch_{epoch}" if plain else _trajectory_id(sid, epoch)
        usage, judge = self._usage(model_usage, checks)
        timestamp = _timestamp(sample.completed_at or sample.started_at)
        wall = _seconds(sample.total_time, "total_time", checks)
        if checks.notes:
            extra[NOTES_KEY] = checks.notes
        attempt = epoch - 1 if epoch > 1 else 0
        if not (plain or sid.isprintable()) or len(tid) > 255 \
                or (error is not None and not error.isprintable()) \
                or (error_type is not None and not error_type.isprintable()):
            data = {"experiment_id": self.experiment_id, "task_id": sid,
                    "trajectory_id": tid, "attempt": attempt, "reward": reward,
                    "status": status, "error_type": error_type, "error_message": error,
                    "wall_time_s": wall, "timestamp": timestamp,
                    "usage": {k: v for k, v in usage.items() if v is not None},
                    "judge_usage": None if judge is None else
                    {k: v for k, v in judge.items() if v is not None},
                    "scores": scores, "extra": extra,
                    "input_text": _sample_text(sample.input),
                    "expected_text": _sample_text(sample.target),
                    "output_text": _sample_output(sample, self.headline)}
            return parse_record(EpisodeRecord, data, file=str(self.path),
                                record=f"{sid} epoch {epoch}")
        if self.rows:
            return CheckedEpisode(
                experiment_id=self.experiment_id, task_id=sid,
                success=None if reward is None else reward > 0, reward=reward,
                outcome_source=None if reward is None else "harness",
                error_type=error_type, wall_time_s=wall, usage=CheckedUsage(**usage),
                judge_usage=None if judge is None else CheckedUsage(**judge),
                trajectory_id=tid, timestamp=timestamp, attempt=attempt, status=status,
                error_message=error, scores=scores, extra=extra,
                input_text=_given_text(sample.input),
                expected_text=_given_text(sample.target),
                output_text=_sample_output(sample, self.headline))
        d = _EPISODE_TEMPLATE.copy()  # declaration order, as validation would give
        d["experiment_id"] = self.experiment_id
        d["task_id"] = sid
        d["tool_names"] = []
        if reward is not None:
            d["success"] = reward > 0
            d["outcome_source"] = "harness"
        d["reward"] = reward
        d["error_type"] = error_type
        d["wall_time_s"] = wall
        d["usage"] = _model(UsageSummary, usage, _USAGE_FIELDS_SET)
        if judge is not None:
            d["judge_usage"] = _model(UsageSummary, judge, _USAGE_FIELDS_SET)
        d["trajectory_id"] = tid
        d["timestamp"] = timestamp
        d["attempt"] = attempt
        d["status"] = status
        d["error_message"] = error
        d["scores"] = scores
        d["extra"] = extra
        # what the sample asked, expected and got: the report's per-task view shows why
        # a sample failed (issue #21)
        d["input_text"] = _given_text(sample.input)
        d["expected_text"] = _given_text(sample.target)
        d["output_text"] = _sample_output(sample, self.headline)
        return _model(EpisodeRecord, d, _EPISODE_FIELDS_SET)

    def _usage(self, model_usage: dict[str, Any], f: Fields
               ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``(usage, judge usage)`` as field dicts of a UsageSummary (every field present).

        ``usage`` is the evaluated model's (``eval.model``); every *other* model of the
        sample's ``model_usage`` (a grader through model roles, a scorer model) is
        evaluation, not agent, usage: their sum is the judge usage (``model`` named when
        there is one other model; a cost only when every one has a cost). Token counts go
        through the one coercion rule (:func:`_checked`)."""
        model = self.model
        u = model_usage.get(model) if model else None
        usage = _USAGE_TEMPLATE.copy() if u is None else _plain_usage(u, model) \
            or _contract_usage(_checked(u, f"model_usage.{model}", f), model)
        if u is not None and len(model_usage) == 1:  # the evaluated model's alone
            return usage, None
        others = [(name, _checked(v, f"model_usage.{name}", f))
                  for name, v in model_usage.items() if name != model]
        if not others:
            return usage, None
        judge = _sum_usage([_contract_usage(c, name) for name, c in others])
        return usage, judge


_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
               "input_tokens_cache_write", "reasoning_tokens")


def _checked(u: Any, where: str, f: Fields) -> dict[str, Any]:
    """One model's Inspect ``ModelUsage`` with checked values. JSON ints >= 0 pass as
    they are (the hot path); anything else goes through the one coercion rule
    (:mod:`evalatlas.adapters.coerce`): a string, a boolean or a fraction quarantines the
    sample naming the field, a negative count is missing with a note."""
    if type(u) is not dict:
        raise f.error(where, f"{describe(u)}, expected an object of token counts")
    out: dict[str, Any] = {}
    for key in _TOKEN_KEYS:
        v = u.get(key)
        out[key] = v if v is None or (type(v) is int and v >= 0) \
            else f.count(v, f"{where}.{key}")
    cost = u.get("total_cost")
    out["total_cost"] = cost if cost is None or (
        type(cost) is float and 0 <= cost < math.inf) or (type(cost) is int and cost >= 0) \
        else f.amount(cost, f"{where}.total_cost")
    return out


def _plain_usage(u: Any, model: str | None) -> dict[str, Any] | None:
    """:func:`_contract_usage` of :func:`_checked` ``u`` when all its values pass as
    they are (token counts that are JSON ints >= 0 or absent, a cost that is a finite
    number >= 0 or absent), else None (the caller checks it value by value): the hot
    path, without the intermediate dict."""
    if type(u) is not dict:
        return None
    get = u.get
    inp, out, total = get("input_tokens"), get("output_tokens"), get("total_tokens")
    read, write = get("input_tokens_cache_read"), get("input_tokens_cache_write")
    reasoning, cost = get("reasoning_tokens"), get("total_cost")
    for v in (inp, out, total, read, write, reasoning):
        if v is not None and not (type(v) is int and v >= 0):
            return None
    if cost is not None and not ((type(cost) is float and 0 <= cost < math.inf)
                                 or (type(cost) is int and cost >= 0)):
        return None
    return _usage_fields(inp, out, total, read, write, reasoning, cost, model)


def _contract_usage(c: dict[str, Any], model: str | None) -> dict[str, Any]:
    """A checked Inspect usage (:func:`_checked`) as UsageSummary fields."""
    return _usage_fields(c["input_tokens"], c["output_tokens"], c["total_tokens"],
                         c["input_tokens_cache_read"], c["input_tokens_cache_write"],
                         c["reasoning_tokens"], c["total_cost"], model)


def _usage_fields(inp: int | None, out: int | None, total: int | None, read: int | None,
                  write: int | None, reasoning: int | None, cost: float | None,
                  model: str | None) -> dict[str, Any]:
    """Inspect's checked token counts and cost as UsageSummary fields: ``input_tokens``
    plus cache reads and writes as ``prompt_tokens`` (the contract's OpenAI convention,
    so ``total = prompt + completion`` as Inspect's own total); a cost is ``reported``."""
    d = _USAGE_TEMPLATE.copy()
    prompt = None if inp is None else inp + (read or 0) + (write or 0)
    if total is None and prompt is not None and out is not None:
        total = prompt + out
    d["prompt_tokens"] = prompt
    d["completion_tokens"] = out
    d["total_tokens"] = total
    d["cached_tokens"] = read
    d["cache_creation_tokens"] = write
    d["reasoning_tokens"] = reasoning
    if cost is not None:
        d["total_cost_usd"] = float(cost)
        d["cost_source"] = "reported"
    d["model"] = model
    return d


_SUMMED = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
           "cache_creation_tokens", "reasoning_tokens", "total_cost_usd")


def _sum_usage(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Several models' usage as one: a field is the sum when every part has it (else
    missing: a partial sum would read as the whole); ``model`` only when there is one."""
    d = _USAGE_TEMPLATE.copy()
    for key in _SUMMED:
        values = [p[key] for p in parts]
        if all(v is not None for v in values):
            d[key] = sum(values)
    if d["total_cost_usd"] is not None:
        d["cost_source"] = "reported"
    d["model"] = parts[0]["model"] if len(parts) == 1 else None
    return d


def _seconds(x: Any, field: str, f: Fields) -> float | None:
    """A duration in seconds: a finite number >= 0 (the one coercion rule)."""
    if (type(x) is float and 0 <= x < math.inf) or (type(x) is int and x >= 0):
        return float(x)
    return f.amount(x, field)


def sample_key(sample: SampleSummary, path: Path, record: str) -> tuple[str, int]:
    """A sample's ``(id, epoch)``, checked: Inspect writes ``id: int | str`` and
    ``epoch: int`` counted from 1 (absent: 1). An object as id, or an epoch ``"2"``,
    ``true`` or 0 is refused: read as epoch 1 it would overwrite the real epoch-1
    sample."""
    sid, epoch = sample.id, sample.epoch
    if epoch is None:  # absent (a .json log's full sample may leave it out): epoch 1
        epoch = 1
    if type(epoch) is int and epoch >= 1:
        if type(sid) is str and sid:
            return sid, epoch
        if type(sid) is int:
            return str(sid), epoch
    f = Fields(path, record)
    sid = f.required(f.identifier(sid, "id"), "id", "a sample id")
    if type(epoch) is int and epoch < 1:
        raise f.error("epoch", f"epoch {epoch}: Inspect counts epochs from 1")
    epoch = f.required(f.count(epoch, "epoch"), "epoch", "an epoch number")
    return sid, epoch


def _model(cls: type[Any], values: dict[str, Any], fields: frozenset[str]) -> Any:
    """What pydantic's ``model_construct`` does for a complete set of field values (every
    field given, in declaration order), without its per-field bookkeeping (it would look
    up each default, ``inspect.signature`` per default factory: most of the cost)."""
    obj = object.__new__(cls)
    _setattr(obj, "__dict__", values)
    _setattr(obj, "__pydantic_fields_set__", set(fields))
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


_TOTALLED = ("input_tokens", "output_tokens", "total_tokens")


def _add(total: dict[str, Any], u: Any) -> None:
    """Add one model's Inspect usage to ``total`` (counts that are JSON ints >= 0, a cost
    that is a finite number >= 0; a missing or bad value makes that total unknown)."""
    if type(u) is not dict:
        u = {}
    for key in _TOTALLED:
        v, t = u.get(key), total[key]
        total[key] = t + v if t is not None and type(v) is int and v >= 0 else None
    v, t = u.get("total_cost"), total["total_cost"]
    total["total_cost"] = t + v if t is not None and type(v) in (int, float) \
        and 0 <= v < math.inf else None


def usage_totals(samples: Any, model: str | None) -> dict[str, Any]:
    """The run's usage, agent plus evaluation, summed over the per-sample ``model_usage``
    of the samples kept (one per id and epoch), by model: ``agent`` is the evaluated
    model (``eval.model``), ``evaluation`` every other model (a grader through model
    roles, a scorer model), ``total`` both. Inspect's header (``stats.model_usage``)
    also counts retried attempts, so it can be higher; these sums are what the stored
    episodes hold (``usage`` and ``judge_usage``)."""
    zero = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "total_cost": 0.0}
    agent, total = dict(zero), dict(zero)
    evaluation: dict[str, dict[str, Any]] = {}
    for sample in samples:
        usage = sample.model_usage
        if type(usage) is not dict:
            continue
        for name, u in usage.items():
            _add(agent if name == model else evaluation.setdefault(name, dict(zero)), u)
            _add(total, u)
    any_cost = any(type(u) is dict and u.get("total_cost") is not None
                   for sample in samples if type(sample.model_usage) is dict
                   for u in sample.model_usage.values())
    if not any_cost:  # no model reported a cost: unknown, not 0
        for t in (agent, total, *evaluation.values()):
            t["total_cost"] = None
    return {"agent": {"model": model, **agent}, "evaluation": evaluation, "total": total,
            "source": "sum of per-sample model_usage (stats.model_usage in the header "
                      "also counts retries)"}


def read_inspect(path: Path) -> Iterator[Item]:
    """Experiment first, then one episode per (sample id, epoch), the last entry winning."""
    try:
        log = read_log(path)
    except InputError as exc:
        yield exc.problem
        return
    samples = log.get("samples") or []
    latest: dict[tuple[str, int], SampleSummary] = {}
    problems: list[Problem] = []
    if not isinstance(samples, list):
        problems.append(Problem(str(path), f"{describe(samples)}, expected a list of samples",
                                field="samples"))
        samples = []
    for i, sample in enumerate(samples):
        if type(sample) is not SampleSummary:
            problems.append(Problem(str(path), f"{describe(sample)}, expected a sample object",
                                    record=f"samples[{i}]"))
            continue
        try:
            key = sample_key(sample, path, f"samples[{i}]")
        except InputError as exc:
            problems.append(exc.problem)
            continue
        latest[key] = sample  # re-logged: last wins
    model = log["eval"].get("model") if isinstance(log["eval"].get("model"), str) else None
    try:
        exp = experiment_of(log, path, usage_totals(latest.values(), model))
    except InputError as exc:
        yield exc.problem
        return
    except (ValueError, TypeError, AttributeError) as exc:
        yield Problem(str(path), "not a readable Inspect log: a header field has an "
                      f"unexpected type ({type(exc).__name__}: {exc})")
        return
    yield exp
    yield from problems
    build = _Episodes(exp, headline_scorer(log), exp.agent.llm_model, path)
    episode = build.episode
    for (sid, epoch), sample in latest.items():
        try:
            yield episode(sample, sid, epoch)
        except InputError as exc:
            yield exc.problem


ADAPTER = Adapter(
    name="inspect",
    kind="file",
    detect=_detect,
    read=read_inspect,
    priority=15,
    rows=True,
    description="Inspect AI logs (.eval zip, deflate or zstd, and .json; in-progress logs "
    "via _journal/): one episode per sample and epoch, scorers as named scores",
)
