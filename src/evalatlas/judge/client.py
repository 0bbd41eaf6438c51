"""An OpenAI-compatible chat client for judges: validation, retries, backoff, cache.

Built on the official ``openai`` SDK with ``base_url``, so OpenAI, vLLM, Ollama,
llama.cpp servers and gateways all work. The SDK reads ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` itself; an explicit ``base_url`` overrides the latter.

Why not the SDK's own retries: we also retry answers that are *malformed* (not JSON,
missing keys, out-of-range scores), and we want one attempt budget and one record of
what went wrong. So the SDK runs with ``max_retries=0`` and :meth:`JudgeClient.complete`
loops:

- 429, 5xx, timeouts and connection errors: exponential backoff with jitter (honouring a
  ``Retry-After`` header, capped), then retry;
- a malformed answer: the answer and a JSON-only reminder are appended, then retry;
- a malformed *response* (HTTP 200 whose body is not a chat completion: an HTML error
  page, truncated or non-JSON text, no choices): a failed call, retried with backoff;
- a 400 that names ``temperature``: retried once without it (some models reject
  ``temperature=0``), remembered for the rest of the session;
- other 4xx (bad key, unknown model): not retried.

After the last attempt the value is ``None`` and ``error`` says why: a failed judgement
is a *missing* score (NaN), never 0. Tokens of every attempt are summed into ``usage``,
since every attempt is paid for. Error texts are scrubbed of anything key-shaped.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from evalatlas.errors import EvalAtlasError
from evalatlas.extras import require
from evalatlas.judge.cache import DEFAULT_CACHE_DIR, JudgeCache, cache_key
from evalatlas.pricing import fill_missing_cost
from evalatlas.records.models import UsageSummary
from evalatlas.records.redact import redact_text

if TYPE_CHECKING:
    import openai

T = TypeVar("T")

PROMPT_VERSION = "evalatlas-judge/1"
"""Part of every cache key: bump when prompts change so old answers are not reused."""

JSON_REMINDER = (
    "Your previous reply could not be used: {reason}. Reply again with ONLY one JSON "
    "object that follows the required format exactly, with no other text."
)


class MalformedResponse(Exception):
    """The server answered HTTP 200 with something that is not a chat completion."""


class ValidationFailure(ValueError):
    """The judge answered, but not in the required shape or range."""


class JudgeSetupError(EvalAtlasError):
    """The judge cannot be used at all (no key, no model)."""


scrub = redact_text
"""Error texts lose anything key-shaped: the one redaction function
(:mod:`evalatlas.records.redact`)."""


def extract_json(content: str | None) -> dict[str, Any]:
    """The JSON object in a judge reply: bare, fenced, or embedded in prose."""
    if content is None or not content.strip():
        raise ValidationFailure("empty reply")
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    candidates = [text]
    if fenced:
        candidates.insert(0, fenced.group(1))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for cand in candidates:
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        raise ValidationFailure(f"expected a JSON object, got {type(value).__name__}")
    raise ValidationFailure("reply is not valid JSON")


def require_int(data: dict[str, Any], key: str, lo: int, hi: int) -> int:
    """``data[key]`` as an integer in ``[lo, hi]``; integral floats are accepted."""
    if key not in data:
        raise ValidationFailure(f"missing key {key!r}")
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValidationFailure(f"{key!r} must be an integer, got {v!r}")
    if isinstance(v, float) and not v.is_integer():
        raise ValidationFailure(f"{key!r} must be an integer, got {v!r}")
    if not lo <= v <= hi:
        raise ValidationFailure(f"{key!r}={v} is outside {lo}-{hi}")
    return int(v)


def require_str(data: dict[str, Any], key: str) -> str:
    v = data.get(key)
    if not isinstance(v, str):
        raise ValidationFailure(f"missing or non-string {key!r}")
    return v


@dataclass
class JudgeConfig:
    """Judge model and call policy. ``cache_dir=None`` disables the disk cache.

    ``timeout_s`` bounds each HTTP call (connect + read); a call that exceeds it is a
    failed attempt, retried up to ``max_attempts`` in all (CLI: ``--timeout``)."""

    model: str
    base_url: str | None = None
    timeout_s: float = 60.0
    max_attempts: int = 4
    backoff_s: float = 0.5
    backoff_max_s: float = 8.0
    temperature: float | None = 0.0
    max_tokens: int | None = None
    json_mode: bool = True
    concurrency: int = 8
    cache_dir: Path | str | None = DEFAULT_CACHE_DIR

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:  # also rejects NaN
            raise ValueError(f"timeout_s must be > 0 seconds, got {self.timeout_s!r}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts!r}")

    def describe(self) -> dict[str, Any]:
        """Settings worth recording next to a score (never the key)."""
        return {"model": self.model, "temperature": self.temperature,
                "max_attempts": self.max_attempts, "prompt_version": PROMPT_VERSION}


@dataclass
class JudgeCall(Generic[T]):
    """Outcome of one judged prompt: a validated value, or None and the reason."""

    value: T | None
    error: str | None
    usage: UsageSummary | None
    attempts: int
    cached: bool = False
    raw: str | None = None
    errors: list[str] = field(default_factory=list)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def _content_of(resp: Any) -> str | None:
    """The reply text of a chat completion; :class:`MalformedResponse` when ``resp`` is not
    one. The SDK hands back whatever the body parsed to: a ``str`` for a non-JSON body, a
    list, or a completion without choices or message."""
    choices = getattr(resp, "choices", None)
    if isinstance(resp, str | bytes | list | dict) or not isinstance(choices, list):
        raise MalformedResponse(f"body is not a chat completion ({type(resp).__name__}"
                                f"{', no choices' if choices is None else ''})")
    if not choices:
        raise MalformedResponse("chat completion with no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedResponse("first choice has no message")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise MalformedResponse(f"message content is a {type(content).__name__}")
    return content


def _usage_from(resp: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a response; None when the server sent no usage
    (some local servers don't): the judge's tokens and cost are then unknown, not 0."""
    u = getattr(resp, "usage", None)
    if u is None:
        return None
    return int(getattr(u, "prompt_tokens", 0) or 0), int(getattr(u, "completion_tokens", 0) or 0)


