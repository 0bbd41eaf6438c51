"""The input formats as a public result (``ea.formats()``, ``evalatlas formats``): every
adapter in the order detection tries them, each with a real example input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evalatlas.records.results import TableResult

FORMAT_EXAMPLES: dict[str, str] = {
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
    "framework-report": "fixtures/frameworks/results/comparison_rag_qa_baseline.md",
}
"""One real input per format: ``fixtures/`` is the shared fixture folder
(``../shared/fixtures`` beside a checkout), ``examples/`` the repository's demo data;
tests/cli/test_formats.py checks that each is claimed by its format."""


@dataclass
class FormatsResult(TableResult):
    """The input formats ``ingest`` recognises, in the order detection tries them: rows
    with ``name``, ``claims`` (file or directory), ``priority``, ``description`` and
    ``example`` (a real input of that format, or None)."""

    SCHEMA: ClassVar[str] = "evalatlas.formats/1"


def formats() -> FormatsResult:
    """Every input format (adapter), in detection order, each with an example input."""
    from evalatlas.adapters.registry import all_adapters

    return FormatsResult(rows=[
        {"name": a.name, "claims": a.kind, "priority": a.priority,
         "description": a.description, "example": FORMAT_EXAMPLES.get(a.name)}
        for a in all_adapters()])
