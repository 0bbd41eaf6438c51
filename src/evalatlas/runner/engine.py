"""Run a framework over a scenario's questions: timeouts, concurrency, judging, resume.

Pipeline per run directory (``<output>/<framework-slug>__<scenario>__<mode>/``, an
EvalLog directory):

1. the experiment record is written (and upserted into the store, if one is given);
2. ``configure`` (if the framework has it) and ``ingest`` run once, untimed, as upstream;
3. every question x run not already on disk is queried with ``asyncio.wait_for`` under
   ``query_timeout_s``, at most ``concurrency`` at a time; then scored: retrieval
   precision/recall (:mod:`evalatlas.metrics.retrieval`), the scenario profile's
   metrics (:mod:`evalatlas.metrics.profiles`), the lexical judge and, when configured,
   the LLM answer judge;
4. each finished episode is written atomically to ``episodes/<trajectory_id>/`` at once
   and into the store within a second (small batched transactions, flushed on exit or
   interruption), so an interrupted run resumes where it stopped: episodes already on
   disk (any status) are not redone;
5. code quality (``evalatlas.codequality``) and the LLM code review go into the
   experiment's ``extra``; finally the directory is ingested (idempotent upsert).

Failure semantics (unlike upstream, see docs/runner-and-judges.md): a timeout keeps
the tokens reported before it (``QueryContext``), counts at the timeout value, has
status ``timeout`` and reward 0; an exception in a question is status ``error`` with its
type and message and never aborts the run; a failed judge leaves scores missing.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalatlas.adapters.frameworks import Scenario, safe_id, trajectory_id_for
from evalatlas.errors import Problem
from evalatlas.judge.answer import CRITERIA, SourceText, judge_answer
from evalatlas.judge.client import JudgeClient
from evalatlas.judge.code_review import review_code, review_to_extra
from evalatlas.metrics.lexical import lexical_scores
from evalatlas.metrics.profiles import QuestionContext, get_profile
from evalatlas.metrics.retrieval import retrieval_precision, retrieval_recall
from evalatlas.records.evallog import EPISODE_FILE, EPISODES_DIR, EXPERIMENT_FILE, record_json
from evalatlas.records.jsonio import atomic_write_text, read_json_file
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, UsageSummary
from evalatlas.records.redact import redact_text
from evalatlas.records.validate import parse_record
from evalatlas.results import ResultViews
from evalatlas.runner.episodes import episode_for, experiment_for
from evalatlas.runner.loading import FrameworkHandle
from evalatlas.runner.protocol import Answer, QueryContext, call_maybe_async, takes_context
from evalatlas.store.db import StoreConnection
from evalatlas.store.rows import episode_row, experiment_row
from evalatlas.text import json_safe

if TYPE_CHECKING:
    import pandas as pd

TIMEOUT_ANSWER = None  # a timed-out question has no answer text (upstream used a fixed string)


@dataclass
class RunConfig:
    """Settings of one ``evalatlas run``."""

    mode: str = "baseline"
    runs: int = 1
    query_timeout_s: float = 120.0
    concurrency: int = 1
    output_dir: Path = Path("runs")
    skip_code_quality: bool = False
    skip_code_review: bool = False


@dataclass(repr=False)
class RunSummary(ResultViews):
    """What a run did. As a result (:class:`evalatlas.results.Result`): one row (the
    row ``evalatlas run`` prints)."""

    run_dir: Path
    experiment_id: str
    experiment_name: str
    planned: int = 0
    resumed: int = 0
    done: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    judge_failures: int = 0
    wall_s: float = 0.0
    overhead_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def schema(self) -> str:
        return "evalatlas.run/1"

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row: run_dir, experiment_id, experiment, planned, resumed, done, statuses,
        judge_failures, wall_s."""
        return [{"run_dir": str(self.run_dir), "experiment_id": self.experiment_id,
                 "experiment": self.experiment_name, "planned": self.planned,
                 "resumed": self.resumed, "done": self.done,
                 "statuses": dict(self.statuses), "judge_failures": self.judge_failures,
                 "wall_s": self.wall_s}]

    @property
    def meta(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        """``{"schema", "rows", "notes"}`` (strict JSON values)."""
        env: dict[str, Any] = {"schema": self.schema,
                               "rows": [json_safe(r) for r in self.rows]}
        if self.notes:
            env["notes"] = list(self.notes)
        return env

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows)


def run_dir_for(output_dir: Path, framework: str, scenario: str, mode: str) -> Path:
    slug = safe_id(framework.lower().replace(" ", "_"))
    return output_dir / f"{slug}__{safe_id(scenario)}__{safe_id(mode)}"