class JudgeClient:
    """Async judge calls with bounded concurrency. One instance per judge model."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        api_key: str | None = None,
        cache: JudgeCache | None = None,
    ) -> None:
        self.config = config
        if not config.model:
            raise JudgeSetupError("no judge model given (--judge-model)")
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL")
        if api_key is None and not os.environ.get("OPENAI_API_KEY"):
            if base_url is None:
                raise JudgeSetupError(
                    "the LLM judge needs OPENAI_API_KEY (or --judge-base-url for a local "
                    "server that needs no key)")
            api_key = "not-needed"  # local servers (vLLM, Ollama) ignore the key
        # here, not at import: the SDK costs ~0.8 s of CLI start-up; an optional extra
        openai = require("openai", "judge", "the LLM judge")

        self._client = openai.AsyncOpenAI(
            api_key=api_key, base_url=config.base_url, timeout=config.timeout_s,
            max_retries=0,
        )
        self.cache = cache if cache is not None else JudgeCache(config.cache_dir)
        self._sem = asyncio.Semaphore(max(1, config.concurrency))
        self._no_temperature = False
        self.calls = 0

    async def aclose(self) -> None:
        await self._client.close()

    def _params(self) -> dict[str, Any]:
        p: dict[str, Any] = {}
        if self.config.temperature is not None and not self._no_temperature:
            p["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            p["max_tokens"] = self.config.max_tokens
        if self.config.json_mode:
            p["response_format"] = {"type": "json_object"}
        return p

    def _backoff(self, attempt: int, hint: float | None) -> float:
        base = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (attempt - 1))
        delay = base * (0.5 + random.random() / 2)
        if hint is not None:
            delay = max(delay, min(hint, self.config.backoff_max_s))
        return delay

    async def complete(
        self,
        messages: list[dict[str, str]],
        validate: Callable[[dict[str, Any]], T],
        *,
        kind: str,
    ) -> JudgeCall[T]:
        """Ask the judge; return the validated value or ``None`` with the reason.

        ``kind`` names the validator; it is part of the cache key.
        """
        key = cache_key({"v": PROMPT_VERSION, "model": self.config.model, "kind": kind,
                         "messages": messages, "temperature": self.config.temperature,
                         "max_tokens": self.config.max_tokens,
                         "json_mode": self.config.json_mode})
        hit = self.cache.get(key)
        if hit is not None:
            try:
                value = validate(extract_json(hit.get("content")))
                usage = UsageSummary.model_validate(hit["usage"]) if hit.get("usage") else None
                return JudgeCall(value, None, usage, 0, cached=True, raw=hit.get("content"))
            except (ValidationFailure, ValueError, KeyError):
                pass  # an old or corrupt entry: ask again
        async with self._sem:
            return await self._complete(messages, validate, key)

    async def _complete(
        self, messages: list[dict[str, str]], validate: Callable[[dict[str, Any]], T], key: str
    ) -> JudgeCall[T]:
        import openai

        cfg = self.config
        convo = list(messages)
        prompt_tokens = completion_tokens = n_calls = 0
        errors: list[str] = []
        content: str | None = None
        attempt = 0
        temperature_dropped = False
        usage_missing = False
        while attempt < cfg.max_attempts:
            attempt += 1
            try:
                n_calls += 1
                self.calls += 1
                try:
                    resp = await self._client.chat.completions.create(
                        model=cfg.model, messages=convo, **self._params())
                except (ValueError, TypeError, AttributeError,
                        openai.APIResponseValidationError) as exc:  # body did not parse
                    raise MalformedResponse(f"{type(exc).__name__}: {exc}") from exc
                content = _content_of(resp)
            except MalformedResponse as exc:
                # HTTP 200 but not a chat completion (HTML error page, truncated JSON, no
                # choices): a failed call like a 5xx, retried after a pause; no tokens known
                errors.append(f"attempt {attempt}: malformed response: {scrub(str(exc))[:200]}")
                usage_missing = True
                if attempt < cfg.max_attempts:
                    await asyncio.sleep(self._backoff(attempt, None))
                continue
            except openai.BadRequestError as exc:
                msg = scrub(str(exc))
                if ("temperature" in msg.lower() and not self._no_temperature
                        and not temperature_dropped and cfg.temperature is not None):
                    self._no_temperature = temperature_dropped = True
                    errors.append(f"attempt {attempt}: model rejected temperature; retrying "
                                  "without it")
                    attempt -= 1  # not the judge's fault: does not use up an attempt
                    continue
                errors.append(f"attempt {attempt}: HTTP 400: {msg}")
                break
            except openai.APIStatusError as exc:
                status = exc.status_code
                errors.append(f"attempt {attempt}: HTTP {status}: {scrub(str(exc))[:300]}")
                if status == 429 or status >= 500 or status == 408:
                    if attempt < cfg.max_attempts:
                        await asyncio.sleep(self._backoff(attempt, _retry_after(exc)))
                    continue
                break  # 401, 403, 404...: retrying cannot help
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                what = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection error"
                errors.append(f"attempt {attempt}: {what} after {cfg.timeout_s:g}s limit"
                              if what == "timeout" else f"attempt {attempt}: {what}: "
                              f"{scrub(str(exc))[:200]}")
                if attempt < cfg.max_attempts:
                    await asyncio.sleep(self._backoff(attempt, None))
                continue
            reported = _usage_from(resp)
            if reported is None:
                usage_missing = True
            else:
                prompt_tokens += reported[0]
                completion_tokens += reported[1]
            try:
                value = validate(extract_json(content))
            except ValidationFailure as exc:
                errors.append(f"attempt {attempt}: invalid judge output: {exc}")
                convo = [*messages, {"role": "assistant", "content": content or ""},
                         {"role": "user", "content": JSON_REMINDER.format(reason=exc)}]
                continue
            usage = self._usage(prompt_tokens, completion_tokens, n_calls, usage_missing)
            self.cache.put(key, {"content": content, "usage": usage.model_dump(mode="json"),
                                 "model": cfg.model, "created": time.time()})
            return JudgeCall(value, None, usage, attempt, raw=content, errors=errors)
        usage = self._usage(prompt_tokens, completion_tokens, n_calls, usage_missing)
        last = errors[-1] if errors else "no attempt made"
        return JudgeCall(None, f"judge failed after {attempt} attempt(s); last: {last}", usage,
                         attempt, raw=content, errors=errors)

    def _usage(self, p: int, c: int, n: int, missing: bool = False) -> UsageSummary:
        """The judge's own usage; token counts (and so cost) unknown if any response
        lacked them."""
        usage = UsageSummary(prompt_tokens=None if missing else p,
                             completion_tokens=None if missing else c, n_llm_calls=n,
                             model=self.config.model)
        return fill_missing_cost(usage, self.config.model)
