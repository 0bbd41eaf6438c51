"""``evalatlas compare-frameworks``: the agent-framework comparison report (seed 003)."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalatlas.adapters.framework_results import ADAPTER as FRAMEWORK_RESULTS
from evalatlas.adapters.framework_results import read_results_file
from evalatlas.adapters.frameworks import Scenario, load_scenario
from evalatlas.analysis.frameworks import FrameworkData, group_records
from evalatlas.api import compare_frameworks, framework_data
from evalatlas.cli.common import OutputOption, emit, err_console, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, render, safe_text
from evalatlas.errors import InputError, Problem
from evalatlas.metrics.scorecard import MODES
from evalatlas.records.models import EpisodeRecord, ExperimentRecord
from evalatlas.report.frameworks import render_markdown


class ReportFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


class ScorecardMode(StrEnum):
    relative = "relative"
    absolute = "absolute"
    upstream = "upstream"


assert tuple(m.value for m in ScorecardMode) == MODES


def data_from_files(
    files: list[Path], *, scenario: str | None, mode: str | None,
    scenario_def: Scenario | None = None,
) -> tuple[list[FrameworkData], list[Problem]]:
    """Read upstream results files (run-averaged ones included) into FrameworkData."""
    experiments: list[ExperimentRecord] = []
    episodes: list[EpisodeRecord] = []
    problems: list[Problem] = []
    for f in files:
        if not f.is_file():
            problems.append(Problem(str(f), "no such file"))
            continue
        for item in read_results_file(f, allow_averaged=True):
            if isinstance(item, ExperimentRecord):
                experiments.append(item)
            elif isinstance(item, EpisodeRecord):
                episodes.append(item)
            elif isinstance(item, Problem):
                problems.append(item)
    return group_records(experiments, episodes, scenario=scenario, mode=mode,
                         scenario_def=scenario_def), problems


def _expand(paths: list[Path]) -> list[Path]:
    """Files as given; folders replaced by the results files found under them."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += [f for f in sorted(p.rglob("*.json")) if FRAMEWORK_RESULTS.detect(f)]
        else:
            out.append(p)
    return out


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
        "--format", "-f", help="table (the summary, fitted to the terminal), markdown (the "
        "full report) or json. Default: table on a terminal, else markdown.")] = None,
    output: OutputOption = None,
) -> None:
    """Compare agent frameworks: summary, scorecard, latency, profile metrics, code quality,
    per-question results, correctness intervals and paired differences."""
    scenario_def = None
    if scenario_dir is not None:
        try:
            scenario_def = load_scenario(scenario_dir)
        except InputError as exc:
            fail(str(exc))
        assert scenario_def is not None
        scenario = scenario or scenario_def.name
    problems: list[Problem] = []
    if results_files:
        results_files = _expand(results_files)
        data, problems = data_from_files(results_files, scenario=scenario, mode=mode,
                                         scenario_def=scenario_def)
        if framework:
            data = [d for d in data if d.framework in framework or d.display_name in framework]
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
        text = json.dumps(report, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    else:
        text = render_markdown(report)
    emit(text, output)


def _num(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _correctness(fw: dict[str, Any]) -> str:
    text = _num(fw["summary"]["avg_correctness"])
    ci = fw["correctness_interval"]
    if ci.get("low") is not None:
        text += f" [{ci['low']:.2f}, {ci['high']:.2f}]"
    return text


def _print_summary(report: dict[str, Any]) -> None:
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
