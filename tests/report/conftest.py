"""Fixtures of the report tests: the published upstream comparison reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_reports import RESULTS


@pytest.fixture
def upstream_reports() -> dict[str, Path]:
    if not RESULTS.is_dir():
        pytest.fail(f"shared fixtures not found at {RESULTS}")
    return {p.stem.removeprefix("comparison_"): p for p in sorted(RESULTS.glob("*.md"))}
