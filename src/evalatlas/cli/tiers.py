"""``evalatlas tiers``: ProjectScylla's per-tier table with intervals and uplift."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

import typer

from evalatlas import tiers
from evalatlas.cli.common import FormatOption, OutputOption, emit, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, fmt_value, render_result


def _pct_ci(row: dict[str, Any]) -> str:
    return (f"{100 * row['pass_rate']:.1f}% [{100 * row['pass_rate_ci_low']:.1f}, "
            f"{100 * row['pass_rate_ci_high']:.1f}]")


def _money(v: float | None) -> str:
    if v is None:
        return "-"
    return "inf" if v == float("inf") else f"${v:,.4f}"


def _with_ci(row: dict[str, Any], key: str) -> str:
    text = fmt_value(row[key])
    if row.get(f"{key}_ci_low") is not None:
        text += f" [{fmt_value(row[f'{key}_ci_low'])}, {fmt_value(row[f'{key}_ci_high'])}]"
    return text


def _cost(row: dict[str, Any]) -> str:
    text = _money(row["mean_cost_usd"])
    if row.get("mean_cost_ci_low") is not None:
        text += f" [{_money(row['mean_cost_ci_low'])}, {_money(row['mean_cost_ci_high'])}]"
    if row["cost_unknown_runs"]:
        text += f" (+{row['cost_unknown_runs']} unknown)"
    return text


def _uplift(row: dict[str, Any]) -> str:
    if row["uplift"] is None:
        return "-" if row["uplift_note"] is None else f"undefined ({row['uplift_note']})"
    text = f"{100 * row['uplift']:+.1f}%"
    if row["uplift_ci_low"] is not None:
        text += f" [{100 * row['uplift_ci_low']:+.1f}, {100 * row['uplift_ci_high']:+.1f}]"
    return text


def tiers_cmd(
    ctx: typer.Context,
    baseline: Annotated[str, typer.Option("--baseline", help="Tier the uplift is measured "
                                          "against; 'none' for no uplift.")] = "T0",
    label: Annotated[str, typer.Option("--label", help="Experiment label that names the "
                                       "tier.")] = "tier",
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    scale: Annotated[str, typer.Option("--scale", help="Grade scale: seed (A>=.95 ...) or "
                                       "scylla (S at 1.0, A>=.80 ...).")] = "seed",
    ddof: Annotated[int, typer.Option("--ddof", help="0: population std/variance (seed); "
                                      "1: sample (ProjectScylla's code).")] = 0,
    pass_weight: Annotated[float, typer.Option(help="Composite weight of pass rate.")] = 0.5,
    impl_weight: Annotated[float, typer.Option(help="Composite weight of impl rate.")] = 0.5,
    confidence: Annotated[float, typer.Option(help="Interval confidence level.")] = 0.95,
    fmt: FormatOption = OutputFormat.table,
    output: OutputOption = None,
) -> None:
    """Per tier: runs, pass rate [CI], impl rate, median composite, grade, cost, cost of
    pass and uplift [CI] against the baseline; then cross-tier variance and cost delta."""
    if scale not in ("seed", "scylla"):
        fail(f"unknown grade scale {scale!r}; use seed or scylla")
    base = None if baseline.lower() == "none" else baseline
    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            report = tiers(store, baseline=base, label=label, experiment=experiment,
                           confidence=confidence, weights=(pass_weight, impl_weight),
                           scale=cast('Literal["seed", "scylla"]', scale),  # checked above
                           ddof=ddof)
        except ValueError as exc:
            fail(str(exc))
    pct = f"{round(100 * confidence)}%"
    columns = [
        Col("tier", "tier", None, 0, "name"), Col("runs", "runs", None, 2),
        Col("pass_rate", f"pass rate [{pct} CI]", _pct_ci, 1),
        Col("impl_rate", "impl rate", lambda r: _with_ci(r, "impl_rate"), 8),
        Col("composite_median", "composite (median)",
            lambda r: _with_ci(r, "composite_median"), 7),
        Col("grade", "grade", None, 4),
        Col("mean_cost_usd", "mean cost", _cost, 6),
        Col("cost_of_pass_usd", "cost of pass", lambda r: _money(r["cost_of_pass_usd"]), 5),
        Col("uplift", f"uplift vs {report.baseline or '-'} [{pct} CI]", _uplift, 3),
    ]
    emit(render_result(report, columns, fmt, title="Tiers"), output)


def register(app: typer.Typer) -> None:
    app.command("tiers")(tiers_cmd)
