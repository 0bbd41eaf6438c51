"""``evalatlas summary``: one row per agent (or other grouping)."""

from __future__ import annotations

from typing import Annotated, Any, cast

import typer

from evalatlas import summary
from evalatlas.cli.common import FormatOption, OutputOption, emit, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, fmt_value, render, render_result


def _rate(row: dict[str, Any]) -> str:
    r = row["success_rate"]
    if r is None or r != r:  # no episode with a known outcome
        text = "-"
    else:
        text = f"{100 * r:.1f}%" + _ci(row["success_rate_ci_low"], row["success_rate_ci_high"])
    if row["outcome_unknown_episodes"]:
        text += f" ({row['outcome_unknown_episodes']} unknown)"
    if row.get("judged_outcome_episodes"):
        text += f" ({row['judged_outcome_episodes']} judged)"
    return text


def _ci(lo: float | None, hi: float | None, scale: float = 100.0, digits: int = 1) -> str:
    """`` [lo, hi]``, or nothing when the interval is undefined (None or NaN)."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return ""
    return f" [{scale * lo:.{digits}f}, {scale * hi:.{digits}f}]"


def _clustered(row: dict[str, Any]) -> str:
    lo, hi = row.get("success_rate_clustered_ci_low"), row.get("success_rate_clustered_ci_high")
    if lo is None or hi is None or lo != lo or hi != hi:
        return "-"
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def _shown_ks(values: dict[str, Any], every: bool) -> list[str]:
    """Every k (markdown, CSV), or k = 2 and the largest k (terminal tables); JSON has
    all of them."""
    ks = [k for k, v in values.items() if v["value"] is not None]
    if every:
        return ks
    ks = [k for k in ks if k != "1"]
    return list(dict.fromkeys([ks[0], ks[-1]])) if ks else []


def _pass_k(row: dict[str, Any], field: str, symbol: str, every: bool = False) -> str:
    if row.get("pass_at_k_note"):
        return "per agent only"
    values = row.get(field) or {}
    parts = [f"{symbol}{k} {100 * values[k]['value']:.1f}%"
             f"{_ci(values[k]['ci_low'], values[k]['ci_high'])}{_over(values[k])}"
             for k in _shown_ks(values, every)]
    return ", ".join(parts) or "-"


def _over(value: dict[str, Any]) -> str:
    """`` over 44 of 45 tasks`` when some tasks have fewer than k scored attempts."""
    total = value.get("tasks_total")
    if total is None or value["tasks"] >= total:
        return ""
    return f" over {value['tasks']} of {total} tasks"


def _money(v: float | None, sign: str = "$") -> str:
    """Three significant digits (``$0.460``, ``$1.13``, ``$230``)."""
    if v is None or v != v:
        return "-"
    if v == float("inf"):
        return "inf"
    if v >= 100:
        return f"{sign}{v:,.0f}"
    return f"{sign}{v:.2f}" if v >= 1 else f"{sign}{v:#.3g}"


def _cost_ci(row: dict[str, Any], field: str) -> str:
    """``$0.4600 [$0.42, $0.50]``; ``inf (no success)`` for a cost per success that never
    passed; ``-`` when unknown."""
    v = row.get(field)
    if v is None:
        return "-"
    if v == float("inf"):
        return "inf (no success)"
    lo, hi = row.get(f"{field}_ci_low"), row.get(f"{field}_ci_high")
    if lo is None or hi is None:
        return _money(v)
    return f"{_money(v)} [{_money(lo, '')}, {_money(hi, '')}]"


def _status(row: dict[str, Any]) -> str:
    return row.get("run_status_note") or row.get("run_status") or "-"


def _published(row: dict[str, Any]) -> str:
    """The source's headline beside ours: ``52.8% (reason)``; ``-`` when none."""
    heads = row.get("published") or []
    if not heads:
        return "-"
    h = heads[0]
    text = f"{100 * h['value']:.1f}%"
    if h.get("differs_because"):
        text += f" ({h['differs_because']})"
    if len(heads) > 1:
        text += f" (+{len(heads) - 1} more)"
    return text