def finished_trajectories(run_dir: Path) -> set[str]:
    """Trajectory ids whose episode record is on disk and readable (resume)."""
    done: set[str] = set()
    root = run_dir / EPISODES_DIR
    if not root.is_dir():
        return done
    for ep_dir in root.iterdir():
        path = ep_dir / EPISODE_FILE
        if path.is_file():
            try:
                parse_record(EpisodeRecord, read_json_file(path), file=str(path))
            except Exception:  # a torn or foreign file: redo that episode
                continue
            done.add(ep_dir.name)
    return done


def _write_store_rows(store: StoreConnection | None, exp: ExperimentRecord | None,
                      eps: list[EpisodeRecord], source: str) -> None:
    if store is None:
        return
    batch = store.next_batch_id()
    store.write_batch(
        batch_id=batch,
        experiments=[experiment_row(exp, source, batch)] if exp is not None else [],
        episodes=[episode_row(e, source, batch) for e in eps], measurements=[],
        problems=[], sources=[source], started_at=_dt.datetime.now(_dt.UTC))


class _StoreBuffer:
    """Episodes bound for the store, written in small transactions.

    One DuckDB transaction per episode costs tens of milliseconds, more than most no-op
    episodes; the EvalLog directory is the durable per-episode record (resume reads it),
    so the store gets a batch every ``max_age_s`` seconds or ``max_rows`` episodes, and
    whatever is left when the run ends or is interrupted.
    """

    def __init__(self, store: StoreConnection | None, max_rows: int = 100, max_age_s: float = 1.0
                 ) -> None:
        self.store, self.max_rows, self.max_age_s = store, max_rows, max_age_s
        self.rows: list[EpisodeRecord] = []
        self.last = time.monotonic()

    def add(self, ep: EpisodeRecord, source: str) -> None:
        if self.store is None:
            return
        self.rows.append(ep)
        self.source = source
        if len(self.rows) >= self.max_rows or time.monotonic() - self.last >= self.max_age_s:
            self.flush()

    def flush(self) -> None:
        if self.store is not None and self.rows:
            _write_store_rows(self.store, None, self.rows, self.source)
        self.rows = []
        self.last = time.monotonic()


def _source_texts(answer: Answer, docs: dict[str, str]) -> list[SourceText]:
    contexts = answer.metadata.get("contexts")
    if isinstance(contexts, list) and contexts:
        out = []
        for c in contexts:
            if isinstance(c, dict):
                out.append(SourceText(str(c.get("source", "?")), str(c.get("text", ""))))
        if out:
            return out
    return [SourceText(s, docs.get(s)) for s in dict.fromkeys(answer.sources)]


def _profile_scores(scenario: Scenario, question: Any, answer: Answer
                    ) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Numeric profile metrics go to ``scores``, booleans and the rest to ``extra``."""
    profile = get_profile(scenario.profile)
    metrics = profile.question_metrics(QuestionContext(
        metadata=question.metadata, answer=answer.text, sources_used=answer.sources,
        answer_metadata=answer.metadata))
    scores: dict[str, float | None] = {}
    extra: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            extra[k] = v
        else:
            scores[k] = float(v)
    return scores, extra


async def _code_extras(handle: FrameworkHandle, scenario: Scenario, cfg: RunConfig,
                       judge: JudgeClient | None, notes: list[str]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    src = handle.source_file
    if cfg.skip_code_quality:
        return extra
    if src is None or not src.is_file():
        notes.append("code quality skipped: the framework's source file is unknown")
        return extra
    try:
        from evalatlas.codequality import analyse_file

        row = analyse_file(str(src))
        if isinstance(row, Problem):
            notes.append(f"code quality skipped: {row}")
        else:
            extra["code_quality"] = row
    except Exception as exc:  # static analysis must not lose the run
        notes.append(f"code quality failed: {type(exc).__name__}: {exc}")
    if judge is not None and not cfg.skip_code_review:
        text = src.read_text(encoding="utf-8", errors="replace")
        review = await review_code(judge, handle.name, scenario.description, text)
        extra["code_review"] = review_to_extra(review)
        if not review.ok:
            notes.append(f"code review failed: {review.error}")
    return extra


@dataclass
class _Attempt:
    """One question asked once: the answer (None on timeout or error) and its cost."""

    status: str
    answer: Answer | None
    latency: float
    ctx: QueryContext
    error_type: str | None = None
    error_message: str | None = None

    def usage(self) -> UsageSummary | None:
        """The answer's usage, else what the framework reported on the context (kept on a
        timeout), with the context's model when the usage names none."""
        answer, ctx = self.answer, self.ctx
        usage = answer.usage if answer is not None and answer.usage is not None \
            else ctx.usage()
        if usage is not None and usage.model is None and ctx.model:
            usage = usage.model_copy(update={"model": ctx.model})
        return usage


