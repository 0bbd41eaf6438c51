"""A trivial framework for tests and overhead measurement: answers with the question.

Sources are every document it was given (so retrieval recall is 1 and precision is the
share of expected documents). No LLM, no tokens: usage stays unknown (None), not 0.
"""

from __future__ import annotations

from typing import Any

from evalatlas.runner.protocol import Answer, QueryContext


class EchoFramework:
    name = "echo"

    def __init__(self) -> None:
        self.sources: list[str] = []

    async def ingest(self, documents: list[Any]) -> None:
        self.sources = [d.source for d in documents]

    async def query(self, question: str, ctx: QueryContext) -> Answer:
        return Answer(text=question, sources=list(self.sources))


class NoopFramework:
    """Answers the empty string with no sources: the runner-overhead benchmark's agent."""

    name = "noop"

    async def ingest(self, documents: list[Any]) -> None:
        return None

    async def query(self, question: str) -> Answer:
        return Answer(text="")
