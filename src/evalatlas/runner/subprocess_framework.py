"""The subprocess protocol: frameworks in any language or virtualenv.

For every question the runner starts the command once and writes ONE JSON request on its
stdin, then closes stdin::

    {"protocol": "evalatlas.framework/1",
     "question": {"id": "q1", "text": "..."}, "run": 0,
     "mode": "baseline", "mode_config": {...},
     "scenario": {"name": "...", "description": "...", "root": "/abs/path"},
     "documents": [{"source": "a.md", "text": "..."}, ...]}

The command answers with ONE JSON object on stdout (the last JSON line counts)::

    {"answer": "...", "sources": ["a.md"],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_cost_usd": 0.0001,
               "model": "m"},
     "metadata": {"tool_trace": [...], "agents_used": [...]}}

Optional progress lines before it keep tokens when the question times out:
``{"type": "usage", "prompt_tokens": .., "completion_tokens": .., "cost_usd": .., "model": ..}``
and ``{"type": "tool", "tool": "name", "arguments": {...}}``. Lines that are not JSON
objects are ignored (counted in the episode's ``extra``); stderr is kept for error
messages only. A non-zero exit is a crash (``error_type="FrameworkCrash"``), no JSON
answer is a protocol error (``"ProtocolError"``); on timeout the whole process group is
killed. Nothing from the framework is evaluated: its output is parsed as JSON only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from evalatlas.runner.protocol import Answer, QueryContext

PROTOCOL = "evalatlas.framework/1"
_LINE_LIMIT = 16 * 1024 * 1024


class FrameworkCrash(RuntimeError):
    """The framework process exited with a non-zero status."""


class ProtocolError(RuntimeError):
    """The framework process did not produce a usable JSON answer."""


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


class SubprocessFramework:
    """A framework behind a command line, speaking the JSON protocol above."""

    def __init__(self, command: list[str], name: str | None = None) -> None:
        if not command:
            raise ValueError("empty framework command")
        self.command = command
        self.name = name or Path(command[-1]).stem or command[0]
        self._documents: list[dict[str, str]] = []
        self._mode = "baseline"
        self._mode_config: dict[str, Any] = {}
        self._scenario: dict[str, Any] = {}

    def configure(self, mode: str, mode_config: dict[str, Any], scenario: Any) -> None:
        self._mode, self._mode_config = mode, dict(mode_config)
        self._scenario = {"name": scenario.name, "description": scenario.description,
                          "root": str(Path(scenario.root).resolve())}

    async def ingest(self, documents: list[Any]) -> None:
        self._documents = [{"source": d.source, "text": d.text} for d in documents]

    def source_file(self) -> Path | None:
        """The first ``.py`` argument that exists: what code quality analyses."""
        for part in self.command:
            if part.endswith(".py") and Path(part).is_file():
                return Path(part)
        return None

    async def query(self, question: str, ctx: QueryContext) -> Answer:
        request = {"protocol": PROTOCOL, "question": {"id": ctx.question_id, "text": question},
                   "run": ctx.run, "mode": self._mode, "mode_config": self._mode_config,
                   "scenario": self._scenario, "documents": self._documents}
        proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=_LINE_LIMIT)
        # all three are pipes (PIPE above): never None
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stderr_task = asyncio.create_task(proc.stderr.read())
        try:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
                await proc.stdin.drain()
                proc.stdin.close()
            answer: dict[str, Any] | None = None
            ignored = 0
            first_garbage = ""
            async for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    ignored += 1
                    first_garbage = first_garbage or line[:200]
                    continue
                kind = obj.get("type")
                if kind == "usage":
                    ctx.report_usage(int(obj.get("prompt_tokens") or 0),
                                     int(obj.get("completion_tokens") or 0),
                                     cost_usd=obj.get("cost_usd"), model=obj.get("model"))
                elif kind == "tool":
                    ctx.trace_tool(str(obj.get("tool")), **(obj.get("arguments") or {}))
                else:
                    answer = obj
            rc = await proc.wait()
            stderr = (await stderr_task).decode("utf-8", errors="replace")
        finally:
            _kill_group(proc)
            if not stderr_task.done():
                stderr_task.cancel()
        if rc != 0:
            tail = stderr.strip().splitlines()[-3:]
            raise FrameworkCrash(f"exit status {rc}" + (f": {' | '.join(tail)}" if tail else ""))
        if answer is None:
            what = f"first line: {first_garbage!r}" if first_garbage else "stdout was empty"
            raise ProtocolError(f"no JSON answer on stdout ({ignored} other line(s); {what})")
        try:
            result = Answer.coerce(answer)
        except (TypeError, ValueError) as exc:
            raise ProtocolError(f"bad answer object: {exc}") from None
        if ignored:
            result.metadata.setdefault("ignored_stdout_lines", ignored)
        return result
