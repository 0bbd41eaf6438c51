"""``evalatlas compare-frameworks``: the agent-framework comparison report (seed 003)."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalatlas import (
    EvalAtlasError,
    FrameworkComparison,
    compare_frameworks,
    framework_data,
    load_scenario,
    read_framework_results,
)
from evalatlas.cli.common import OutputOption, emit, err_console, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, render, safe_text


class ReportFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


class ScorecardMode(StrEnum):
    relative = "relative"
    absolute = "absolute"
    upstream = "upstream"


def compare_frameworks_cmd(
    ctx: typer.Context,
    results_files: Annotated[list[Path] | None, typer.Argument(
        help="Upstream results JSON files or folders of them; without them, the store's "
        "episodes.")] = None,
    scenario: Annotated[str | None, typer.Option("--scenario", "-s",
                                                 help="Only this scenario.")] = None,
    mode: Annotated[str | None, typer.Option("--mode", "-m",
                                             help="Only this mode (baseline, capability).")] = None,
    framework: Annotated[list[str] | None, typer.Option(
        "--framework", help="Only these frameworks (store input).")] = None,
    scenario_dir: Annotated[Path | None, typer.Option(
        "--scenario-dir", help="Scenario directory (spec.yaml): question order, and "
        "retrieval/profile metrics recomputed from answers where the inputs exist.")] = None,
    scorecard_mode: Annotated[ScorecardMode, typer.Option(
        "--scorecard", help="Scorecard normalisation.")] = ScorecardMode.relative,
    confidence: Annotated[float, typer.Option(help="Interval confidence level.")] = 0.95,
    fmt: Annotated[ReportFormat | None, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="table (the summary, fitted to the terminal), markdown (the "
        "full report) or json. Default: table on a terminal, else markdown.")] = None,
    output: OutputOption = None,
) -> None:
    """Compare agent frameworks: summary, scorecard, latency, profile metrics, code quality,
    per-question results, correctness intervals and paired differences."""
    scenario_def = None
    if scenario_dir is not None:
        try:
            scenario_def = load_scenario(scenario_dir)
        except EvalAtlasError as exc:
            fail(str(exc))
        assert scenario_def is not None
        scenario = scenario or scenario_def.name
    problems: list = []
    if results_files:
        data, problems = read_framework_results(results_files, scenario=scenario, mode=mode,
                                                frameworks=framework,
                                                scenario_def=scenario_def)
    else:
        with open_store(ctx, read_only=True, require_data=True) as store:
            data = framework_data(store, scenario=scenario, mode=mode,
                                  frameworks=framework, scenario_def=scenario_def)
    for p in problems:
        err_console.print(f"[yellow]skipped:[/] {escape(safe_text(p))}", markup=True,
                          highlight=False)
    if not data:
        fail("no framework results found" + (" in the given files" if results_files else
             " in the store (ingest results files or run `evalatlas run` first)"))
    combos = sorted({(d.scenario, d.mode) for d in data})
    if len(combos) > 1 and not (scenario and mode):
        fail("results span several scenario/mode combinations ("
             + ", ".join(f"{s}/{m}" for s, m in combos)
             + "); choose one with --scenario and --mode")
    report = compare_frameworks(data, scorecard_mode=scorecard_mode.value,
                                confidence=confidence, scenario_def=scenario_def)
    if fmt is None:
        fmt = (ReportFormat.table if output is None and sys.stdout.isatty()
               else ReportFormat.markdown)
    if fmt is ReportFormat.table:
        _print_summary(report)
        return
    if fmt is ReportFormat.json:
        text = json.dumps(report.to_dict(), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    else:
        text = report.to_markdown()
    emit(text, output)


def _num(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _correctness(fw: dict[str, Any]) -> str:
    text = _num(fw["summary"]["avg_correctness"])
    ci = fw["correctness_interval"]
    if ci.get("low") is not None:
        text += f" [{ci['low']:.2f}, {ci['high']:.2f}]"
    return text


def _print_summary(report: FrameworkComparison) -> None:
    """The report's headline per framework as one terminal table (full report: markdown)."""
    pct = f"{round(100 * report['confidence'])}%"
    columns = [
        Col("name", "framework", None, 0, "name"),
        Col("correctness", f"correctness [{pct} CI]", _correctness, 1),
        Col("completeness", "completeness",
            lambda f: _num(f["summary"]["avg_completeness"]), 3),
        Col("faithfulness", "faithfulness",
            lambda f: _num(f["summary"]["avg_faithfulness"]), 4),
        Col("capability", "capability",
            lambda f: _num((f.get("scorecard") or {}).get("capability"), ".1f"), 2),
        Col("efficiency", "efficiency",
            lambda f: _num((f.get("scorecard") or {}).get("efficiency"), ".1f"), 5),
        Col("latency_p50", "p50 s", lambda f: _num(f["latency"]["p50"]), 6),
        Col("tokens", "tokens", lambda f: _num(f["summary"]["total_tokens"], ",.0f"), 8),
        Col("cost", "cost", lambda f: "-" if f["summary"]["total_cost_usd"] is None
            else f"${f['summary']['total_cost_usd']:,.4f}", 7),
        Col("precision", "retrieval P",
            lambda f: _num(f["summary"]["avg_retrieval_precision"]), 9),
        Col("recall", "retrieval R",
            lambda f: _num(f["summary"]["avg_retrieval_recall"]), 10),
    ]
    notes = [*report["notes"],
             f"{report['scenario']} / {report['mode']}, {report['n_questions']} questions; "
             "judge scores 1-5; full report: --format markdown"]
    render(report["frameworks"], columns, OutputFormat.table,
           schema="evalatlas.compare-frameworks/1", title="Framework comparison", notes=notes)


def register(app: typer.Typer) -> None:
    app.command("compare-frameworks")(compare_frameworks_cmd)
