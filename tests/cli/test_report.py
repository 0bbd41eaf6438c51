"""`evalatlas report`: HTML, JSON specs and data, static images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "demo.duckdb"
    r = runner.invoke(app, ["--db", str(path), "ingest", str(EXAMPLES)])
    assert r.exit_code == 0, r.output
    return path


def test_html_is_one_offline_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["--db", str(db), "report", "-o", str(out), "--title", "T & <b>"])
    assert r.exit_code == 0, r.output
    text = out.read_text(encoding="utf-8")
    assert "<title>T &amp; &lt;b&gt;</title>" in text
    # nothing is loaded from elsewhere: no src/href to a URL, a CSP forbidding fetches
    assert " src=" not in text.split('<script type="application/octet-stream"')[0]
    assert "connect-src 'none'" in text and "default-src 'none'" in text
    assert out.stat().st_size < 1.5 * 2**20


def test_json_has_specs_with_values(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["--db", str(db), "report", "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["schema"] == "evalatlas.report/1"
    forest = next(v for v in doc["views"] if v["id"] == "s0-forest")
    assert forest["spec"]["data"]["values"] == forest["rows"]
    assert len(forest["rows"]) == 3
    api = json.loads(json.dumps(ea.build_report(db).to_dict()))  # the CLI's JSON is the API's
    for d in (doc, api):
        d["data"].pop("generated")  # the minute it was built
    assert api == doc


def test_static_images(db: Path, tmp_path: Path) -> None:
    d = tmp_path / "img"
    r = runner.invoke(app, ["--db", str(db), "report", "--static", str(d)])
    assert r.exit_code == 0, r.output
    svg = (d / "s0-forest.svg").read_text()
    assert svg.startswith("<svg") and "planner-sonnet" in svg
    assert (d / "s0-heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "report.html").exists()


def test_bad_grouping_is_an_error(db: Path) -> None:
    r = runner.invoke(app, ["--db", str(db), "report", "--by", "nonsense", "-o", "-"])
    assert r.exit_code == 2 and "unknown grouping" in r.output
