"""Shared test fixtures: where the real upstream fixtures live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"
REFERENCE = SHARED / "reference"


@pytest.fixture
def fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES} (CI has ../shared beside the repo)")
    return FIXTURES


def _add_test_helper_dirs() -> None:
    """Let test helper modules (e.g. tests/report/upstream_reports.py) import by name.

    pytest runs in importlib mode (test files in different folders may share a basename),
    which does not put test folders on sys.path; helper modules need unique names.
    """
    import sys

    for d in [REPO / "benchmarks", *sorted(p for p in (REPO / "tests").iterdir() if p.is_dir())]:
        if str(d) not in sys.path and not d.name.startswith((".", "__")):
            sys.path.append(str(d))


_add_test_helper_dirs()
