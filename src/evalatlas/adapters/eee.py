"""Every Eval Ever (EEE) files: aggregate records (``<uuid>.json``) and instance-level
records (``<uuid>_samples.jsonl``), schema 0.3.0 (older aggregates read leniently).

- **Aggregate** -> one experiment per ``evaluation_results`` entry (each is one
  benchmark/metric): model (``model_info``), evaluation library -> framework name and
  version, ``metric_config`` -> the published metric's name, ``score_details.score`` with
  ``uncertainty`` (standard error, confidence interval, ``num_samples``) ->
  :class:`~evalatlas.records.models.PublishedMetric` (source ``eee``), so ``summary``
  shows the published score next to evalatlas's mean reward over the instances.
- **Instances** (the companion ``<uuid>_samples.jsonl`` beside the aggregate, read with
  it; or a samples file on its own) -> one episode per row: ``sample_id`` -> task,
  ``evaluation.score`` -> reward, ``is_correct`` -> ``scores["is_correct"]`` (success is
  ``reward > 0`` by the record contract; for 0/1 scores the two agree),
  ``token_usage`` -> usage, ``performance.latency_ms`` -> wall time,
  ``error`` -> error message, ``evaluation.num_turns`` -> ``n_steps``. The attempt is
  ``metadata.attempt`` when given, else the row's repeat index of its sample id.
- Files written by ``evalatlas export eee`` carry the experiment id, agent identity,
  labels and per-episode fields (trajectory id, status, cost, steps, named scores) in
  ``additional_details`` / ``metadata``; they are read back, so export -> ingest keeps
  ``summary``'s numbers (episodes with an unknown outcome are not exported: EEE
  requires a score).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import Fields
from evalatlas.errors import InputError, Problem, UnsafeIdError
from evalatlas.records.ids import check_safe_id, experiment_id_for
from evalatlas.records.jsonio import parse_jsonl_line, read_json_file
from evalatlas.records.models import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    ExperimentRecord,
    PublishedMetric,
)
from evalatlas.records.validate import format_validation_error, parse_record

SAMPLES_SUFFIX = "_samples.jsonl"
_ID_NAMESPACE = "every-eval-ever"


def _is_aggregate_head(head: bytes) -> bool:
    if b'"$schema"' in head:  # the JSON Schema itself, not a record
        return False
    return (b'"schema_version"' in head and b'"evaluation_id"' in head
            and (b'"model_info"' in head or b'"source_metadata"' in head))


def _detect_aggregate(path: Path) -> bool:
    return path.name.lower().endswith(".json") and _is_aggregate_head(head_bytes(path, 8192))


def _companion_aggregate(samples: Path) -> Path:
    return samples.with_name(samples.name[: -len(SAMPLES_SUFFIX)] + ".json")


def _detect_samples(path: Path) -> bool:
    """An instance file with no aggregate beside it (the aggregate reads its companion)."""
    if not path.name.endswith(SAMPLES_SUFFIX) or _companion_aggregate(path).is_file():
        return False
    head = head_bytes(path, 8192)
    return b'"schema_version"' in head and b'"sample_id"' in head


# --- small helpers -------------------------------------------------------------------


def _details(obj: Any) -> dict[str, Any]:
    d = obj.get("additional_details") if isinstance(obj, dict) else None
    return d if isinstance(d, dict) else {}


# --- aggregate -> experiments ----------------------------------------------------------


def _agent(model_info: dict[str, Any], library: str) -> AgentInfo:
    d = _details(model_info)
    model_id = str(model_info.get("id") or model_info.get("name") or "unknown")
    if d.get("agent_id") and d.get("agent_config"):  # written by `evalatlas export eee`
        try:
            config = json.loads(d["agent_config"])
        except ValueError:
            config = {}
        git_dirty = d.get("agent_git_is_dirty")
        return AgentInfo(
            agent_id=str(d["agent_id"]), name=d.get("agent_name"),
            config_type=str(d.get("agent_config_type") or "unknown"),
            config=config if isinstance(config, dict) else {},
            llm_model=str(model_info.get("name") or model_id),
            framework_version=str(d.get("agent_framework_version") or "unknown"),
            git_commit=d.get("agent_git_commit"),
            git_is_dirty=None if git_dirty is None else git_dirty == "true",
            description=d.get("agent_description"))
    return AgentInfo(name=model_id, config={"model": model_id, "eval_library": library},
                     config_type="every-eval-ever", llm_model=model_id)


def _published(result: dict[str, Any], notes: Fields, where: str) -> PublishedMetric:
    """The published score of one evaluation result. The schema writes these as JSON
    numbers: anything else is missing with a note (the one coercion rule, leniently:
    a bad published value never loses the file)."""
    mc = notes.mapping(result.get("metric_config"), f"{where}.metric_config")
    sd = notes.mapping(result.get("score_details"), f"{where}.score_details")
    unc = notes.mapping(sd.get("uncertainty"), f"{where}.score_details.uncertainty")
    u = f"{where}.score_details.uncertainty"
    se = notes.mapping(unc.get("standard_error"), f"{u}.standard_error").get("value")
    ci = notes.mapping(unc.get("confidence_interval"), f"{u}.confidence_interval")
    level = notes.number(ci.get("confidence_level"), f"{u}.confidence_interval"
                         ".confidence_level")
    metric = str(mc.get("metric_id") or mc.get("metric_name") or "score")
    return PublishedMetric(
        source="eee", metric=metric,
        value=notes.number(sd.get("score"), f"{where}.score_details.score"), score="reward",
        name=str(result.get("evaluation_result_id") or result.get("evaluation_name") or ""),
        reducer=None, stderr=notes.amount(se, f"{u}.standard_error.value"),
        ci_low=notes.number(ci.get("lower"), f"{u}.confidence_interval.lower"),
        ci_high=notes.number(ci.get("upper"), f"{u}.confidence_interval.upper"),
        confidence=level if level is not None and 0 < level < 1 else None,
        n=notes.count(unc.get("num_samples"), f"{u}.num_samples"),
        # an EEE score is the mean of its instance scores: recompute it as one
        params={"recompute_as": "mean", "metric_kind": mc.get("metric_kind"),
                "lower_is_better": mc.get("lower_is_better")})


def experiments_of(data: dict[str, Any], path: Path) -> list[tuple[str, ExperimentRecord]]:
    """``(evaluation result key, experiment)`` for each entry of ``evaluation_results``.

    A value of the wrong type in this metadata (an object where a number goes, a list
    where an object goes) is missing with a note in ``extra["coercion_notes"]``."""
    top = Fields(path, strict=False)
    meta = top.mapping(data.get("source_metadata"), "source_metadata")
    meta_d = _details(meta)
    lib = top.mapping(data.get("eval_library"), "eval_library")
    library = str(lib.get("name") or "unknown")
    model_info = top.mapping(data.get("model_info"), "model_info")
    agent = _agent(model_info, library)
    eval_id = str(data.get("evaluation_id") or path.stem)
    raw_results = data.get("evaluation_results")
    if not isinstance(raw_results, list):
        raw_results = []
    results = [r for r in raw_results if isinstance(r, dict)]
    labels = {k[len("label."):]: str(v) for k, v in meta_d.items() if k.startswith("label.")}
    ts = top.number(data.get("evaluation_timestamp"), "evaluation_timestamp", strings=True)
    out = []
    for i, result in enumerate(results):
        notes = Fields(path, strict=False)
        notes.notes.update(top.notes)
        key = str(result.get("evaluation_result_id") or result.get("evaluation_name") or "")
        name = str(result.get("evaluation_name") or key or "unknown")
        where = f"evaluation_results.{i}"
        src = notes.mapping(result.get("source_data"), f"{where}.source_data")
        src_d = _details(src)
        if len(results) == 1 and meta_d.get("experiment_id"):
            exp_id, exp_name = str(meta_d["experiment_id"]), str(
                meta_d.get("experiment_name") or eval_id)
        else:
            exp_id = experiment_id_for(f"{eval_id}/{key}", _ID_NAMESPACE)
            exp_name = eval_id if len(results) == 1 else f"{eval_id}/{name}"
        published = _published(result, notes, where)
        n_tasks = notes.count(src_d.get("n_tasks"), f"{where}.source_data"
                              ".additional_details.n_tasks", strings=True)
        if n_tasks is None:
            n_tasks = published.n or 0
        when = ts if ts is not None else notes.number(
            result.get("evaluation_timestamp"), f"{where}.evaluation_timestamp", strings=True)
        exp = ExperimentRecord(
            experiment_id=exp_id, experiment_name=exp_name, timestamp=when,
            framework_name=library, framework_version=str(lib.get("version") or "unknown"),
            agent=agent, benchmark_name=name,
            benchmark_version=src_d.get("benchmark_version"),
            benchmark_subset=BenchmarkSubset(
                name=str(src_d.get("subset") or src.get("dataset_name") or name),
                n_tasks=n_tasks, filter=src_d.get("subset_filter")),
            labels=labels,
            extra=notes.attach(
                {"eee": {"schema_version": data.get("schema_version"),
                         "evaluation_id": eval_id, "evaluation_result_id": key or None,
                         "model_id": model_info.get("id"),
                         "source_name": meta.get("source_name"),
                         "source_organization_name": meta.get("source_organization_name"),
                         "evaluator_relationship": meta.get("evaluator_relationship")}}),
            published_metrics=[published])
        out.append((key, exp))
    return out


# --- instances -> episodes -----------------------------------------------------------


def _usage(row: dict[str, Any], meta: dict[str, Any], f: Fields) -> dict[str, Any]:
    tu = f.mapping(row.get("token_usage"), "token_usage")
    usage = {
        "prompt_tokens": f.count(tu.get("input_tokens"), "token_usage.input_tokens"),
        "completion_tokens": f.count(tu.get("output_tokens"), "token_usage.output_tokens"),
        "total_tokens": f.count(tu.get("total_tokens"), "token_usage.total_tokens"),
        "cached_tokens": f.count(tu.get("input_tokens_cache_read"),
                                 "token_usage.input_tokens_cache_read"),
        "cache_creation_tokens": f.count(tu.get("input_tokens_cache_write"),
                                         "token_usage.input_tokens_cache_write"),
        "reasoning_tokens": f.count(tu.get("reasoning_tokens"),
                                    "token_usage.reasoning_tokens"),
        "total_cost_usd": f.amount(meta.get("cost_usd"), "metadata.cost_usd", strings=True),
        "cost_source": meta.get("cost_source") if meta.get("cost_usd") is not None else None,
        "n_llm_calls": f.count(meta.get("n_llm_calls"), "metadata.n_llm_calls",
                               strings=True),
        "model": meta.get("usage_model"),
    }
    return {k: v for k, v in usage.items() if v is not None}


def _trajectory_id(sample_id: str, attempt: int) -> str:
    tid = f"{sample_id}_attempt_{attempt}" if attempt else sample_id
    try:
        return check_safe_id(tid)
    except UnsafeIdError:
        import hashlib
        digest = hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:16]
        return f"sample-{digest}_attempt_{attempt}"


_STATUSES = {"completed", "error", "timeout", "max_steps", "cancelled", "incomplete",
             "skipped"}


def episode_of(row: dict[str, Any], exp_id: str, attempt_seen: int,
               f: Fields | None = None) -> dict[str, Any]:
    """The episode record (as a dict) of one instance row, every value through the one
    coercion rule (:mod:`evalatlas.adapters.coerce`): the schema's numbers
    (``evaluation.score``, ``token_usage``, ``performance``) must be JSON numbers, a
    string, a boolean or an object there quarantines the row naming the field, a
    ``"NaN"`` score is an unknown outcome with a note; ``metadata`` values are strings
    by the schema and are parsed."""
    f = f or Fields(None)
    ev = f.mapping(row.get("evaluation"), "evaluation")
    meta = f.mapping(row.get("metadata"), "metadata")
    perf = f.mapping(row.get("performance"), "performance")
    sid = f.identifier(row.get("sample_id"), "sample_id")
    attempt = f.count(meta.get("attempt"), "metadata.attempt", strings=True)
    if attempt is None:
        attempt = attempt_seen
    scores: dict[str, float | None] = {
        k[len("score."):]: f.number(v, f"metadata.{k}", strings=True)
        for k, v in meta.items() if k.startswith("score.")}
    is_correct = f.boolean(ev.get("is_correct"), "evaluation.is_correct")
    if is_correct is not None and "is_correct" not in scores:
        scores["is_correct"] = 1.0 if is_correct else 0.0
    error = row.get("error")
    status = meta.get("status") if isinstance(meta.get("status"), str) \
        and meta["status"] in _STATUSES else (
        "error" if error else "completed")
    latency = f.amount(perf.get("latency_ms"), "performance.latency_ms")
    n_steps = f.count(meta.get("n_steps"), "metadata.n_steps", strings=True)
    if n_steps is None:
        n_steps = f.count(ev.get("num_turns"), "evaluation.num_turns")
    error_type = meta.get("error_type")
    message = None
    if isinstance(error, str) and error:
        message = error
        if error_type and error.startswith(f"{error_type}: "):
            message = error[len(error_type) + 2:]
        elif error in (error_type, status):
            message = None
    raw_input = row.get("input")
    inp = raw_input if isinstance(raw_input, dict) else {}
    source = meta.get("input_source")
    ref = inp.get("reference")
    sid = str(sid)
    return {
        "experiment_id": exp_id, "task_id": sid,
        "trajectory_id": str(meta.get("trajectory_id") or _trajectory_id(sid, attempt)),
        "attempt": attempt, "reward": f.number(ev.get("score"), "evaluation.score"),
        "status": status,
        "error_type": error_type, "error_message": message,
        "wall_time_s": None if latency is None else latency / 1000.0,
        "n_steps": n_steps,
        "n_agent_steps": f.count(meta.get("n_agent_steps"), "metadata.n_agent_steps",
                                 strings=True),
        "n_env_steps": f.count(meta.get("n_env_steps"), "metadata.n_env_steps",
                               strings=True),
        "timestamp": f.number(meta.get("timestamp"), "metadata.timestamp", strings=True),
        "seed": f.count(meta.get("seed"), "metadata.seed", strings=True),
        "split": meta.get("split"), "task_version_hash": meta.get("task_version_hash"),
        "usage": _usage(row, meta, f), "scores": scores,
        "input_text": inp.get("raw") if source in (None, "input_text") else None,
        "task_description": inp.get("raw") if source == "task_description" else None,
        "expected_text": ref[0] if isinstance(ref, list) and len(ref) == 1
        and isinstance(ref[0], str) and source is not None else None,
        "verifier": {"ref": meta["verifier_ref"]} if meta.get("verifier_ref") else None,
        "extra": f.attach({k: v for k, v in (("interaction_type", row.get("interaction_type")),
                                             ("sample_hash", row.get("sample_hash"))) if v}),
    }


def read_instances(path: Path, experiments: dict[str, str], default: str) -> Iterator[Item]:
    """Episodes of an instance file; ``experiments`` maps a row's evaluation result id
    (or name) to an experiment id, ``default`` is used when it names none."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield Problem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    seen: dict[tuple[str, str], int] = {}
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            row = parse_jsonl_line(raw, path, lineno)
            if isinstance(row, Problem):
                yield row
                continue
            if not isinstance(row, dict) or row.get("sample_id") is None:
                yield Problem(str(path), "expected an instance record with a sample_id",
                              line=lineno)
                continue
            exp_id = experiments.get(str(row.get("evaluation_result_id") or "")) \
                or experiments.get(str(row.get("evaluation_name") or "")) or default
            sid = row["sample_id"]
            key = (exp_id, str(sid) if isinstance(sid, str | int) else "")
            n = seen.get(key, 0)
            seen[key] = n + 1
            fields = Fields(path, sid if isinstance(sid, str) else None, line=lineno)
            try:
                yield parse_record(EpisodeRecord, episode_of(row, exp_id, n, fields),
                                   file=str(path), line=lineno)
            except InputError as exc:
                yield exc.problem


