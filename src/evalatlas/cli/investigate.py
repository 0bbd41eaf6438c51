"""``evalatlas investigate``: an LLM investigator's findings for failed episodes.

Parse, call :func:`evalatlas.investigate` (the logic lives in
:mod:`evalatlas.judge.investigator`), show a progress bar, render the run's counts and
spend. JSON output is the result's ``to_dict()`` (``evalatlas.investigate/1``). A failed
call never fails the command: the episode's findings stay missing and the output says
how many and why.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from evalatlas import EvalAtlasError
from evalatlas.cli.common import (
    FormatOption,
    OutputOption,
    call_progress,
    emit,
    fail,
    open_store,
)
from evalatlas.cli.render import Column, OutputFormat, fmt_value, render_result
from evalatlas.cli.run import DEFAULT_CACHE_DIR, JudgeTimeoutOption


def investigate_cmd(
    ctx: typer.Context,
    model: Annotated[str, typer.Option("--model", help="Investigator model "
                                       "(OpenAI-compatible), e.g. openai/gpt-5-mini.")],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="OpenAI-compatible base URL (overrides $OPENAI_BASE_URL). The "
        "key comes from $OPENAI_API_KEY.")] = None,
    only: Annotated[str, typer.Option(
        "--only", help="failed (default): failed episodes; all: every episode.")] = "failed",
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help="Only this agent (name or id; repeatable).")] = None,
    benchmark: Annotated[list[str] | None, typer.Option(
        "--benchmark", "-b", help="Only this benchmark (repeatable).")] = None,
    sample: Annotated[int | None, typer.Option(
        "--sample", min=1, help="Investigate a random sample of N episodes.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --sample.")] = 0,
    budget_usd: Annotated[float | None, typer.Option(
        "--budget-usd", help="Stop before a call that could take the spend past this "
        "(at most one call over).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight.")] = 8,
    reinvestigate: Annotated[bool, typer.Option(
        "--reinvestigate", help="Ask again for episodes that already have findings.")
    ] = False,
    max_input_tokens: Annotated[int, typer.Option(
        "--max-input-tokens", min=100, help="Token budget of the episode record in the "
        "prompt (texts are cut to fit).")] = 6000,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Disk cache of the investigator's answers (shared with the "
        "judges).")] = DEFAULT_CACHE_DIR,
    timeout: JudgeTimeoutOption = 60.0,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Ask an LLM why failed episodes failed and whether their tasks are feasible; store
    the answers as the episodes' findings. Harness outcomes are never changed."""
    from evalatlas import JudgeClient, JudgeConfig, investigate

    try:
        client = JudgeClient(JudgeConfig(model=model, base_url=base_url, cache_dir=cache_dir,
                                         concurrency=concurrency, timeout_s=timeout))
    except EvalAtlasError as exc:
        fail(str(exc).replace("--judge-model", "--model")
             .replace("--judge-base-url", "--base-url"))
        return

    async def go():
        try:
            bar = call_progress("investigating")
            with open_store(ctx, require_data=True) as store, bar:
                task = bar.add_task("investigating", total=None)
                return await investigate(
                    store, client, only=only, agent=agent, benchmark=benchmark,
                    sample=sample, seed=seed, budget_usd=budget_usd,
                    reinvestigate=reinvestigate, max_input_tokens=max_input_tokens,
                    on_progress=lambda done, total: bar.update(task, completed=done,
                                                               total=total))
        finally:
            await client.aclose()

    try:
        result = asyncio.run(go())
    except (EvalAtlasError, ValueError, OSError) as exc:
        fail(str(exc))  # findings answered before the error are stored
        return
    cols: list[Column] = [("model", "model"), ("investigated", "investigated"),
            ("not_investigated", "could not"), ("not_reached", "not reached (budget)"),
            ("cost_usd", "cost $"),
            ("prompt_tokens", "tokens in/out",
             lambda r: f"{fmt_value(r['prompt_tokens'])} / {fmt_value(r['completion_tokens'])}"),
            ("selected", "selected"), ("already_investigated", "already done"),
            ("cached", "from cache")]
    emit(render_result(result, cols, fmt, title="Investigation"), output)


def register(app: typer.Typer) -> None:
    app.command("investigate")(investigate_cmd)
