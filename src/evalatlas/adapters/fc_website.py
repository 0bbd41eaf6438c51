"""Published FormulaCode per-benchmark speedup tables (``website_data.csv``).

Columns: ``id, level, agent_id, agent/nop, oracle/nop, task_id, agent_recording,
repo_name, benchmark_name, ..., advantage``. Only the ``param-level`` rows are read:
they are the per-benchmark speedups (agent id ``agent,model`` becomes ``agent:model``),
and evalatlas computes the levels from them with its own functions. The
``func-level``/``class-level``/``module-level`` rows are the website's own aggregates,
built differently (its func level drops the class, and its groups do not match FC-Eval's
name parsing), so they are skipped and counted in ``extra["skipped_aggregate_rows"]``.

The file's ``advantage`` column is not FC-Eval's advantage: for agent rows it equals
``(agent/nop - oracle/nop) / 1.414`` (a distance from the diagonal of the website's
scatter plot, with sqrt(2) rounded), for oracle rows ``agent/nop - oracle/nop = 0``.
evalatlas recomputes ``advantage = agent/nop - oracle/nop`` and keeps the published
value in the measurement's ``extra["published_advantage"]``.

The table carries no correctness (tests, snapshots): episodes have
``extra["correctness_known"] = False``.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from evalatlas.adapters.base import Adapter, Item, head_bytes
from evalatlas.adapters.coerce import number, or_none
from evalatlas.adapters.fc_records import (
    AgentTrial,
    BenchmarkResult,
    experiment_for,
    is_oracle,
    trial_records,
)
from evalatlas.errors import Problem

REQUIRED = ("level", "agent_id", "agent/nop", "oracle/nop", "task_id", "benchmark_name")
PARAM_LEVEL = "param-level"


def agent_key_from_id(agent_id: str) -> str:
    """``"terminus-2,gpt-5"`` -> ``"terminus-2:gpt-5"`` (first comma only)."""
    agent, sep, model = agent_id.strip().partition(",")
    return f"{agent}:{model}" if sep else agent


def _number(text: str | None) -> float | None:
    """A CSV cell as a number (CSV writes numbers as text: the one coercion rule with
    ``strings=True``); empty, unreadable or not finite is None."""
    return or_none(number, text or None, strings=True)


def detect(path: Path) -> bool:
    if path.suffix.lower() != ".csv":
        return False
    head = head_bytes(path, 2048).split(b"\n", 1)[0]
    return all(c.encode() in head for c in ("agent/nop", "oracle/nop", "level", "agent_id"))


def read_website_csv(path: Path) -> Iterator[Item]:
    """Param-level rows -> one experiment per agent:model, one episode per task."""
    file = str(path)
    problems: list[Problem] = []
    trials: dict[tuple[str, str], AgentTrial] = {}
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    skipped = 0
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        fh = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        yield Problem(file, f"cannot read: {exc}")
        return
    with fh:
        reader = csv.DictReader(fh)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            yield Problem(file, f"missing columns: {', '.join(missing)}", field=missing[0])
            return
        for row in reader:
            line = reader.line_num
            if row.get("level") != PARAM_LEVEL:
                skipped += 1
                continue
            rid = row.get("id") or f"line {line}"
            agent_id, task = (row.get("agent_id") or "").strip(), (row.get("task_id") or "")
            name = (row.get("benchmark_name") or "").strip()
            if not agent_id or not task.strip() or not name:
                field = "agent_id" if not agent_id else "task_id" if not task.strip() \
                    else "benchmark_name"
                problems.append(Problem(file, "empty value", field=field, line=line,
                                        record=rid))
                continue
            key = agent_key_from_id(agent_id)
            a, o = _number(row.get("agent/nop")), _number(row.get("oracle/nop"))
            reason = None
            if a is None or o is None:
                reason = "agent/nop and oracle/nop must be finite numbers"
                problems.append(Problem(file, f"{reason}: {row.get('agent/nop')!r}, "
                                        f"{row.get('oracle/nop')!r}", field="agent/nop"
                                        if a is None else "oracle/nop", line=line, record=rid))
            elif a <= 0 or o <= 0:
                reason = "speedups must be positive"
                problems.append(Problem(file, reason, field="agent/nop" if a <= 0
                                        else "oracle/nop", line=line, record=rid))
            if name in seen[(key, task)]:
                problems.append(Problem(file, f"duplicate benchmark {name!r} for this agent "
                                        "and task; first row kept", field="benchmark_name",
                                        line=line, record=rid))
                continue
            seen[(key, task)].add(name)
            trial = trials.get((key, task))
            if trial is None:
                safe = f"{task}.{key}".replace("/", "_").replace("..", "_")
                trial = trials[(key, task)] = AgentTrial(
                    agent_key=key, task_id=task, trajectory_id=safe, source=file)
                rec = row.get("agent_recording")
                if rec:
                    trial.extra["agent_recording"] = rec
            extra: dict[str, object] = {"row_id": rid}
            pub = _number(row.get("advantage"))
            if pub is not None:
                extra["published_advantage"] = pub
            trial.benchmarks.append(BenchmarkResult(
                name=name, speedup_agent=a if reason is None else None,
                speedup_oracle=o if reason is None else None, valid=reason is None,
                reason=reason, unit=None, extra=extra))
    yield from problems
    by_agent: dict[str, list[AgentTrial]] = defaultdict(list)
    for (key, _), t in trials.items():
        by_agent[key].append(t)
    for key, ts in sorted(by_agent.items()):
        exp = experiment_for(key, str(path.resolve()), path.stem, framework="formulacode-website",
                             n_tasks=len(ts), extra={"skipped_aggregate_rows": skipped,
                                                     "is_oracle": is_oracle(key)})
        yield exp
        for t in ts:
            yield from trial_records(t, exp.experiment_id, file)


ADAPTER = Adapter(
    name="fc-website",
    kind="file",
    detect=detect,
    read=read_website_csv,
    priority=30,
    description="FormulaCode website per-benchmark speedup table (website_data.csv)",
)