def read_aggregate(path: Path) -> Iterator[Item]:
    try:
        data = read_json_file(path)
    except InputError as exc:
        yield exc.problem
        return
    if not isinstance(data, dict):
        yield Problem(str(path), "expected an EEE aggregate object")
        return
    try:
        pairs = experiments_of(data, path)
    except InputError as exc:
        yield exc.problem
        return
    except ValidationError as exc:  # a metadata value the contract refuses
        field, reason = format_validation_error(exc)
        yield Problem(str(path), f"not a readable EEE aggregate: {reason}", field=field)
        return
    if not pairs:
        yield Problem(str(path), "no evaluation_results", field="evaluation_results")
        return
    for _, exp in pairs:
        yield exp
    samples = path.with_name(path.stem + SAMPLES_SUFFIX)
    if samples.is_file():
        mapping = {key: exp.experiment_id for key, exp in pairs}
        mapping.update({exp.benchmark_name: exp.experiment_id for _, exp in pairs})
        yield from read_instances(samples, mapping, pairs[0][1].experiment_id)


def read_samples_alone(path: Path) -> Iterator[Item]:
    """A samples file without its aggregate: one experiment per evaluation id."""
    first: dict[str, Any] | None = None
    try:
        with path.open("rb") as fh:
            for raw in fh:
                if raw.strip():
                    first = json.loads(raw)
                    break
    except (OSError, ValueError) as exc:
        yield Problem(str(path), f"cannot read the first record: {exc}")
        return
    if not isinstance(first, dict):
        yield Problem(str(path), "empty or not an instance file")
        return
    eval_id = str(first.get("evaluation_id") or path.stem)
    model = str(first.get("model_id") or "unknown")
    name = str(first.get("evaluation_name") or "unknown")
    exp = ExperimentRecord(
        experiment_id=experiment_id_for(f"{eval_id}/{first.get('evaluation_result_id')}",
                                        _ID_NAMESPACE),
        experiment_name=eval_id, framework_name="unknown",
        agent=AgentInfo(name=model, config={"model": model}, config_type="every-eval-ever",
                        llm_model=model),
        benchmark_name=name, benchmark_subset=BenchmarkSubset(name=name, n_tasks=0),
        extra={"eee": {"evaluation_id": eval_id, "aggregate": "missing"}})
    yield exp
    yield from read_instances(path, {}, exp.experiment_id)


ADAPTERS = (
    Adapter(name="eee", kind="file", detect=_detect_aggregate, read=read_aggregate,
            priority=18, description="Every Eval Ever aggregate (<uuid>.json, schema 0.3.0; "
            "older read leniently) with its <uuid>_samples.jsonl instances"),
    Adapter(name="eee-samples", kind="file", detect=_detect_samples, read=read_samples_alone,
            priority=18, description="Every Eval Ever instance file (*_samples.jsonl) "
            "without its aggregate"),
)
