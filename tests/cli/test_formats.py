"""``evalatlas formats`` names a real example input for the formats that have one."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.adapters.formats import FORMAT_EXAMPLES as EXAMPLES
from evalatlas.adapters.registry import detect
from evalatlas.cli.main import app

REPO = Path(__file__).resolve().parents[2]


def test_every_example_is_claimed_by_its_format(fixtures: Path) -> None:
    checked = 0
    for name, example in EXAMPLES.items():
        if example.startswith("("):
            continue
        root = fixtures.parent if example.startswith("fixtures/") else REPO
        adapter = detect(root / example)
        assert adapter is not None and adapter.name == name, (name, example)
        checked += 1
    assert checked >= 10


def test_formats_json_lists_examples() -> None:
    out = CliRunner().invoke(app, ["formats", "--format", "json"]).output
    assert json.loads(out) == ea.formats().to_dict()  # the CLI's JSON is the API's result
    rows = {r["name"]: r for r in json.loads(out)["rows"]}
    assert rows["inspect"]["example"] == "fixtures/inspect/log_read_sample.eval"
    assert rows["tau-bench"]["example"].endswith("gpt-4o-airline.reduced.json")
