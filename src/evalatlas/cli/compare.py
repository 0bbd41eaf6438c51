"""``evalatlas compare A B [C ...]``: paired comparison on shared tasks, in plain words."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

import typer
from rich.markup import escape

from evalatlas import compare
from evalatlas.cli.common import FormatOption, OutputOption, console, emit, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, fmt_value, md_escape, render, render_result


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _diff(row: dict[str, Any]) -> str:
    if row["diff"] is None:
        return "-"
    text = f"{100 * row['diff']:+.1f}"
    if row["diff_ci_low"] is not None:
        text += f" [{100 * row['diff_ci_low']:+.1f}, {100 * row['diff_ci_high']:+.1f}]"
    return text


def _p(row: dict[str, Any]) -> str:
    text = fmt_value(row["p"], 4)
    if "p_holm" in row:
        text += f" (Holm {fmt_value(row['p_holm'], 4)})"
    return f"{row['test']} {text}"


def _money(v: float | None) -> str:
    return "-" if v is None else f"${v:,.4f}"


def compare_cmd(
    ctx: typer.Context,
    selectors: Annotated[list[str], typer.Argument(
        help="Agents (name or id prefix), experiments (name or id) or label values "
        "(label:tier=T1); two or more.")],
    pair_by: Annotated[str, typer.Option("--pair-by", help="task: mean over attempts per "
                                         "task; attempt: pair (task, attempt) keys.")] = "task",
    score: Annotated[str | None, typer.Option("--score", help="Named score to compare "
                                              "(default: 'score' when both sides have it, "
                                              "else reward).")] = None,
    detect: Annotated[float, typer.Option("--detect", help="Difference (fraction) the power "
                                          "estimate is for.")] = 0.05,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    confidence: Annotated[float, typer.Option(help="Interval confidence level.")] = 0.95,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Success rate and mean score of each side on the tasks both ran, the difference with
    its interval and test (McNemar or Wilcoxon; Holm-adjusted for more than two), cost,
    and a plain sentence."""
    if pair_by not in ("task", "attempt"):
        fail(f"--pair-by must be task or attempt, got {pair_by!r}")
    if not 0 < detect < 1:
        fail("--detect must be a fraction in (0, 1), e.g. 0.05 for 5 points")
    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            result = compare(store, *selectors,  # pair_by was checked above
                             pair_by=cast('Literal["task", "attempt"]', pair_by),
                             score=score, confidence=confidence, detect=detect, alpha=alpha)
        except ValueError as exc:
            fail(str(exc))
    rows, used = result.rows, result.meta["score"]
    pct = f"{round(100 * confidence)}% CI"
    columns = [
        Col("a", "A", None, 0, "name"), Col("b", "B", None, 0.1, "name"),
        Col("shared_tasks", "shared tasks", None, 4),
        Col("success_a", "success A", lambda r: _pct(r["success_a"]), 2),
        Col("success_b", "success B", lambda r: _pct(r["success_b"]), 2.1),
        Col("diff", f"A - B points [{pct}]", _diff, 1),
        Col("p", "test p", _p, 3),
        Col("score_a", f"{used or 'reward'} A", lambda r: fmt_value(r["score_a"]), 6),
        Col("score_b", f"{used or 'reward'} B", lambda r: fmt_value(r["score_b"]), 6.1),
        Col("cost_a", "cost/task A", lambda r: _money(r["cost_a"]), 5),
        Col("cost_b", "cost/task B", lambda r: _money(r["cost_b"]), 5.1),
    ]
    sentences = [*result.sentences, *result.notes]  # notes: runs that did not finish
    if fmt is OutputFormat.table:
        render(rows, columns, fmt, schema="evalatlas.compare/1", title="Compare")
        for s in sentences:
            console.print(escape(s), highlight=False)
        return
    if fmt is OutputFormat.json:
        emit(render_result(result, columns, fmt), output)
        return
    text = render(rows, columns, fmt, schema=result.schema, title="Compare",
                  meta=result.meta)
    if fmt is OutputFormat.markdown and text is not None:
        text += "\n" + "\n".join(f"- {md_escape(s)}" for s in sentences) + "\n"
    emit(text, output)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
