"""``evalatlas codequality``: JSON output, framework prefixes, skipped files."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import evalatlas as ea
from evalatlas.cli.main import app


def test_codequality_json(tmp_path):
    (tmp_path / "a.py").write_text("import langgraph.graph\nfrom langchain_core import x\n"
                                   "def f() -> None:\n    pass\n", encoding="utf-8")
    (tmp_path / "bad.py").write_text("def (:\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["codequality", str(tmp_path), "--framework", "langgraph",
                                   "-f", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out == ea.code_quality(tmp_path, framework="langgraph").to_dict()  # the API's
    assert out["schema"] == "evalatlas.codequality/1"
    assert out["files_analysed"] == 1 and len(out["problems"]) == 1
    total = out["rows"][-1]
    assert total["path"] == "(total)" and total["num_framework_imports"] == 2
    assert total["num_imports"] == 2 and total["type_annotation_ratio"] == 1.0
    res = CliRunner().invoke(app, ["codequality", str(tmp_path / "a.py"), "-p", "langchain_core",
                                   "-f", "json", "--totals-only"])
    out = json.loads(res.stdout)
    assert len(out["rows"]) == 1 and out["rows"][0]["num_framework_imports"] == 1


def test_codequality_errors(tmp_path):
    res = CliRunner().invoke(app, ["codequality", str(tmp_path / "missing")])
    assert res.exit_code == 2
    res = CliRunner().invoke(app, ["codequality", str(tmp_path), "--framework", "nope"])
    assert res.exit_code == 2
