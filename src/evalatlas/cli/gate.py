"""``evalatlas gate`` and ``evalatlas gate plan``: the CI gate over :func:`evalatlas.gate`.

Thin: parse, call the API, render one of five formats, exit with the verdict's code
(0 pass, 1 regression, 2 usage or data error, 3 inconclusive with
``--fail-inconclusive``). The rendering functions here are pure (result in, text out) so
each format is tested without a store.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, cast
from xml.etree import ElementTree as ET

import typer
from rich.markup import escape

from evalatlas.cli.common import OutputOption, console, emit, err_console, fail, open_store
from evalatlas.cli.render import Col, OutputFormat, md_escape, render, render_result, safe_text

EXIT_PASS, EXIT_REGRESSION, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class GateFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    junit = "junit"
    github = "github"


class PlanFormat(StrEnum):
    table = "table"
    json = "json"


gate_app = typer.Typer(
    help="Fail a CI build only when the candidate is really worse than the baseline "
    "(paired one-sided tests, Holm across benchmarks, minimum detectable drop); "
    "`gate plan` sizes a suite.\n\nExit codes: 0 pass, 1 regression, 2 usage or data "
    "error, 3 inconclusive with --fail-inconclusive. Guide: docs/ci-gate.md.",
    no_args_is_help=False, pretty_exceptions_enable=False)


# ------------------------------------------------------------------ pure renderers
def _pts(v: float | None, metric: str, signed: bool = False) -> str:
    if v is None:
        return "-"
    if metric == "success":
        return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"
    return f"{v:+.3g}" if signed else f"{v:.3g}"


def _rate(v: float | None, metric: str) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}%" if metric == "success" else f"{v:.3g}"


def _diff_cell(r: dict[str, Any], metric: str) -> str:
    text = _pts(r["diff"], metric, signed=True)
    if r.get("diff_ci_low") is not None and r.get("diff_ci_high") is not None:
        text += (f" [{_pts(r['diff_ci_low'], metric, True)},"
                 f" {_pts(r['diff_ci_high'], metric, True)}]")
    return text


def _p_cell(r: dict[str, Any]) -> str:
    if r["p_value"] is None:
        return "-"
    text = f"{r['p_value']:.3g}"
    if r["p_holm"] is not None and r["p_holm"] != r["p_value"]:
        text += f" ({r['p_holm']:.3g})"
    return text


def _rates(r: dict[str, Any], metric: str) -> str:
    if metric == "success" and r["baseline_rate"] is not None:
        return f"{100 * r['baseline_rate']:.1f} -> {100 * r['candidate_rate']:.1f}"
    return f"{_rate(r['baseline_rate'], metric)} -> {_rate(r['candidate_rate'], metric)}"


def _columns(meta: dict[str, Any]) -> list[Col]:
    metric = meta["metric"]
    unit = "%" if metric == "success" else ""
    return [
        Col("group", "group", None, 0, "name"),
        Col("tested_tasks", "tasks", None, 1),
        Col("baseline_rate", f"base -> cand{unit}", lambda r: _rates(r, metric), 3),
        Col("diff", f"diff [{meta['interval'].split()[0]}]", lambda r: _diff_cell(r, metric),
            2),
        Col("p_value", "p (Holm)", _p_cell, 1.5),
        Col("mde", "mde", lambda r: _pts(r["mde"], metric), 2.5),
        Col("verdict", "verdict", None, 0.5),
    ]


def _task_list(tasks: list[Any], limit: int = 20) -> str:
    names = [t["task_id"] if isinstance(t, dict) else t for t in tasks]
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _flaky_text(r: dict[str, Any], limit: int = 20) -> str:
    items = [f"{f['task_id']} ({f['successes']}/{f['attempts']})"
             for f in r["flaky_tasks"][:limit]]
    more = len(r["flaky_tasks"]) - limit
    return ", ".join(items) + (f" and {more} more" if more > 0 else "")


def _detail_lines(result: Any) -> list[str]:
    """Sentences, hard regressions and flaky tasks per group, then the notes."""
    out = [f"verdict: {result.verdict}"]
    for r in result.rows:
        out.append(r["sentence"])
        if r["regressed_tasks"]:
            out.append(f"  hard regressions on {r['group']} (baseline solved every "
                       f"attempt, candidate none): {_task_list(r['regressed_tasks'])}")
        if r["flaky_tasks"]:
            left = " (left out of the test)" if r["excluded_flaky"] else ""
            out.append(f"  flaky on {r['group']}{left}: {len(r['flaky_tasks'])} task(s) "
                       f"whose baseline attempts disagree: {_flaky_text(r)}")
    return out + list(result.notes)


def print_table(result: Any) -> None:
    """The terminal table (fits 80 columns) and one sentence per group."""
    title = (f"Gate: {result.meta['candidate']} (candidate) vs "
             f"{result.meta['baseline']} (baseline)")
    render(result.rows, _columns(result.meta), OutputFormat.table,
           schema=result.schema, title=title)
    for line in _detail_lines(result):
        console.print(escape(safe_text(line)), highlight=False)


def to_json(result: Any) -> str:
    """Exactly ``result.to_dict()`` (the shared JSON renderer)."""
    return render_result(result, [], OutputFormat.json) or ""


def _md(text: Any) -> str:
    return md_escape(safe_text(text))


def to_markdown(result: Any) -> str:
    """A pull-request comment: headline verdict, one table, sentences, lists."""
    m = result.meta
    head = {"pass": "pass", "regression": "REGRESSION",
            "inconclusive": "inconclusive"}[result.verdict]
    lines = [f"### evalatlas gate: {head}", "",
             f"Candidate **{_md(m['candidate'])}** vs baseline **{_md(m['baseline'])}** "
             f"({_md(m['metric'])}; allowed drop {_pts(m['max_drop'], m['metric'])}"
             f"{' points' if m['metric'] == 'success' else ''}; one-sided alpha "
             f"{m['alpha']:g}; {_md(m['interval'])} intervals)", ""]
    cols = _columns(m)
    lines.append("| " + " | ".join(_md(c.header) for c in cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for r in result.rows:
        cells = [c.format(r) if c.format else str(r.get(c.key)) for c in cols]
        lines.append("| " + " | ".join(_md(x) for x in cells) + " |")
    lines.append("")
    lines += [f"- {_md(r['sentence'])} ({_md(r['test'] or 'no test')})" for r in result.rows]
    for r in result.rows:
        if r["regressed_tasks"]:
            lines += ["", f"**Hard regressions on {_md(r['group'])}** (baseline solved "
                      f"every attempt, candidate none): {_md(_task_list(r['regressed_tasks']))}"]
        if r["flaky_tasks"]:
            left = ", left out of the test" if r["excluded_flaky"] else ""
            lines += ["", f"<details><summary>{len(r['flaky_tasks'])} flaky task(s) on "
                      f"{_md(r['group'])} (baseline attempts disagree{left})</summary>", "",
                      _md(_flaky_text(r, limit=200)), "", "</details>"]
    if result.notes:
        lines += ["", *[f"_{_md(n)}_" for n in result.notes]]
    return "\n".join(lines) + "\n"


def _xml_text(text: Any) -> str:
    """Text for an XML document: terminal-safe (visible escapes for control characters,
    none of which XML 1.0 allows) and credentials redacted."""
    return safe_text(text)


def to_junit(result: Any, fail_inconclusive: bool = False) -> str:
    """JUnit XML: one ``testcase`` per group; a ``failure`` on regression (and on
    inconclusive with ``fail_inconclusive``)."""
    m = result.meta
    failures = [r for r in result.rows if r["verdict"] == "regression" or (
        fail_inconclusive and r["verdict"] == "inconclusive")]
    suites = ET.Element("testsuites", name="evalatlas gate", tests=str(len(result.rows)),
                        failures=str(len(failures)))
    suite = ET.SubElement(
        suites, "testsuite", name=_xml_text(f"evalatlas gate: {m['candidate']} vs "
                                            f"{m['baseline']}"),
        tests=str(len(result.rows)), failures=str(len(failures)), errors="0", skipped="0")
    for r in result.rows:
        case = ET.SubElement(suite, "testcase", classname="evalatlas.gate",
                             name=_xml_text(r["group"]))
        if r in failures:
            node = ET.SubElement(case, "failure", message=_xml_text(r["sentence"]),
                                 type=r["verdict"])
            node.text = _xml_text("\n".join(_row_details(r)))
        out = ET.SubElement(case, "system-out")
        out.text = _xml_text("\n".join([r["sentence"], *_row_details(r)]))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _row_details(r: dict[str, Any]) -> list[str]:
    out = [f"test: {r['test']}; p = {r['p_value']}; p_holm = {r['p_holm']}; "
           f"diff = {r['diff']}; mde = {r['mde']}"]
    if r["regressed_tasks"]:
        out.append(f"hard regressions: {_task_list(r['regressed_tasks'], 200)}")
    if r["flaky_tasks"]:
        out.append(f"flaky tasks: {_flaky_text(r, 200)}")
    return out


def _gh_data(text: str) -> str:
    """GitHub workflow-command message escaping (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    """Workflow-command property escaping (message escaping plus ``:`` and ``,``)."""
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(result: Any, fail_inconclusive: bool = False) -> str:
    """GitHub Actions workflow commands: ``::error`` per regressed group (and inconclusive
    with ``fail_inconclusive``), ``::warning`` for inconclusive groups and hard regressions,
    ``::notice`` for passing groups and flaky tasks."""
    lines = []
    for r in result.rows:
        group = safe_text(r["group"])
        level = {"regression": "error", "inconclusive": (
            "error" if fail_inconclusive else "warning")}.get(r["verdict"], "notice")
        title = _gh_prop(f"evalatlas gate {r['verdict']}: {group}")
        lines.append(f"::{level} title={title}::{_gh_data(safe_text(r['sentence']))}")
        if r["regressed_tasks"]:
            lines.append(f"::warning title={_gh_prop(f'hard regressions: {group}')}::"
                         + _gh_data(safe_text(
                             f"{len(r['regressed_tasks'])} task(s) the baseline always "
                             f"solved and the candidate never did: "
                             f"{_task_list(r['regressed_tasks'])}")))
        if r["flaky_tasks"]:
            lines.append(f"::notice title={_gh_prop(f'flaky tasks: {group}')}::"
                         + _gh_data(safe_text(f"{len(r['flaky_tasks'])} task(s) whose "
                                              f"baseline attempts disagree: "
                                              f"{_flaky_text(r)}")))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ commands
def _open_other(path: Path) -> Any:
    from evalatlas import EvalAtlasError
    from evalatlas import open as open_db

    if not path.exists():
        fail(f"--baseline-db {path}: no such file")
    try:
        return open_db(path, read_only=True)
    except EvalAtlasError as exc:
        fail(f"--baseline-db: {exc}")


@gate_app.callback(invoke_without_command=True)
def gate_cmd(
    ctx: typer.Context,
    baseline: Annotated[str | None, typer.Option(
        "--baseline", help="Baseline: agent (name or id prefix), experiment (name or id) "
        "or label:<name>=<value>, as for `compare`.")] = None,
    candidate: Annotated[str | None, typer.Option(
        "--candidate", help="Candidate, same selectors.")] = None,
    baseline_db: Annotated[Path | None, typer.Option(
        "--baseline-db", help="Read the baseline from this store (read-only), e.g. main's "
        "results kept as a CI artifact; the candidate comes from --db.")] = None,
    metric: Annotated[str, typer.Option(
        "--metric", help="success (per-task success rate) or reward (mean reward).")
    ] = "success",
    max_drop: Annotated[float, typer.Option(
        "--max-drop", help="Allowed drop, a fraction (0.02 = 2 points).")] = 0.0,
    alpha: Annotated[float, typer.Option(help="One-sided significance level.")] = 0.05,
    by: Annotated[str, typer.Option(
        "--by", help="One test per benchmark (default), split, or none (one group).")
    ] = "benchmark",
    exclude_flaky: Annotated[bool, typer.Option(
        "--exclude-flaky", help="Leave tasks whose baseline attempts disagree out of the "
        "test.")] = False,
    sequential: Annotated[bool, typer.Option(
        "--sequential", help="Anytime-valid test: safe to re-run after every batch of "
        "finished tasks.")] = False,
    fail_inconclusive: Annotated[bool, typer.Option(
        "--fail-inconclusive", help="Exit 3 when a drop is seen but the suite is too small "
        "to tell.")] = False,
    fmt: Annotated[GateFormat, typer.Option(
        "--format", "-f", help="table, json, markdown, junit or github.")] = GateFormat.table,
    output: OutputOption = None,
) -> None:
    """Fail a CI build only when the candidate is really worse than the baseline.

    Exit codes: 0 pass, 1 regression, 2 usage or data error, 3 inconclusive with
    --fail-inconclusive."""
    if ctx.invoked_subcommand is not None:
        return
    from evalatlas import EvalAtlasError, gate

    if not baseline or not candidate:
        fail("--baseline and --candidate are both required (or use `evalatlas gate plan`)",
             EXIT_USAGE)
    other = _open_other(baseline_db) if baseline_db is not None else None
    try:
        with open_store(ctx, read_only=True, require_data=True) as store:
            try:
                # metric and by are checked by gate() (an ArgumentError, exit 2)
                result = gate(store, baseline, candidate, baseline_data=other,
                              metric=cast('Literal["success", "reward"]', metric),
                              max_drop=max_drop, alpha=alpha,
                              by=cast('Literal["benchmark", "split", "none"]', by),
                              exclude_flaky=exclude_flaky, sequential=sequential)
            except (EvalAtlasError, ValueError) as exc:
                fail(str(exc), EXIT_USAGE)
    finally:
        if other is not None:
            other.close()
    if fmt is GateFormat.table:
        print_table(result)
    else:
        text = {GateFormat.json: lambda: to_json(result),
                GateFormat.markdown: lambda: to_markdown(result),
                GateFormat.junit: lambda: to_junit(result, fail_inconclusive),
                GateFormat.github: lambda: to_github(result, fail_inconclusive)}[fmt]()
        emit(text, output)
    code = result.exit_code(fail_inconclusive)
    if code:
        err_console.print(f"evalatlas gate: {result.verdict} (exit {code})",
                          markup=False, highlight=False)
        raise typer.Exit(code)


def plan_cmd(
    ctx: typer.Context,
    baseline: Annotated[str, typer.Option(
        "--baseline", help="The baseline whose per-task outcomes set the variance.")],
    drop: Annotated[float, typer.Option(
        "--drop", help="Drop to detect, a fraction (0.03 = 3 points).")] = 0.03,
    power: Annotated[float, typer.Option(help="Wanted power.")] = 0.8,
    alpha: Annotated[float, typer.Option(help="One-sided significance level.")] = 0.05,
    attempts: Annotated[int | None, typer.Option(
        "--attempts", help="Attempts per task to plan for (default: the baseline's "
        "median).")] = None,
    fmt: Annotated[PlanFormat, typer.Option(
        "--format", "-f", help="table or json.")] = PlanFormat.table,
    output: OutputOption = None,
) -> None:
    """How many tasks (and attempts per task) a gate needs to detect a drop."""
    from evalatlas import EvalAtlasError, gate_plan

    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            result = gate_plan(store, baseline, drop=drop, power=power, alpha=alpha,
                               attempts=attempts)
        except (EvalAtlasError, ValueError) as exc:
            fail(str(exc), EXIT_USAGE)
    if fmt is PlanFormat.json:
        emit(to_json(result), output)
        return
    m = result.meta
    cols = [Col("attempts_per_task", "attempts/task", None, 0),
            Col("tasks_needed", "tasks needed", None, 1),
            Col("episodes", "episodes (both sides)", None, 2)]
    render(result.rows, cols, OutputFormat.table, schema=result.schema,
           title=f"Gate plan: baseline {m['baseline']}")
    need = m["tasks_needed"]
    line = (f"to detect a drop of {100 * m['drop']:.1f} points with {100 * m['power']:.0f}% "
            f"power at one-sided alpha {m['alpha']:g}: "
            + (f"{need:,} tasks x {m['attempts_per_task']} attempt(s) per task"
               if need else "not detectable") + f" (baseline has {m['baseline_tasks']:,} tasks)")
    for text in [line, *result.notes]:
        console.print(escape(safe_text(text)), highlight=False)


gate_app.command("plan")(plan_cmd)


def register(app: typer.Typer) -> None:
    app.add_typer(gate_app, name="gate")
