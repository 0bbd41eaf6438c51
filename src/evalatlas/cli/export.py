"""``evalatlas export jsonl|parquet|eee``; ``--format json`` prints an envelope of what was
written (``evalatlas.export-<kind>/1``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from evalatlas import Store, validate_eee
from evalatlas.cli.common import (
    WrittenFormat,
    WrittenFormatOption,
    check_folder,
    check_output,
    console,
    emit_written,
    err_console,
    fail,
    open_store,
)
from evalatlas.cli.render import safe_text

export_app = typer.Typer(help="Export the store (seed JSONL, Parquet, Every Eval Ever).",
                         no_args_is_help=True)


@export_app.command("jsonl")
def jsonl_cmd(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Output JSONL file.")],
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Experiment records, then one self-contained EpisodeRecord per line (the seed's ATLAS
    submission file), then measurements; `ingest` of the file rebuilds the same store.
    '-' writes to stdout; a device (or pipe) is streamed to."""
    check_output(path)
    with open_store(ctx, read_only=True, require_data=True) as store:
        n = store.export_jsonl(path, experiment)
    if fmt is WrittenFormat.json:  # the records may be on stdout: the envelope then on stderr
        emit_written("evalatlas.export-jsonl/1",
                     [{"path": "-" if str(path) == "-" else str(path), "episodes": n}],
                     to_stderr=str(path) == "-")
        return
    (err_console if str(path) == "-" else console).print(
        f"wrote {n:,} episode records to {'stdout' if str(path) == '-' else path}",
        highlight=False, markup=False)


@export_app.command("parquet")
def parquet_cmd(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Output directory.")],
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Every store table as <table>.parquet, readable by pandas, Spark, Trino, DuckDB."""
    check_folder(directory)
    with open_store(ctx, read_only=True, require_data=True) as store:
        counts = store.export_parquet(directory)
    if fmt is WrittenFormat.json:
        emit_written("evalatlas.export-parquet/1",
                     [{"table": t, "rows": n, "path": str(directory / (t + ".parquet"))}
                      for t, n in counts.items()], directory=str(directory))
        return
    for table, n in counts.items():
        console.print(f"{table}: {n:,} rows -> {directory / (table + '.parquet')}",
                      highlight=False, markup=False)


@export_app.command("lake")
def lake_cmd(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(
        help="The lake: ducklake:postgres:<libpq string> or ducklake:PATH.ducklake.")],
    data_path: Annotated[str | None, typer.Option(
        "--to-data-path", help="The new lake's folder for Parquet files (default: the "
        "global --data-path / $EVALATLAS_DATA_PATH).")] = None,
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Copy this file store (--db) into a lake, in one transaction (created when missing;
    rows already there with the same keys are replaced, as ingest would)."""
    from evalatlas import EvalAtlasError

    root = ctx.find_root().obj or {}
    with open_store(ctx, read_only=True, require_data=True) as store:
        try:
            counts = store.export_lake(location, data_path=data_path or root.get("data_path"))
        except EvalAtlasError as exc:
            fail(str(exc))
    shown = safe_text(location)  # its password redacted
    if fmt is WrittenFormat.json:
        emit_written("evalatlas.export-lake/1", [{"table": t, "rows": n}
                                                 for t, n in counts.items()], lake=shown)
        return
    for table, n in counts.items():
        console.print(f"{table}: {n:,} rows -> {shown}", highlight=False, markup=False)



@export_app.command("eee")
def eee_cmd(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(
        help="Output folder; files go to DIR/data/<benchmark>/<developer>/<model>/.")],
    experiment: Annotated[list[str] | None, typer.Option(
        "--experiment", "-e", help="Only these experiments (id or name).")] = None,
    organization: Annotated[str, typer.Option(
        help="source_organization_name: who ran the evaluation.")] = "unknown",
    relationship: Annotated[str, typer.Option(
        help="evaluator_relationship: " + ", ".join(Store.EEE_RELATIONSHIPS) + ".")
    ] = "third_party",
    validate: Annotated[bool, typer.Option(
        "--validate", help="Check the written files against the EEE 0.3.0 JSON Schemas "
        "(needs evalatlas[eee]).")] = False,
    fmt: WrittenFormatOption = WrittenFormat.table,
) -> None:
    """Every Eval Ever 0.3.0 files: an aggregate and a samples file per experiment.

    Layout and mapping in docs/eee-export.md. Episodes whose reward is unknown are
    counted in the aggregate, not exported as samples (EEE requires a score).
    """
    if relationship not in Store.EEE_RELATIONSHIPS:
        fail(f"--relationship must be one of {', '.join(Store.EEE_RELATIONSHIPS)}")
    check_folder(directory)
    with open_store(ctx, read_only=True, require_data=True) as store:
        result = store.export_eee(directory, experiment, organization=organization,
                                  relationship=relationship)
    if fmt is WrittenFormat.json:
        _eee_json(directory, result, validate)
        return
    for w in result.written:
        unknown = f", {w.outcome_unknown} unknown outcome left out" if w.outcome_unknown else ""
        console.print(f"{safe_text(w.experiment_name)}: score {w.score:.4g}, {w.rows:,} "
                      f"samples{unknown} -> {w.aggregate}", highlight=False, markup=False,
                      soft_wrap=True)
        for part, name, written in w.renamed:  # a name that is not a safe directory
            shown = name if len(name) <= 80 else f"{name[:77]}... ({len(name):,} characters)"
            console.print(f"  {part} {safe_text(shown)!r} written as directory "
                          f"{safe_text(written)!r}", highlight=False, markup=False,
                          soft_wrap=True)
    for exp_id, reason in result.skipped:
        console.print(f"skipped {safe_text(exp_id)}: {safe_text(reason)}", highlight=False,
                      markup=False)
    console.print(f"wrote {len(result.written)} EEE evaluations under {directory / 'data'}",
                  highlight=False, markup=False)
    if validate:
        try:
            problems = validate_eee(directory)
        except ImportError as exc:  # evalatlas[eee] is not installed: the message says so
            fail(str(exc))
        for p in problems:
            console.print(f"invalid: {p}", highlight=False, markup=False, soft_wrap=True)
        if problems:
            fail(f"{len(problems)} schema problem(s) in the export")
        console.print("valid against the EEE 0.3.0 schemas", highlight=False, markup=False)


def _eee_json(directory: Path, result: Any, validate: bool) -> None:
    """``export eee --format json``: one row per experiment written, the skipped ones
    with their reason, and (``--validate``) the schema problems; problems still fail."""
    rows = [{"experiment_id": w.experiment_id, "experiment": w.experiment_name,
             "score": w.score, "samples": w.rows, "outcome_unknown": w.outcome_unknown,
             "aggregate": str(w.aggregate), "samples_file": str(w.samples),
             "renamed": [{"part": p, "name": n, "directory": d} for p, n, d in w.renamed]}
            for w in result.written]
    meta: dict[str, Any] = {"directory": str(directory / "data"),
                            "skipped": [{"experiment_id": e, "reason": r}
                                        for e, r in result.skipped]}
    problems: list[str] = []
    if validate:
        try:
            problems = [str(p) for p in validate_eee(directory)]
        except ImportError as exc:  # evalatlas[eee] is not installed: the message says so
            fail(str(exc))
        meta["problems"] = problems
    emit_written("evalatlas.export-eee/1", rows, **meta)
    if problems:
        fail(f"{len(problems)} schema problem(s) in the export")


def register(app: typer.Typer) -> None:
    app.add_typer(export_app, name="export")
