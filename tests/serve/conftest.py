"""Serve tests run a real uvicorn (``evalatlas serve``) started by the test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
