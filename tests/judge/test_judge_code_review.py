"""Code review judge over HTTP: seven criteria, avg_score, failure stays missing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_openai import FakeOpenAI

from evalatlas.judge.client import JudgeClient, JudgeConfig
from evalatlas.judge.code_review import (
    CRITERIA,
    review_avg_score,
    review_code,
    review_to_extra,
)


def _review(srv: FakeOpenAI):
    client = JudgeClient(JudgeConfig(model="rev", base_url=srv.base_url, cache_dir=None,
                                     backoff_s=0.01, max_attempts=2))

    async def go():
        try:
            return await review_code(client, "fw", "scenario", "def f():\n    return 1\n")
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_review(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI() as srv:
        r = _review(srv)
        user = srv.requests[0]["messages"][1]["content"]
    assert len(CRITERIA) == 7 and r.scores["documentation"] == 2.0
    extra = review_to_extra(r)
    assert extra["avg_score"] == round((4 + 4 + 3 + 3 + 4 + 2 + 4) / 7, 2) == 3.43
    assert "FRAMEWORK: fw" in user and "```python\ndef f()" in user


def test_failed_review_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(default="malformed") as srv:
        r = _review(srv)
    extra = review_to_extra(r)
    assert extra["avg_score"] is None and extra["readability"] is None and "error" in extra
    assert review_avg_score({c: 3.0 for c in CRITERIA}) == 3.0
