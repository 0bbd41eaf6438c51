"""The official ``every-eval-ever`` 0.3.0 validator accepts ``export eee`` output.

That package needs Python >= 3.12 and evalatlas supports 3.11, so it runs in its own
virtual environment: ``$EVALATLAS_EEE_VALIDATOR_VENV``, else
``~/.cache/evalatlas/eee-validator-py312``, created on first use (about 2 minutes: pip
install of every-eval-ever==0.3.0 into a Python 3.12 from ``$EVALATLAS_PY312``,
``~/.pyenv/versions/3.12*`` or ``python3.12`` on PATH) and reused afterwards. When no
Python 3.12 or no package index is available the test is skipped and says why; the JSON
Schema check of the same files (tests/exports/test_eee.py) always runs.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import evalatlas.api as ea
from evalatlas.exports.eee import export_eee

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"
VENV = Path(os.environ.get("EVALATLAS_EEE_VALIDATOR_VENV")
            or Path.home() / ".cache" / "evalatlas" / "eee-validator-py312")


def _python312() -> str | None:
    found = [os.environ.get("EVALATLAS_PY312", "")]
    found += sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "3.12*" / "bin"
                                  / "python")), reverse=True)
    found.append(shutil.which("python3.12") or "")
    return next((p for p in found if p and Path(p).is_file()), None)


def _validator() -> Path:
    exe = VENV / "bin" / "every_eval_ever"
    if exe.is_file():
        return exe
    py = _python312()
    if py is None:
        pytest.skip("SKIPPED official EEE validator: no Python 3.12 found (set "
                    "EVALATLAS_PY312); the JSON Schema check still ran")
    try:
        subprocess.run([py, "-m", "venv", str(VENV)], check=True, capture_output=True,
                       timeout=120)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "every-eval-ever==0.3.0"],
                       check=True, capture_output=True, timeout=900)
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(VENV, ignore_errors=True)
        pytest.skip(f"SKIPPED official EEE validator: could not install every-eval-ever "
                    f"0.3.0 into a Python 3.12 venv ({exc}); the JSON Schema check still ran")
    return exe


def test_official_validator_accepts_the_export(tmp_path) -> None:
    exe = _validator()
    with ea.open(tmp_path / "s.duckdb") as store:
        rep = store.ingest(REPO / "examples", FIXTURES / "tau-bench", FIXTURES / "inspect",
                           FIXTURES / "eee" / "inspect")
        assert rep.rejected == 0
        result = export_eee(store, tmp_path / "eee", retrieved_timestamp="1800000000")
    files = sorted(str(p.relative_to(tmp_path / "eee"))
                   for p in (tmp_path / "eee").rglob("*") if p.is_file())
    assert len(files) == 2 * len(result.written) >= 2 * 10
    proc = subprocess.run([str(exe), "validate", *files, "--format", "json"],
                          cwd=tmp_path / "eee", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert len(report) == len(files)
    assert all(r["valid"] and r["errors"] == [] and r["warnings"] == [] for r in report), \
        [r for r in report if not r["valid"] or r["errors"] or r["warnings"]]