@dataclass
class _Scored:
    """Scores, extra fields and per-score errors of one attempt, filled step by step."""

    scores: dict[str, float | None]
    extra: dict[str, Any]
    score_errors: dict[str, str] = field(default_factory=dict)
    judge_usage: UsageSummary | None = None
    judge_failed: bool = False


async def _ask(fw: Any, question: Any, run: int, cfg: RunConfig, with_ctx: bool) -> _Attempt:
    """Query once under the timeout; a timeout or an exception becomes the status."""
    ctx = QueryContext(question.id, run)
    args = (question.text, ctx) if with_ctx else (question.text,)
    t0 = time.perf_counter()
    try:
        raw = await asyncio.wait_for(call_maybe_async(fw.query, *args), cfg.query_timeout_s)
        return _Attempt("completed", Answer.coerce(raw), time.perf_counter() - t0, ctx)
    except TimeoutError:
        return _Attempt("timeout", None, cfg.query_timeout_s, ctx, "timeout",
                        f"no answer within {cfg.query_timeout_s:g} s")
    except Exception as exc:  # one question must never abort the run
        message = redact_text(f"{exc}")[:2000] or "".join(
            traceback.format_exception_only(exc)).strip()
        return _Attempt("error", None, time.perf_counter() - t0, ctx, type(exc).__name__,
                        message)


def _answer_scores(scenario: Scenario, question: Any, attempt: _Attempt) -> _Scored:
    """Retrieval, profile and lexical scores of the answer (the LLM judge comes after)."""
    ctx, answer = attempt.ctx, attempt.answer
    scored = _Scored({c: None for c in CRITERIA},
                     {"tool_trace": ctx.tool_trace, "agents_used": list(ctx.agents_used)})
    if answer is None:
        scored.score_errors.update({c: f"not judged: {attempt.status}" for c in CRITERIA})
        return scored
    meta = dict(answer.metadata)
    scored.extra["tool_trace"] = meta.pop("tool_trace", None) or ctx.tool_trace
    scored.extra["agents_used"] = meta.pop("agents_used", None) or list(ctx.agents_used)
    meta.pop("contexts", None)
    if meta:
        scored.extra["answer_metadata"] = meta
    scored.scores["retrieval_precision"] = retrieval_precision(
        answer.sources, question.expected_sources)
    scored.scores["retrieval_recall"] = retrieval_recall(answer.sources,
                                                         question.expected_sources)
    try:
        pscores, pextra = _profile_scores(scenario, question, answer)
        scored.scores.update(pscores)
        scored.extra.update(pextra)
    except Exception as exc:
        scored.score_errors["profile"] = f"{type(exc).__name__}: {exc}"
    if question.expected_answer:
        lex = lexical_scores(answer.text, question.expected_answer)
        scored.scores["lexical_exact_match"] = lex["exact_match"]
        scored.scores["lexical_token_f1"] = lex["token_f1"]
    return scored


async def _judge(judge: JudgeClient | None, question: Any, answer: Answer,
                 docs: dict[str, str], scored: _Scored) -> None:
    """The LLM answer judge's scores; a failed (or absent) judge leaves them missing."""
    if judge is None:
        scored.score_errors.update(
            {c: "no LLM judge configured (--judge-model)" for c in CRITERIA})
        return
    verdict = await judge_answer(judge, question.text, question.expected_answer,
                                 answer.text, _source_texts(answer, docs))
    scored.scores.update(verdict.scores)
    scored.judge_usage = verdict.usage
    scored.extra.update({"judge_reasoning": verdict.reasoning, "judge_model": verdict.model,
                         "judge_cached": verdict.cached})
    if verdict.error:
        scored.score_errors.update({c: verdict.error for c in CRITERIA})
        scored.judge_failed = True


def _episode(exp: ExperimentRecord, question: Any, run: int, attempt: _Attempt,
             scored: _Scored) -> EpisodeRecord:
    extra = dict(scored.extra)
    if scored.score_errors:
        extra["score_errors"] = scored.score_errors
    answer = attempt.answer
    return episode_for(
        exp.experiment_id, question_id=question.id, run=run, question=question.text,
        expected=question.expected_answer, expected_sources=question.expected_sources,
        status=attempt.status, answer=answer.text if answer is not None else TIMEOUT_ANSWER,
        sources=answer.sources if answer is not None else None, wall_time_s=attempt.latency,
        usage=attempt.usage(), judge_usage=scored.judge_usage, scores=scored.scores,
        error_type=attempt.error_type, error_message=attempt.error_message, extra=extra)


