"""``evalatlas formats``: the input formats `ingest` recognises."""

from __future__ import annotations

import typer

from evalatlas.adapters.registry import all_adapters
from evalatlas.cli.common import FormatOption, OutputOption, emit
from evalatlas.cli.render import OutputFormat, render

EXAMPLES: dict[str, str] = {
    "evalatlas-parquet": "(the folder `evalatlas export parquet DIR` writes)",
    "evallog": "fixtures/cube/xray/v2_no_status",
    "inspect": "fixtures/inspect/log_read_sample.eval",
    "eee": "fixtures/eee/skill_reference_conversion/data/demo-source/demo-org/demo-model/"
           "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json",
    "jsonl": "examples/jsonl/tiny-mini-toybench.jsonl",
    "scylla": "fixtures/scylla/dryrun/raw",
    "tau-bench": "fixtures/tau-bench/gpt-4o-airline.reduced.json",
    "fc-website": "fixtures/formulacode/website_data.csv",
    "swebench": "fixtures/swebench-java-verified/20240825_SWE-agent_deepseek-chat-v2",
    "swebench-pro-docent": "fixtures/swebench-pro/agent_runs_data.csv",
    "swebench-pro": "fixtures/swebench-pro",
    "terminal-bench": "fixtures/terminal-bench/20250711_openhands_claude-4-sonnet",
}
"""One real input per format: ``fixtures/`` is the shared fixture folder
(``../shared/fixtures`` beside a checkout), ``examples/`` the repository's demo data;
tests/cli/test_formats.py checks that each is claimed by its format."""


def formats_cmd(fmt: FormatOption = OutputFormat.table, output: OutputOption = None) -> None:
    """List the input formats, in the order detection tries them, each with an example."""
    rows = [{"name": a.name, "claims": a.kind, "priority": a.priority,
             "description": a.description, "example": EXAMPLES.get(a.name)}
            for a in all_adapters()]
    cols = [("name", "format"), ("claims", "claims"), ("description", "description"),
            ("example", "example")]
    emit(render(rows, cols, fmt, schema="evalatlas.formats/1", title="Input formats"), output)


def register(app: typer.Typer) -> None:
    app.command("formats")(formats_cmd)
