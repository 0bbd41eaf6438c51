"""Upstream framework-comparison results JSON -> records (seed 003, reference section 13).

One upstream file (``dataclasses.asdict(FrameworkEvaluation)``) holds one framework x
scenario x mode x run. It becomes, following the framework-comparison episode convention
(docs/framework-comparison.md):

- one :class:`ExperimentRecord` per framework x scenario x mode, ``experiment_name =
  f"{framework}/{scenario}/{mode}"`` with ``framework`` the upstream slug
  (``"Pydantic AI"`` -> ``pydantic_ai``) and ``experiment_id`` hashed over the results
  file's directory (the run output directory), so the ``_runK`` files of one directory
  are attempts of one experiment; code quality goes to ``extra["code_quality"]`` and the
  LLM review to ``extra["code_review"]``;
- one :class:`EpisodeRecord` per question: ``attempt = run_id``, ``reward = (correctness -
  1) / 4`` (``None`` with ``extra["reward_missing"]`` when there is no judge score), judge
  scores, retrieval
  precision/recall and every per-question ``extra_metrics`` entry (booleans as 0/1) as
  named ``scores``.

Where the file's own values are placeholders they are not taken at face value: a timed-out
question (``model_name == "timeout"``) or a failed query (``"error"``) gets status
``timeout`` / ``error``, ``reward`` 0, judge scores ``None``, no latency for an error
(upstream writes 0.0; a timeout keeps the timeout value) (the aggregates score them 0,
as the seed says) and unknown tokens and cost (``None``; upstream writes 0 because what was
spent before the timeout is lost, quirk 1). Retrieval precision and recall are recomputed
from the source lists with :mod:`evalatlas.metrics.retrieval`; a stored value that disagrees
is kept in ``extra["upstream_scores"]``. The profile metrics cannot be recomputed (the
file has no tool traces, quirk 14) and are used as given.

A run-averaged file (``run_id == -1``) is not ingested (its runs are the ``_runK`` files
beside it; ingesting both would count every answer twice) and is reported as a problem;
``evalatlas compare-frameworks FILE`` reads it directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import Fields, Refused, number
from evalatlas.adapters.frameworks import safe_id, trajectory_id_for
from evalatlas.errors import InputError, Problem
from evalatlas.metrics.outcomes import reward_from_correctness
from evalatlas.metrics.retrieval import retrieval_precision, retrieval_recall
from evalatlas.records.ids import experiment_id_for
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.models import AgentInfo, BenchmarkSubset, EpisodeRecord, ExperimentRecord
from evalatlas.records.validate import parse_record

TIMEOUT_ANSWER = "Query timed out before producing an answer."
ERROR_ANSWER = "Framework query failed before producing an answer."
STANDARD_SCORES = ("correctness", "completeness", "faithfulness", "retrieval_precision",
                   "retrieval_recall")
_REQUIRED = ("framework_name", "scenario_name", "questions")


def framework_slug(name: str) -> str:
    """Upstream's file-name slug: ``name.lower().replace(" ", "_")``, made id-safe."""
    return safe_id(str(name).strip().lower().replace(" ", "_"))