def _reward(row: dict[str, Any]) -> str:
    m, lo, hi = row["mean_reward"], row["mean_reward_ci_low"], row["mean_reward_ci_high"]
    if m is None:
        return "-"
    return f"{m:.3f}" + _ci(lo, hi, 1.0, 3)


def _cost(row: dict[str, Any]) -> str:
    text = "-" if row["total_cost_usd"] is None else f"${row['total_cost_usd']:,.4f}"
    if row["cost_computed_episodes"]:
        text += f" ({row['cost_computed_episodes']} priced from tokens)"
    if row["cost_unknown_episodes"]:
        text += f" (+{row['cost_unknown_episodes']} unknown)"
    return text


def _judge_cost(row: dict[str, Any]) -> str:
    """The judge's (evaluation) cost; ``-`` when no judge usage, ``(+N unknown)`` when
    some episodes' judge cost is unknown."""
    text = "-" if row.get("judge_cost_usd") is None else f"${row['judge_cost_usd']:,.4f}"
    if row.get("judge_cost_unknown_episodes"):
        text += f" (+{row['judge_cost_unknown_episodes']} unknown)"
    return text


def _run_cost(row: dict[str, Any]) -> str:
    """Agent plus judge cost (known costs); ``-`` when either part is unknown."""
    v = row.get("run_total_cost_usd")
    if v is None:
        return "-"
    unknown = (row.get("cost_unknown_episodes") or 0) + (
        row.get("judge_cost_unknown_episodes") or 0)
    return f"${v:,.4f}" + (f" (+{unknown} unknown)" if unknown else "")


JUDGE_COLUMNS = [
    Col("judge_tokens", "judge tokens", lambda r: fmt_value(r.get("judge_tokens"), 0), 14),
    Col("judge_cost_usd", "judge cost", _judge_cost, 14.1),
    Col("run_total_tokens", "total tokens (agent+judge)",
        lambda r: fmt_value(r.get("run_total_tokens"), 0), 14.2),
    Col("run_total_cost_usd", "total cost (agent+judge)", _run_cost, 14.3),
]
"""Low-priority columns (dropped first on a narrow terminal): the evaluation's usage
apart from the agent's, and the run's total (:func:`~evalatlas.analysis.summary.
judge_usage_fields`)."""


def _errors(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in row["errors_by_type"].items()) or "-"


