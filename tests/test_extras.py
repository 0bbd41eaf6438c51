"""Optional dependencies live in extras, are imported where used, and name their extra."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from evalatlas.extras import MissingExtraError, require

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_core_dependencies_are_small() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    core = {d.split(">")[0].split("=")[0].strip().lower() for d in project["dependencies"]}
    assert not core & {"openai", "httpx", "bm25s", "krippendorff", "jsonschema", "pandas"}
    extras = project["optional-dependencies"]
    assert {"judge", "eee", "report", "serve", "bench", "dev"} <= set(extras)
    assert any(d.startswith("openai") for d in extras["judge"])
    assert any(d.startswith("krippendorff") for d in extras["judge"])
    assert any(d.startswith("jsonschema") for d in extras["eee"])
    assert any(d.startswith("bm25s") for d in extras["bench"])
    assert any(d.startswith("duckdb-extension-ducklake") for d in extras["lake"])
    assert any(d.startswith("fastapi") for d in extras["serve"])
    assert any(d.startswith("uvicorn") for d in extras["serve"])
    assert "evalatlas[judge,eee,report,lake,serve]" in extras["dev"]  # make test installs them


def test_require_names_the_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'evalatlas\[judge\]'") as err:
        require("no_such_module_for_evalatlas", "judge", "the LLM judge")
    assert "the LLM judge needs the optional package 'no_such_module_for_evalatlas'" in str(
        err.value)
    assert isinstance(err.value, ImportError)
    assert require("json", "judge", "x").dumps([1]) == "[1]"


def test_optional_packages_are_not_imported_by_their_modules() -> None:
    code = ("import sys\nimport evalatlas.judge.client, evalatlas.judge.rubric, "
            "evalatlas.runner.examples.bm25, evalatlas.exports.eee_validate\n"
            "print(sorted(m for m in ('openai', 'krippendorff', 'bm25s', 'jsonschema') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_missing_optional_package_gives_the_extra(tmp_path: Path) -> None:
    """With bm25s hidden, the bm25 framework fails with the extra's name, not a traceback."""
    code = ("import sys, asyncio\nsys.modules['bm25s'] = None\n"
            "from evalatlas.runner.examples.bm25 import BM25Framework\n"
            "from types import SimpleNamespace as NS\n"
            "f = BM25Framework()\n"
            "try:\n    asyncio.run(f.ingest([NS(source='a', text='some words here')]))\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert "pip install 'evalatlas[bench]'" in out.stdout