def _detect(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    head = head_bytes(path, 2048)
    return b'"framework_name"' in head and b'"scenario_name"' in head


def question_status(q: dict[str, Any]) -> str:
    """``timeout`` / ``error`` / ``completed`` from upstream's placeholder markers."""
    model = q.get("model_name")
    if model == "timeout" or q.get("actual_answer") == TIMEOUT_ANSWER:
        return "timeout"
    if model == "error" or q.get("actual_answer") == ERROR_ANSWER:
        return "error"
    return "completed"


def _str_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError("expected a list of strings")
    return [str(v) for v in value]


def episode_from_question(
    q: dict[str, Any], *, experiment_id: str, run: int | None, file: str,
) -> EpisodeRecord:
    """One upstream ``QuestionEvaluation`` -> an EpisodeRecord (see module docstring)."""
    qid = q.get("question_id")
    if qid is None or str(qid) == "":
        raise InputError.at(file, "question has no question_id", field="question_id")
    qid = str(qid)
    f = Fields(file, qid)  # the one coercion rule (adapters/coerce.py)
    status = question_status(q)
    failed = status != "completed"
    try:
        retrieved = _str_list(q.get("sources_retrieved"))
        expected = _str_list(q.get("sources_expected"))
    except TypeError as exc:
        raise InputError.at(file, str(exc), field="sources_retrieved", record=qid) from None
    scores: dict[str, float | None] = {}
    upstream: dict[str, Any] = {}
    for name in ("correctness", "completeness", "faithfulness"):
        raw = q.get(f"{name}_score")
        value = f.number(raw, f"{name}_score")
        scores[name] = None if failed else value
        if failed and raw is not None:
            upstream[name] = raw
    for name, fn in (("retrieval_precision", retrieval_precision),
                     ("retrieval_recall", retrieval_recall)):
        stored = f.number(q.get(name), name)
        if retrieved is not None and expected is not None:
            value = fn(retrieved, expected)
            if stored is not None and abs(stored - value) > 1e-9:
                upstream[name] = stored
            scores[name] = value
        else:
            scores[name] = stored
    extra_metrics = q.get("extra_metrics") or {}
    if not isinstance(extra_metrics, dict):
        raise InputError.at(file, "expected an object", field="extra_metrics", record=qid)
    strings: dict[str, Any] = {}
    for k, v in extra_metrics.items():
        if str(k) in STANDARD_SCORES:
            continue
        if isinstance(v, bool):  # upstream writes flags here: documented as 0/1
            scores[str(k)] = 1.0 if v else 0.0
            continue
        try:
            n = number(v)
        except Refused:  # text (a label, a list): kept as written, not a score
            strings[str(k)] = v
            continue
        if n.note:
            f.note(f"extra_metrics.{k}", n.note)
        if v is not None:
            scores[str(k)] = n.value
    corr = scores.get("correctness")
    extra: dict[str, Any] = {}
    reward: float | None
    if failed:
        reward = 0.0
    elif corr is None:
        reward = None  # an unknown outcome, not a failure (record contract)
        extra["reward_missing"] = True
    else:
        reward = reward_from_correctness(corr)
    if q.get("judge_reasoning"):
        extra["judge_reasoning"] = q["judge_reasoning"]
    if upstream:
        extra["upstream_scores"] = upstream
    if strings:
        extra["extra_metrics_text"] = strings
    model = q.get("model_name")
    usage: dict[str, Any] = {}
    if not failed:
        usage = {
            "prompt_tokens": f.count(q.get("prompt_tokens"), "prompt_tokens"),
            "completion_tokens": f.count(q.get("completion_tokens"), "completion_tokens"),
            "total_tokens": f.count(q.get("total_tokens"), "total_tokens"),
            "total_cost_usd": f.amount(q.get("estimated_cost_usd"), "estimated_cost_usd"),
            "model": str(model) if model else None,
        }
    latency = f.amount(q.get("latency_seconds"), "latency_seconds")
    data = {
        "experiment_id": experiment_id,
        "task_id": qid,
        "trajectory_id": trajectory_id_for(qid, run if run is not None and run >= 0 else 0),
        "attempt": run if run is not None and run >= 0 else None,
        "reward": reward,
        # a failed query scores 0 by the comparison's own rule; otherwise the outcome is
        # the correctness the input's judge already gave (issue 10: it says 'judge')
        "outcome_source": None if reward is None else ("harness" if failed else "judge"),
        "status": status,
        "error_type": status if failed else None,
        "error_message": q.get("actual_answer") if failed else None,
        # a failed query's 0.0 latency is a placeholder (nothing was timed): unknown
        "wall_time_s": None if status == "error" else latency,
        "usage": {k: v for k, v in usage.items() if v is not None},
        "input_text": q.get("question_text"),
        "output_text": q.get("actual_answer"),
        "expected_text": q.get("expected_answer"),
        "retrieved_sources": retrieved,
        "expected_sources": expected,
        "scores": scores,
        "extra": f.attach(extra),
    }
    return parse_record(EpisodeRecord, data, file=file, record=qid)


def experiment_from_results(data: dict[str, Any], path: Path) -> ExperimentRecord:
    """The experiment record of one upstream results file."""
    file = str(path)
    display = str(data["framework_name"])
    framework = framework_slug(display)
    scenario = str(data["scenario_name"])
    mode = str(data.get("evaluation_mode") or "baseline")
    profile = str(data.get("evaluation_profile") or "default")
    name = f"{framework}/{scenario}/{mode}"
    questions = data.get("questions") or []
    models = sorted({str(q.get("model_name")) for q in questions if isinstance(q, dict)
                     and q.get("model_name") not in (None, "timeout", "error")})
    extra: dict[str, Any] = {
        "framework_display_name": display,
        "scenario_type": data.get("scenario_type"),
        "evaluation_profile": profile,
        "results_files": [file],
        "upstream_aggregates": {k: data.get(k) for k in (
            "avg_latency", "total_tokens", "total_cost_usd", "avg_correctness",
            "avg_completeness", "avg_faithfulness", "avg_retrieval_precision",
            "avg_retrieval_recall", "extra_aggregates", "run_id", "run_count") if k in data},
    }
    cq = data.get("code_quality")
    if isinstance(cq, dict):
        static = cq.get("static_metrics")
        if isinstance(static, dict):
            extra["code_quality"] = {"source_file": cq.get("source_file"),
                                     "source_sloc": cq.get("source_sloc"), **static}
        if isinstance(cq.get("code_review"), dict):
            extra["code_review"] = cq["code_review"]
    return parse_record(ExperimentRecord, {
        "experiment_id": experiment_id_for(name, str(path.resolve().parent)),
        "experiment_name": name,
        "framework_name": "poc-ai-workflow-frameworks",
        "agent": AgentInfo(name=framework, llm_model=models[0] if len(models) == 1 else None,
                           config={"framework": framework, "mode": mode,
                                   "models": models}).model_dump(),
        "benchmark_name": scenario,
        "benchmark_subset": BenchmarkSubset(name=scenario, n_tasks=len(questions)).model_dump(),
        "labels": {"framework": framework, "scenario": scenario, "mode": mode,
                   "profile": profile},
        "extra": extra,
    }, file=file)


def read_results_file(path: Path, *, allow_averaged: bool = False) -> Iterator[Item]:
    """Stream the experiment and episodes of one results file; problems for bad parts."""
    file = str(path)
    try:
        data = read_json_file(path)
    except InputError as exc:
        yield exc.problem
        return
    if not isinstance(data, dict):
        yield Problem(file, "expected a JSON object (an upstream FrameworkEvaluation)")
        return
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        yield Problem(file, "not a framework results file: missing " + ", ".join(missing),
                      field=missing[0])
        return
    run_id = data.get("run_id", 0)
    run = run_id if isinstance(run_id, int) and not isinstance(run_id, bool) else 0
    if run < 0 and not allow_averaged:
        yield Problem(file, f"run-averaged file (run_id {run}, run_count "
                      f"{data.get('run_count')}) not ingested: ingest its _runK files, or "
                      "pass it to `evalatlas compare-frameworks` directly", field="run_id")
        return
    if not isinstance(data["questions"], list):
        yield Problem(file, "expected a list", field="questions")
        return
    try:
        exp = experiment_from_results(data, path)
    except InputError as exc:
        yield exc.problem
        return
    yield exp
    seen: set[str] = set()
    for i, q in enumerate(data["questions"]):
        if not isinstance(q, dict):
            yield Problem(file, "expected an object", field=f"questions[{i}]")
            continue
        try:
            ep = episode_from_question(q, experiment_id=exp.experiment_id, run=run, file=file)
        except InputError as exc:
            yield exc.problem
            continue
        if ep.trajectory_id in seen:
            yield Problem(file, "duplicate question_id", field=f"questions[{i}].question_id",
                          record=ep.task_id)
            continue
        seen.add(ep.trajectory_id)
        yield ep


ADAPTER = Adapter(
    name="framework-results",
    kind="file",
    detect=_detect,
    read=read_results_file,
    priority=30,
    description="agent-framework comparison results JSON (rballet/poc-ai-workflow-frameworks "
    "FrameworkEvaluation, one file per framework x scenario x run)",
)