def summary_cmd(
    ctx: typer.Context,
    by: Annotated[str, typer.Option("--by", help="Group by agent, experiment, benchmark, "
                                    "model, task, status or label:<name>; comma-separate "
                                    "for several.")] = "agent",
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    benchmark: Annotated[list[str] | None, typer.Option(
        "--benchmark", "-b", help="Only these benchmarks (name, any case).")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", "-a", help="Only these agents (id or name, any case).")] = None,
    confidence: Annotated[float, typer.Option(help="Interval confidence level.")] = 0.95,
    outcome: Annotated[str, typer.Option(
        "--outcome", help="harness: the harness's own outcomes only (others unknown); "
        "judge: the LLM judge's verdict wherever there is one; any: harness where present, "
        "else judge.")] = "any",
    missing: Annotated[str, typer.Option(
        "--missing", help="Tasks the benchmark has but the experiment did not report: "
        "ignore (rate over reported tasks, flagged) or fail (counted as failures).")
                       ] = "ignore",
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Success rate with a Wilson interval, errors, tokens, cost and time per group.

    With one grouping key it also shows the success interval with tasks as clusters
    (repeated attempts of a task are not independent) and pass@k for the k values the
    scored attempts allow, each over the tasks with at least k of them. Rows are ranked by
    success rate; an agent that ran several benchmarks gets a row per benchmark; runs
    that did not finish say so; the source's own headline is shown beside ours.
    """
    groups = [b.strip() for b in by.split(",") if b.strip()]
    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            result = summary(store, groups, experiment=experiment, benchmark=benchmark,
                             agent=agent, confidence=confidence,
                             # text from the command line: the API checks it (Literal)
                             outcome=cast(Any, outcome), missing=cast(Any, missing))
        except ValueError as exc:
            fail(str(exc))
    pct = f"{round(100 * confidence)}%"
    incomplete = any(r.get("run_status") == "incomplete" for r in result.rows)
    columns = [Col(g, g, None, 0, "name") for g in result.meta["group_by"]] + [
        Col("experiments", "exps", None, 11),
        Col("episodes", "episodes", None, 2),
        Col("tasks", "tasks", lambda r: r.get("task_coverage") or str(r["tasks"]), 3),
        Col("success_rate", f"success [{pct} CI]", _rate, 1),
        Col("success_rate_clustered_ci_low", "CI (tasks clustered)", _clustered, 7),
        Col("pass_at_k", "pass@k",
            lambda r: _pass_k(r, "pass_at_k", "@", fmt != OutputFormat.table), 5),
        Col("pass_hat_k", "pass^k",
            lambda r: _pass_k(r, "pass_hat_k", "^", fmt != OutputFormat.table), 6),
        Col("mean_reward", "mean reward [CI]", _reward, 6),
        Col("errors_by_type", "errors", _errors, 8),
        Col("total_tokens", "tokens", None, 12),
        Col("mean_tokens", "tokens/ep", lambda r: fmt_value(r["mean_tokens"], 0), 9),
        Col("total_cost_usd", "cost", _cost, 4),
        Col("cost_per_episode", f"cost/episode [{pct} CI]",
            lambda r: _cost_ci(r, "cost_per_episode"), 4.2),
        Col("cost_per_success", f"cost/success [{pct} CI]",
            lambda r: _cost_ci(r, "cost_per_success"), 4.4),
        Col("published", "published by the source", _published, 1.5),
        Col("mean_wall_time_s", "wall s/ep", lambda r: fmt_value(r["mean_wall_time_s"], 1),
            10),
        *JUDGE_COLUMNS,
    ]
    if fmt == OutputFormat.table and not any(r.get("judge_usage_episodes")
                                             for r in result.rows):
        # no judge usage anywhere: four columns of dashes would say nothing
        columns = [c for c in columns if c not in JUDGE_COLUMNS]
    if fmt == OutputFormat.table and not any(r.get("published") for r in result.rows):
        # a column of dashes would push cost off an 80-column terminal
        columns = [c for c in columns if c.key != "published"]
    if incomplete or fmt != OutputFormat.table:
        columns.insert(len(result.meta["group_by"]) + 1,
                       Col("run_status", "run", _status, 1.2 if incomplete else 13))
    text = render_result(result, columns, fmt, title="Summary")
    published = result.meta.get("published") or []
    if published and fmt in (OutputFormat.table, OutputFormat.markdown):
        more = render(published, PUBLISHED_COLUMNS, fmt, schema=result.schema,
                      title=f"Published by the source vs recomputed by evalatlas "
                            f"({len(published)} number{'s' if len(published) != 1 else ''})")
        text = None if text is None else text + "\n" + (more or "")
    emit(text, output)


def _num(key: str) -> Any:
    """Four significant digits (``0.6493``, not ``0.6493000000000001``): enough to see
    a leaderboard's rounding; JSON keeps the source's digits as written."""
    return lambda r: "-" if r.get(key) is None else f"{float(r[key]):.4g}"


def _agrees(row: dict[str, Any]) -> str:
    text = {True: "yes", False: "NO", None: "-"}[row["agrees"]]
    return f"{text} ({row['note']})" if row.get("note") else text


def _board(row: dict[str, Any]) -> str:
    """The leaderboard a number was published on (SWE-bench: Verified, bash-only)."""
    return str(row["board"]) if row.get("board") and "leaderboard" in str(
        row.get("source") or "") else "-"


PUBLISHED_COLUMNS = [
    Col("experiment", "experiment", None, 0, "name"), Col("board", "board", _board, 1.5),
    Col("score", "score", None, 1, "name"),
    Col("metric", "metric", None, 2), Col("published", "published", _num("published"), 3),
    Col("evalatlas", "evalatlas", _num("evalatlas"), 4),
    Col("n_evalatlas", "n (source / here)", lambda r: f"{fmt_value(r['n_published'])} / "
        f"{fmt_value(r['n_evalatlas'])}", 6),
    Col("agrees", "agrees", _agrees, 5), Col("reducer", "reducer", None, 7),
]


def register(app: typer.Typer) -> None:
    app.command("summary")(summary_cmd)