def _open_experiment(scenario: Scenario, handle: FrameworkHandle, cfg: RunConfig,
                     judge: JudgeClient | None, run_dir: Path,
                     mode_config: dict[str, Any]) -> tuple[ExperimentRecord, Path]:
    """The run's experiment record, written to the run directory; on resume it keeps the
    original id, timestamp and extra."""
    settings: dict[str, Any] = {"runs": cfg.runs, "query_timeout_s": cfg.query_timeout_s,
                                "framework_spec": handle.spec, "kind": handle.kind,
                                "mode_config": mode_config}
    if judge is not None:
        settings["judge"] = judge.config.describe()
    model = getattr(handle.instance, "llm_model", None) or scenario.llm_model
    exp = experiment_for(scenario, handle.name, cfg.mode, run_dir, model=model,
                         settings=settings)
    exp_path = run_dir / EXPERIMENT_FILE
    if exp_path.is_file():
        old = parse_record(ExperimentRecord, read_json_file(exp_path), file=str(exp_path))
        exp.timestamp, exp.extra = old.timestamp, dict(old.extra)
    atomic_write_text(exp_path, record_json(exp, indent=2))
    return exp, exp_path


async def _prepare_framework(fw: Any, cfg: RunConfig, mode_config: dict[str, Any],
                             scenario: Scenario) -> None:
    """``configure`` (if the framework has it) and ``ingest``, once and untimed."""
    configure = getattr(fw, "configure", None)
    if callable(configure):
        configure(cfg.mode, mode_config, scenario)
    await call_maybe_async(fw.ingest, list(scenario.documents))


async def run_scenario(
    scenario: Scenario,
    handle: FrameworkHandle,
    cfg: RunConfig,
    *,
    judge: JudgeClient | None = None,
    store: StoreConnection | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> RunSummary:
    """Run ``handle`` over ``scenario`` (see module docstring); returns a summary."""
    t_start = time.perf_counter()
    fw = handle.instance
    mode_config = scenario.mode_config(cfg.mode) if scenario.modes else {}
    run_dir = run_dir_for(cfg.output_dir, handle.name, scenario.name, cfg.mode).resolve()
    exp, exp_path = _open_experiment(scenario, handle, cfg, judge, run_dir, mode_config)
    _write_store_rows(store, exp, [], str(run_dir))
    summary = RunSummary(run_dir, exp.experiment_id, exp.experiment_name)

    done = finished_trajectories(run_dir)
    todo = [(q, r) for r in range(cfg.runs) for q in scenario.questions
            if trajectory_id_for(q.id, r) not in done]
    summary.planned = cfg.runs * len(scenario.questions)
    summary.resumed = summary.planned - len(todo)
    if todo:
        await _prepare_framework(fw, cfg, mode_config, scenario)

    with_ctx = takes_context(fw.query)
    docs = {d.source: d.text for d in scenario.documents}
    sem = asyncio.Semaphore(max(1, cfg.concurrency))
    buffer = _StoreBuffer(store)
    query_time = 0.0

    async def one(question: Any, run: int) -> None:
        nonlocal query_time
        async with sem:
            attempt = await _ask(fw, question, run, cfg, with_ctx)
            query_time += attempt.latency
            scored = _answer_scores(scenario, question, attempt)
            if attempt.answer is not None:
                await _judge(judge, question, attempt.answer, docs, scored)
            summary.judge_failures += int(scored.judge_failed)
            ep = _episode(exp, question, run, attempt, scored)
            path = run_dir / EPISODES_DIR / ep.trajectory_id / EPISODE_FILE
            atomic_write_text(path, record_json(ep, indent=2))
            buffer.add(ep, str(run_dir))
            summary.done += 1
            summary.statuses[attempt.status] += 1
            if on_episode is not None:
                on_episode(ep)

    try:
        await asyncio.gather(*(one(q, r) for q, r in todo))
    finally:
        buffer.flush()  # also when interrupted: what finished is in the store

    code_extra = await _code_extras(handle, scenario, cfg, judge, summary.notes) \
        if todo or not exp.extra else {}
    if code_extra:
        exp.extra.update(code_extra)
        atomic_write_text(exp_path, record_json(exp, indent=2))
        _write_store_rows(store, exp, [], str(run_dir))
    summary.wall_s = time.perf_counter() - t_start
    summary.overhead_s = max(0.0, summary.wall_s - query_time / max(1, cfg.concurrency))
    return summary
