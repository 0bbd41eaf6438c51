"""``evalatlas judge``: LLM-judge stored episodes; a harness outcome is never changed.

Selects completed episodes this judge model has not scored (all of them with
``--rejudge``), asks the answer judge, and upserts the episodes with named scores
(``judge.<model>.correctness`` ..., and ``judge.correctness`` ... from the first judge),
the judge model, rubric hash, reasoning and the judge's own usage. The reward
``(correctness - 1) / 4`` is set only where the harness reported no outcome, and the
episode then says ``outcome_source = "judge:<model>"`` (:func:`apply_verdict`).
Episodes written by ``evalatlas run`` also get their ``episode_record.json`` rewritten, so
a later re-ingest or resume keeps the scores. The judge sees source text when
``--scenario`` supplies the documents, else names only.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from evalatlas.adapters.frameworks import load_scenario
from evalatlas.cli.common import (
    FormatOption,
    OutputOption,
    emit,
    err_console,
    fail,
    open_store,
)
from evalatlas.cli.render import OutputFormat, render
from evalatlas.cli.run import (
    JudgeBaseUrlOption,
    JudgeCacheOption,
    JudgeTimeoutOption,
    make_judge,
    resolve_scenario,
)
from evalatlas.errors import EvalAtlasError
from evalatlas.judge.answer import CRITERIA, SYSTEM_PROMPT, SourceText, judge_answer
from evalatlas.judge.cache import DEFAULT_CACHE_DIR
from evalatlas.judge.client import JudgeClient
from evalatlas.judge.rubric import judge_rubric, load_rubric
from evalatlas.records.evallog import EPISODE_FILE, EPISODES_DIR, record_json
from evalatlas.records.jsonio import atomic_write_text
from evalatlas.records.models import EpisodeRecord
from evalatlas.runner.episodes import reward_from_correctness
from evalatlas.store.db import Store
from evalatlas.store.rows import episode_from_row, episode_row

RUBRIC_HASH = hashlib.sha256(
    (SYSTEM_PROMPT + "\x1f" + ",".join(CRITERIA)).encode("utf-8")).hexdigest()[:16]
"""Identifies the answer judge's rubric (its system prompt and criteria) in each record."""


