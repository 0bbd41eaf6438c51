"""``evalatlas ingest PATH...``."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from evalatlas import EvalAtlasError, ReadLimits, Store
from evalatlas.cli.common import console, err_console, fail, open_store
from evalatlas.cli.render import safe_text


class IngestFormat(StrEnum):
    table = "table"
    json = "json"


def ingest(
    ctx: typer.Context,
    paths: Annotated[list[str], typer.Argument(help="EvalLog or cube directories, JSONL "
                                                "files, other supported formats, or folders.")],
    input_format: Annotated[str | None, typer.Option(
        "--input-format", help="Force one adapter (see `evalatlas formats`).")] = None,
    batch_size: Annotated[int, typer.Option(help="Records per transaction.")
                          ] = Store.DEFAULT_BATCH_SIZE,
    fmt: Annotated[IngestFormat, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="table (a summary line) or json (the report).")] = IngestFormat.table,
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    prices: Annotated[Path | None, typer.Option(
        "--prices", help="Price file (TOML or YAML) used first when costs are computed "
        "from tokens; see `evalatlas price --help`.")] = None,
    max_line_bytes: Annotated[int, typer.Option(
        "--max-line-bytes", min=1, help="Longest JSONL line (one record) read; longer lines "
        "are quarantined without being held in memory.")] = ReadLimits.max_line_bytes,
    max_file_bytes: Annotated[int, typer.Option(
        "--max-file-bytes", min=1, help="Largest input file (after decompression).")
    ] = ReadLimits.max_file_bytes,
    max_record_bytes: Annotated[int, typer.Option(
        "--max-record-bytes", min=1, help="Largest JSON document read whole (a .json file).")
    ] = ReadLimits.max_record_bytes,
    max_json_depth: Annotated[int, typer.Option(
        "--max-json-depth", min=1, help="Deepest nesting of objects/arrays in a record.")
    ] = ReadLimits.max_json_depth,
    force: Annotated[bool, typer.Option(
        "--force", help="Re-read files even when unchanged since their last ingest.")
    ] = False,
    unknown_model_cost: Annotated[str, typer.Option(
        "--unknown-model-cost", help="'none' (default): tokens of a model without a price "
        "have an unknown cost; 'zero': $0, as the seeds do.")] = "none",
    benchmark: Annotated[str | None, typer.Option(
        "--benchmark", help="Name the benchmark of every ingested experiment (e.g. a py-irt "
        "response matrix, otherwise named after its file).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="The model of every ingested experiment's agent, for sources that "
        "lack it (recorded as an override).")] = None,
    agent_name: Annotated[str | None, typer.Option(
        "--agent-name", help="The agent name of every ingested experiment (recorded as an "
        "override).")] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="key=value label set on every ingested experiment (repeatable; "
        "recorded as an override).")] = None,
) -> None:
    """Ingest evaluation outputs into the store (idempotent, transactional, streaming)."""
    json_out = json_out or fmt is IngestFormat.json
    if unknown_model_cost not in ("none", "zero"):
        fail("--unknown-model-cost must be 'none' or 'zero'")
    try:
        labels: dict[str, str] = {}
        for item in label or []:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"label {item!r} must be written key=value")
            labels[key.strip()] = value
        # before a store is created: '' is refused, never read as the current directory
        Store.check_ingest(*paths, model=model, agent_name=agent_name, labels=labels)
    except ValueError as exc:
        fail(str(exc))
    for p in map(Path, paths):  # a typo creates no store (ingest checks every named path)
        if str(p) != "-" and not p.exists() and not p.is_symlink():
            fail(f"{p}: no such file or folder (nothing was ingested)")
    if prices is not None:
        try:
            Store.check_ingest(*paths, prices=prices)  # a bad file creates no store
        except (EvalAtlasError, OSError, ValueError) as exc:
            fail(str(exc))
    with open_store(ctx, create=True) as store:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                      TextColumn("{task.completed:,} records"), TimeElapsedColumn(),
                      console=err_console, transient=True,
                      disable=json_out or not err_console.is_terminal) as progress:
            task = progress.add_task("ingesting", total=None)

            def on_progress(source: str, n: int) -> None:
                name = Path(source).name if source else "done"
                progress.update(task, completed=n, description=escape(name[-40:]))

            report = store.ingest(*paths, fmt=input_format, batch_size=batch_size,
                                  on_progress=on_progress,
                                  unknown_model_cost=unknown_model_cost, force=force,
                                  limits=ReadLimits(max_line_bytes, max_file_bytes,
                                                    max_record_bytes, max_json_depth),
                                  benchmark=benchmark, model=model,
                                  agent_name=agent_name, labels=labels, prices=prices)
        db = store.path
    if json_out:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        console.print(
            f"ingested {report.experiments:,} experiments, {report.episodes:,} episodes, "
            f"{report.measurements:,} measurements from {report.sources:,} sources "
            f"into {escape(str(db))}", highlight=False)
        if report.unchanged:
            err_console.print(f"skipped {len(report.unchanged):,} unchanged files (already "
                              "ingested; --force re-reads them)", highlight=False)
        for s in report.skipped[:20]:
            err_console.print(f"[yellow]skipped[/] {escape(safe_text(s.path))}: "
                              f"{escape(safe_text(s.reason))}",
                              highlight=False)
        if len(report.skipped) > 20:
            err_console.print(f"... and {len(report.skipped) - 20:,} more skipped paths "
                              "(see --json)", highlight=False)
        if report.rejected:
            err_console.print(f"[yellow]rejected {report.rejected:,} records[/]; first ones:",
                              highlight=False)
            for problem in report.problems[:10]:
                err_console.print(f"  {escape(safe_text(problem))}", highlight=False)
            err_console.print("list them all with: evalatlas quarantine", highlight=False)
    if report.rejected and not (report.episodes or report.experiments or report.measurements):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
