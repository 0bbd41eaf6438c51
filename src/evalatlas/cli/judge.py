"""``evalatlas judge``: LLM-judge stored episodes; a harness outcome is never changed.

Selects completed episodes this judge model has not scored (all of them with
``--rejudge``), asks the answer judge, and upserts the episodes with named scores
(``judge.<model>.correctness`` ..., and ``judge.correctness`` ... from the first judge),
the judge model, rubric hash, reasoning and the judge's own usage. The reward
``(correctness - 1) / 4`` is set only where the harness reported no outcome, and the
episode then says ``outcome_source = "judge:<model>"``
(:func:`evalatlas.judge.episodes.apply_verdict`; the logic lives in that module and
``evalatlas.judge_episodes`` runs it; this command parses, shows progress and renders).
Episodes written by ``evalatlas run`` also get their ``episode_record.json`` rewritten, so
a later re-ingest or resume keeps the scores. The judge sees source text when
``--scenario`` supplies the documents, else names only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from evalatlas import (
    EvalAtlasError,
    judge_episodes,
    judge_rubric,
    load_rubric,
    load_scenario,
)
from evalatlas.cli.common import (
    FormatOption,
    OutputOption,
    call_progress,
    emit,
    fail,
    open_store,
)
from evalatlas.cli.render import OutputFormat, render
from evalatlas.cli.run import (
    DEFAULT_CACHE_DIR,
    JudgeBaseUrlOption,
    JudgeCacheOption,
    JudgeTimeoutOption,
    make_judge,
)


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
            docs = {d.source: d.text for d in load_scenario(scenario).documents}
        judge = make_judge(judge_model, judge_base_url, judge_cache_dir, concurrency,
                           timeout_s=timeout)
    except EvalAtlasError as exc:
        fail(str(exc))
        return
    assert judge is not None

    async def go() -> dict[str, int]:
        try:
            bar = call_progress("judging")
            with open_store(ctx, require_data=True) as store, bar:
                task = bar.add_task("judging", total=None)
                return await judge_episodes(
                    store, judge, experiment=experiment, rejudge=rejudge, limit=limit,
                    docs=docs, on_progress=lambda done, total: bar.update(
                        task, completed=done, total=total))
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