def judge_slug(model: str) -> str:
    """A score-name-safe form of a judge model name (``openai/gpt-4o`` -> ``openai-gpt-4o``)."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", model).strip("-") or "judge"


def judge_score_names(model: str) -> dict[str, str]:
    """criterion -> the per-judge score name, e.g. ``judge.gpt-4o.correctness``."""
    return {c: f"judge.{judge_slug(model)}.{c}" for c in CRITERIA}


def select_unjudged(store: Store, experiments: list[str] | None, rejudge: bool,
                    limit: int | None, judge_model: str | None = None) -> list[dict[str, Any]]:
    """Completed episodes this judge has not scored yet (all of them with ``rejudge``).

    "Scored" means ``judge.<model>.correctness`` is present (``judge.correctness`` when
    no model is given), so a failed call is retried next time and another judge model
    judges every episode again, adding its own scores.
    """
    where = ["e.status = 'completed'"]
    params: list[Any] = []
    if not rejudge:
        name = judge_score_names(judge_model)["correctness"] if judge_model \
            else "judge.correctness"
        where.append(f"TRY_CAST(e.scores->>'$.\"{name}\"' AS DOUBLE) IS NULL")
    if experiments:
        marks = ", ".join("?" for _ in experiments)
        where.append(f"(e.experiment_id IN ({marks}) OR x.experiment_name IN ({marks}))")
        params += list(experiments) * 2
    sql = ("SELECT e.*, x.framework_name AS x_framework FROM episodes e JOIN experiments x "
           f"USING (experiment_id) WHERE {' AND '.join(where)} "
           "ORDER BY e.experiment_id, e.trajectory_id")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return store.query(sql, params)


def apply_verdict(ep: EpisodeRecord, verdict: Any) -> EpisodeRecord:
    """The episode with this judge's verdict added; a harness outcome is never touched.

    - Scores ``judge.<model>.<criterion>`` (this judge's; replaced only by the same model
      with ``--rejudge``) and ``judge.<criterion>`` (the first judge's, never edited);
      ``extra["judges"][<model>]`` records model, rubric hash, reasoning, usage, error.
    - Only when the episode has no outcome (``reward`` null, no harness verdict) does a
      valid correctness fill ``reward = (correctness - 1) / 4``, ``success`` and
      ``outcome_source = "judge:<model>"``; then the unqualified criterion names (the
      framework comparison's) are filled where absent, as the runner's own judge does.
    - A failed call changes no score and no outcome; its usage is recorded as unknown
      (None), not 0, and ``extra["score_errors"]`` says why.
    """
    data = ep.model_dump(mode="json")
    model = verdict.model or "judge"
    names = judge_score_names(model)
    scores = dict(data.get("scores") or {})
    extra = dict(data.get("extra") or {})
    judges = dict(extra.get("judges") or {})
    entry: dict[str, Any] = {"model": model, "rubric_hash": RUBRIC_HASH,
                             "judged_at": _dt.datetime.now(_dt.UTC).isoformat()}
    errors = dict(extra.get("score_errors") or {})
    for name in names.values():
        errors.pop(name, None)
    if verdict.error:
        entry.update(error=verdict.error, usage=None)
        for name in names.values():
            errors[name] = verdict.error
    else:
        entry.update(reasoning=verdict.reasoning,
                     usage=verdict.usage.model_dump(mode="json") if verdict.usage else None)
        for c, name in names.items():
            scores[name] = verdict.scores.get(c)
            if scores.get(f"judge.{c}") is None:
                scores[f"judge.{c}"] = verdict.scores.get(c)
        reward = reward_from_correctness(verdict.scores.get("correctness"))
        if data.get("reward") is None and reward is not None:
            data["reward"] = reward
            data["success"] = reward > 0
            data["outcome_source"] = f"judge:{model}"
            extra.pop("reward_missing", None)
            for c in CRITERIA:
                if scores.get(c) is None:
                    scores[c] = verdict.scores.get(c)
                    extra["judge_reasoning"] = verdict.reasoning
                    extra["judge_model"] = model
        if verdict.usage is not None:
            data["judge_usage"] = verdict.usage.model_dump(mode="json")
    judges[judge_slug(model)] = entry
    extra["judges"] = judges
    if errors:
        extra["score_errors"] = errors
    else:
        extra.pop("score_errors", None)
    data["scores"] = scores
    data["extra"] = extra
    return EpisodeRecord.model_validate(data)


def _episode_file(row: dict[str, Any]) -> Path | None:
    """The runner's ``episode_record.json`` of a stored episode, if it is on disk."""
    source = row.get("source_file")
    if not source:
        return None
    path = Path(source)
    if path.is_dir():  # ingested from the run directory
        path = path / EPISODES_DIR / row["trajectory_id"] / EPISODE_FILE
    return path if path.name == EPISODE_FILE and path.is_file() else None


async def judge_rows(store: Store, rows: list[dict[str, Any]], judge: JudgeClient,
                     docs: dict[str, str], *, flush_every: int = 50,
                     on_done: Callable[[], None] | None = None) -> dict[str, int]:
    """Judge ``rows`` concurrently; each judged episode is stored as it finishes.

    Store writes go in batches of ``flush_every`` (one transaction each), so an
    interrupted run keeps what it had judged; the runner's episode files are rewritten
    one by one. The judge's concurrency limit bounds the calls in flight.
    """
    counts = {"judged": 0, "failed": 0, "cached": 0}
    pending: list[tuple[EpisodeRecord, str | None]] = []

    def flush() -> None:
        if not pending:
            return
        batch = store.next_batch_id()
        store.write_batch(batch_id=batch, experiments=[],
                          episodes=[episode_row(ep, src, batch) for ep, src in pending],
                          measurements=[], problems=[], sources=["evalatlas judge"],
                          started_at=_dt.datetime.now(_dt.UTC))
        pending.clear()

    async def one(row: dict[str, Any]) -> tuple[dict[str, Any], EpisodeRecord, Any]:
        ep = episode_from_row(row)
        sources = [SourceText(s, docs.get(s)) for s in dict.fromkeys(ep.retrieved_sources or [])]
        verdict = await judge_answer(judge, ep.input_text or "", ep.expected_text,
                                     ep.output_text, sources)
        return row, ep, verdict

    try:
        for fut in asyncio.as_completed([one(r) for r in rows]):
            row, ep, verdict = await fut
            new = apply_verdict(ep, verdict)
            counts["failed" if verdict.error else "judged"] += 1
            counts["cached"] += int(verdict.cached)
            path = _episode_file(row) if row.get("x_framework") == "evalatlas-runner" else None
            if path is not None:
                atomic_write_text(path, record_json(new, indent=2))
            pending.append((new, row.get("source_file")))
            if on_done is not None:
                on_done()
            if len(pending) >= flush_every:
                flush()
    finally:
        flush()  # keep what was judged, also when interrupted
    return counts


def judge_cmd(
    ctx: typer.Context,
    judge_model: Annotated[str, typer.Option("--judge-model", help="Judge model.")],
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    judge_base_url: JudgeBaseUrlOption = None,
    judge_cache_dir: JudgeCacheOption = DEFAULT_CACHE_DIR,
    scenario: Annotated[str | None, typer.Option(
        "--scenario", help="Scenario whose documents give the judge the source text.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Judge calls in flight.")] = 8,
    rejudge: Annotated[bool, typer.Option("--rejudge", help="Judge scored episodes too.")
                       ] = False,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    timeout: JudgeTimeoutOption = 60.0,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Judge stored episodes this judge has not scored. Verdicts become named scores
    (judge.correctness ...); a harness's reward is never changed, and an episode without
    one gets the judge's outcome, marked outcome_source judge:<model>. Failures change
    nothing."""
    try:
        docs = {}
        if scenario:
            docs = {d.source: d.text for d in load_scenario(resolve_scenario(scenario)).documents}
        judge = make_judge(judge_model, judge_base_url, judge_cache_dir, concurrency,
                           timeout_s=timeout)
    except EvalAtlasError as exc:
        fail(str(exc))
        return
    assert judge is not None

    async def go() -> dict[str, int]:
        try:
            with open_store(ctx, require_data=True) as store:
                rows = select_unjudged(store, experiment, rejudge, limit, judge_model)
                with Progress(SpinnerColumn(), TextColumn("judging"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                              transient=True, disable=not err_console.is_terminal) as bar:
                    task = bar.add_task("judging", total=len(rows))
                    return await judge_rows(store, rows, judge, docs,
                                            on_done=lambda: bar.advance(task))
        finally:
            await judge.aclose()

    counts = asyncio.run(go())
    row = {"judge_model": judge_model, **counts}
    notes = [] if counts["judged"] + counts["failed"] else ["no episodes lacked judge scores"]
    emit(render([row], [("judge_model", "judge model"), ("judged", "judged"),
                        ("failed", "failed (scores missing)"), ("cached", "from cache")],
                fmt, schema="evalatlas.judge/1", title="Judge", notes=notes), output)


def judge_rubric_cmd(
    rubric: Annotated[Path, typer.Argument(help="Rubric YAML (categories, weights, items).")],
    output_file: Annotated[Path, typer.Option(
        "--output-file", help="The agent output to grade (text file).")],
    judge_model: Annotated[list[str], typer.Option(
        "--judge-model", help="Judge model; repeat for several judges.")],
    task: Annotated[str | None, typer.Option(help="The task text given to the agent.")] = None,
    task_file: Annotated[Path | None, typer.Option(help="Read the task from a file.")] = None,
    judge_base_url: JudgeBaseUrlOption = None,
    judge_cache_dir: JudgeCacheOption = DEFAULT_CACHE_DIR,
    timeout: JudgeTimeoutOption = 60.0,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Grade one agent output against a rubric with one or more LLM judges.

    Per judge: weighted score, pass, error; then the consensus (mean score, majority pass)
    and Krippendorff's alpha over the category scores.
    """
    try:
        rb = load_rubric(rubric)
        task_text = task_file.read_text(encoding="utf-8") if task_file else (task or "")
        agent_output = output_file.read_text(encoding="utf-8", errors="replace")
        clients = [make_judge(m, judge_base_url, judge_cache_dir, timeout_s=timeout)
                   for m in judge_model]
    except (EvalAtlasError, OSError) as exc:
        fail(str(exc))
        return

    async def go() -> Any:
        try:
            return await judge_rubric([c for c in clients if c is not None], rb, task_text,
                                      agent_output)
        finally:
            for c in clients:
                if c is not None:
                    await c.aclose()

    consensus, verdicts = asyncio.run(go())
    rows: list[dict[str, Any]] = [
        {"judge": v.model, "score": v.score.score if v.score else None,
         "passed": v.score.passed if v.score else None, "alpha": None,
         "error": v.error} for v in verdicts]
    rows.append({"judge": "consensus", "score": consensus.score, "passed": consensus.passed,
                 "alpha": consensus.alpha,
                 "error": f"{consensus.n_valid}/{consensus.n_judges} judges valid"})
    emit(render(rows, [("judge", "judge"), ("score", "weighted score"), ("passed", "passed"),
                       ("alpha", "Krippendorff alpha"), ("error", "note")],
                fmt, schema="evalatlas.judge-rubric/1", title="Rubric judgement",
                meta={"rubric": str(rubric), "pass_threshold": rb.pass_threshold,
                      "categories": consensus.categories}), output)


def register(app: typer.Typer) -> None:
    app.command("judge")(judge_cmd)
    app.command("judge-rubric")(judge_rubric_cmd)
