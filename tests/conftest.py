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
