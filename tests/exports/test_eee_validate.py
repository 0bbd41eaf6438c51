"""`evalatlas export eee --validate`: the bundled EEE 0.3.0 schemas, via jsonschema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from evalatlas.cli.main import app
from evalatlas.exports.eee_validate import SCHEMA_DIR, validate_export

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURE_SCHEMAS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "eee" \
    / "schema"
GOLDEN = FIXTURE_SCHEMAS.parent / "skill_reference_conversion"


def test_bundled_schemas_are_the_fixture_schemas() -> None:
    for name in ("eval.schema.json", "instance_level_eval.schema.json"):
        assert (SCHEMA_DIR / name).read_bytes() == (FIXTURE_SCHEMAS / name).read_bytes()


def test_golden_reference_is_valid_and_a_broken_copy_is_not(tmp_path: Path) -> None:
    assert validate_export(GOLDEN) == []
    agg = next(GOLDEN.rglob("*.json"))
    doc = json.loads(agg.read_text())
    del doc["model_info"]
    bad = tmp_path / agg.relative_to(GOLDEN)
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps(doc))
    problems = validate_export(tmp_path)
    assert len(problems) == 1 and "'model_info' is a required property" in problems[0]


def test_export_with_validate(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    runner = CliRunner()
    assert runner.invoke(app, ["--db", db, "ingest", str(EXAMPLES)]).exit_code == 0
    r = runner.invoke(app, ["--db", db, "export", "eee", str(tmp_path / "out"), "--validate"])
    assert r.exit_code == 0, r.output
    assert "wrote 3 EEE evaluations" in r.output and "valid against the EEE 0.3.0" in r.output


def test_validate_without_jsonschema_names_the_extra() -> None:
    code = ("import sys\nsys.modules['jsonschema'] = None\n"
            "from evalatlas.exports.eee_validate import validate_export\n"
            "try:\n    validate_export('.')\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "pip install 'evalatlas[eee]'" in out.stdout
