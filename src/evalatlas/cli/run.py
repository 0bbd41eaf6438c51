"""``evalatlas run``: run a framework over a scenario, judge, record, resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from evalatlas import (
    EvalAtlasError,
    JudgeClient,
    JudgeConfig,
    load_framework,
    load_scenario,
    run,
)
from evalatlas.cli.common import FormatOption, OutputOption, emit, err_console, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, render

DEFAULT_CACHE_DIR: Path | None = (None if JudgeConfig.cache_dir is None
                                  else Path(JudgeConfig.cache_dir))
"""The judge's disk cache unless ``--judge-cache-dir`` says otherwise."""

JudgeModelOption = Annotated[str | None, typer.Option(
    "--judge-model", help="LLM judge model (OpenAI-compatible). Without it only the lexical "
    "judge runs and judge scores stay missing.")]
JudgeBaseUrlOption = Annotated[str | None, typer.Option(
    "--judge-base-url", help="OpenAI-compatible base URL (overrides $OPENAI_BASE_URL). The key "
    "comes from $OPENAI_API_KEY.")]
JudgeCacheOption = Annotated[Path | None, typer.Option(
    "--judge-cache-dir", help="Disk cache of judge answers.")]


def make_judge(model: str | None, base_url: str | None, cache_dir: Path | None,
               concurrency: int = 8, timeout_s: float = 60.0) -> JudgeClient | None:
    if not model:
        return None
    return JudgeClient(JudgeConfig(model=model, base_url=base_url, cache_dir=cache_dir,
                                   concurrency=concurrency, timeout_s=timeout_s))


JudgeTimeoutOption = Annotated[float, typer.Option(
    "--timeout", min=0.001, metavar="SECONDS",
    help="Seconds one judge call may take before it counts as failed (and is retried).")]


def run_cmd(
    ctx: typer.Context,
    scenario: Annotated[str, typer.Argument(help="Scenario directory (spec.yaml) or the name of "
                                            "a bundled scenario, e.g. offline_qa.")],
    framework: Annotated[str, typer.Option(
        "--framework", help="module:Class, cmd:<command line>, or an example: bm25, echo.")],
    mode: Annotated[str, typer.Option(help="Scenario mode (spec.yaml modes).")] = "baseline",
    runs: Annotated[int, typer.Option(min=1, help="Repeat every question N times.")] = 1,
    query_timeout_seconds: Annotated[float, typer.Option(
        "--query-timeout-seconds", min=0.001, help="Per-question timeout.")] = 120.0,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions in flight.")] = 1,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    judge_cache_dir: JudgeCacheOption = DEFAULT_CACHE_DIR,
    judge_timeout: Annotated[float, typer.Option(
        "--judge-timeout", min=0.001, metavar="SECONDS",
        help="Seconds one judge call may take before it counts as failed (and is retried).")
    ] = 60.0,
    no_judge_cache: Annotated[bool, typer.Option(
        "--no-judge-cache", help="Always ask the judge; do not read or write the cache.")
    ] = False,
    skip_code_quality: Annotated[bool, typer.Option(
        "--skip-code-quality", help="No static analysis and no LLM review of the code.")
    ] = False,
    skip_code_review: Annotated[bool, typer.Option(
        "--skip-code-review", help="Static analysis only, no LLM code review.")] = False,
    output_dir: Annotated[Path, typer.Option(
        "--output-dir", help="Where run directories (EvalLog) are written.")] = Path("runs"),
    no_store: Annotated[bool, typer.Option(
        "--no-store", help="Only write the EvalLog directory, not the store.")] = False,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Run a framework over a scenario's questions (timeouts, repeats, judge), resumably.

    Every finished question x run is written at once to an EvalLog directory and the
    store; re-running the same command resumes and does not redo finished episodes.
    """
    try:
        scen = load_scenario(scenario)
        if scen.modes and mode not in scen.modes:
            scen.mode_config(mode)  # raises a clear error naming the known modes
        handle = load_framework(framework)
        judge = make_judge(judge_model, judge_base_url, None if no_judge_cache
                           else judge_cache_dir, timeout_s=judge_timeout)
    except EvalAtlasError as exc:
        fail(str(exc))
        return

    def progress(ep: Any) -> None:
        err_console.print(f"  {ep.trajectory_id}: {ep.status}", highlight=False, markup=False)

    options: dict[str, Any] = {
        "judge": judge, "mode": mode, "runs": runs, "query_timeout_s": query_timeout_seconds,
        "concurrency": concurrency, "output_dir": output_dir,
        "skip_code_quality": skip_code_quality, "skip_code_review": skip_code_review,
        "on_episode": progress}

    async def go() -> Any:
        try:
            if no_store:
                return await run(scen, handle, **options)
            with open_store(ctx, create=True) as store:
                return await run(scen, handle, store=store, **options)
        finally:
            if judge is not None:
                await judge.aclose()

    summary = asyncio.run(go())
    row = summary.rows[0]
    columns = [Col("experiment", "experiment", None, 0, "name"),
               Col("planned", "planned", None, 3), Col("resumed", "resumed", None, 4),
               Col("done", "run now", None, 1),
               Col("statuses", "statuses",
                   lambda r: ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()))
                   or "-", 2),
               Col("judge_failures", "judge failures", None, 5),
               Col("wall_s", "wall s", None, 6),
               Col("run_dir", "run dir", None, 7, "path")]
    notes = list(summary.notes)
    if judge is None:
        notes.append("no --judge-model: correctness/completeness/faithfulness are missing; "
                     "lexical scores were computed")
    emit(render([row], columns, fmt, schema="evalatlas.run/1", title="Run", notes=notes),
         output)


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
