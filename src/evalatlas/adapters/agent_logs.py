"""Tokens and trajectory length from an FC-Eval trial's agent logs (reference section 8).

- ``agent-logs/*.json``: the newest file (by mtime) counts only if it is a JSON list:
  trajectory length = its length; tokens = the last entry (scanning backwards) whose
  ``llm_metrics.accumulated_token_usage`` has ``prompt_tokens`` or ``completion_tokens``
  > 0. A non-list newest file contributes nothing.
- fallback, when the length is 0 or unknown: the newest ``sessions/*.cast`` (asciinema
  v2); skip the header line and count every line that is a JSON list of length >= 3
  (output, input and marker events all count); blank or invalid lines are skipped.

Differences from upstream: nothing found stays ``None`` (upstream: 0), and an
unreadable log is reported instead of silently giving 0. No log content is executed or
printed; only counts are kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalatlas.adapters.coerce import count, or_none
from evalatlas.errors import Problem


@dataclass(frozen=True)
class AgentLogSummary:
    """What the logs tell: ``source`` is the file the length came from."""

    trajectory_length: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    source: str | None = None


def _newest(paths: list[Path]) -> Path | None:
    files = [p for p in paths if p.is_file()]
    if not files:
        return None
    return max(files, key=lambda p: (p.stat().st_mtime, p.name))


def count_cast_events(path: Path) -> int:
    """Events of an asciinema v2 ``.cast`` file: lines after the header that are JSON
    lists of length >= 3. Raises OSError when the file cannot be read."""
    n = 0
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        fh.readline()  # header
        for line in fh:
            line = line.strip()
            if not line.startswith("["):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, list) and len(ev) >= 3:
                n += 1
    return n


def tokens_from_json_log(entries: list[object]) -> tuple[int | None, int | None]:
    """(prompt, completion) of the last entry with accumulated usage > 0, else Nones."""
    for entry in reversed(entries):
        if not isinstance(entry, dict):
            continue
        metrics = entry.get("llm_metrics")
        usage = metrics.get("accumulated_token_usage") if isinstance(metrics, dict) else None
        if not isinstance(usage, dict):
            continue
        p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
        p, c = or_none(count, p), or_none(count, c)  # the one coercion rule
        if (p or 0) > 0 or (c or 0) > 0:
            return p, c
    return None, None


def read_agent_logs(trial_dir: Path, problems: list[Problem] | None = None) -> AgentLogSummary:
    """Trajectory length and tokens of one trial directory (see module docstring)."""
    length: int | None = None
    prompt = completion = None
    source: str | None = None
    log_dir = trial_dir / "agent-logs"
    newest = _newest(list(log_dir.glob("*.json"))) if log_dir.is_dir() else None
    if newest is not None:
        try:
            data = json.loads(newest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            if problems is not None:
                problems.append(Problem(str(newest), f"agent log is not valid JSON: {exc}",
                                        field="trajectory_length"))
            data = None
        if isinstance(data, list):
            length, source = len(data), str(newest)
            prompt, completion = tokens_from_json_log(data)
    if not length:
        sess = trial_dir / "sessions"
        cast = _newest(list(sess.glob("*.cast"))) if sess.is_dir() else None
        if cast is not None:
            try:
                length, source = count_cast_events(cast), str(cast)
            except OSError as exc:
                if problems is not None:
                    problems.append(Problem(str(cast), f"cannot read recording: {exc}",
                                            field="trajectory_length"))
    return AgentLogSummary(length, prompt, completion, source)
