"""How a framework plugs into the runner: a small Python protocol.

A framework is any object with::

    name: str                                          # display name, e.g. "BM25 baseline"
    async def ingest(self, documents: list[Document]) -> None          # once, not timed
    async def query(self, question: str, ctx: QueryContext) -> Answer  # timed, per question
    def configure(self, mode: str, mode_config: dict, scenario: Scenario) -> None  # optional

``ingest``/``query`` may also be plain functions (they then run in a worker thread so
the timeout still applies to the caller). ``query`` may take only ``question``. It
returns an :class:`Answer` or a dict with the same keys. ``Document``/``Scenario`` are
:mod:`evalatlas.adapters.frameworks`'s.

``QueryContext`` is why tokens survive a timeout: a framework that calls
``ctx.report_usage(...)`` after each LLM call (and ``ctx.trace_tool(...)`` per tool call)
has those numbers recorded even when the question is cut off; upstream lost them.
Several questions may be in flight on one instance (``--concurrency``), so ``query``
must not keep per-question state on ``self``.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evalatlas.records.models import UsageSummary


@dataclass
class Answer:
    """One framework answer."""

    text: str
    sources: list[str] = field(default_factory=list)
    usage: UsageSummary | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form: ``tool_trace`` (list), ``agents_used`` (list), ``contexts`` (list of
    ``{"source", "text"}`` actually shown to the model), anything else is kept."""

    @classmethod
    def coerce(cls, value: Any) -> Answer:
        """An :class:`Answer` from an Answer, a dict (subprocess JSON) or a string."""
        if isinstance(value, Answer):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if not isinstance(value, dict):
            raise TypeError(f"query returned {type(value).__name__}, expected Answer or dict")
        text = value.get("answer", value.get("text"))
        if not isinstance(text, str):
            raise TypeError("answer has no string 'answer' field")
        sources = value.get("sources") or []
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise TypeError("'sources' must be a list of strings")
        usage = value.get("usage")
        if usage is not None and not isinstance(usage, UsageSummary):
            usage = UsageSummary.model_validate(usage)
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TypeError("'metadata' must be an object")
        return cls(text=text, sources=list(sources), usage=usage, metadata=dict(metadata))


class QueryContext:
    """Per-question channel from the framework to the runner (usage and traces so far)."""

    def __init__(self, question_id: str, run: int) -> None:
        self.question_id = question_id
        self.run = run
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd: float | None = None
        self.n_llm_calls = 0
        self.model: str | None = None
        self.tool_trace: list[Any] = []
        self.agents_used: list[str] = []
        self.reported = False

    def report_usage(self, prompt_tokens: int = 0, completion_tokens: int = 0, *,
                     cost_usd: float | None = None, model: str | None = None) -> None:
        """Add the tokens (and cost, if known) of one LLM call."""
        self.reported = True
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)
        self.n_llm_calls += 1
        if cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost_usd)
        if model:
            self.model = model

    def trace_tool(self, name: str, **arguments: Any) -> None:
        self.tool_trace.append({"tool": name, "arguments": arguments})

    def add_agent(self, name: str) -> None:
        if name not in self.agents_used:
            self.agents_used.append(name)

    def usage(self) -> UsageSummary | None:
        """What was reported so far; None when nothing was (unknown, not zero)."""
        if not self.reported:
            return None
        return UsageSummary(prompt_tokens=self.prompt_tokens,
                            completion_tokens=self.completion_tokens,
                            total_cost_usd=self.cost_usd, n_llm_calls=self.n_llm_calls,
                            model=self.model)


@runtime_checkable
class Framework(Protocol):
    name: str

    def ingest(self, documents: list[Any]) -> Any: ...

    def query(self, question: str, ctx: QueryContext) -> Any: ...


async def call_maybe_async(fn: Any, *args: Any) -> Any:
    """Await a coroutine function; run a plain function in a worker thread."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        return await result
    return result


def takes_context(fn: Any) -> bool:
    """Whether ``query`` accepts the :class:`QueryContext` argument."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return True
    return len(params) >= 2 or any(p.kind == p.VAR_POSITIONAL
                                   for p in inspect.signature(fn).parameters.values())
