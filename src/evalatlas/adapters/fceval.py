"""FC-Eval (terminal-bench style) run directories and their post-test output blocks.

Layout (reference fc-eval.md section 10)::

    runs/<run_id>/                        results.json, run_metadata.json, fc.lock
      <task>/<task>.<a>-of-<n>.<run_id>[.agent-<i>-<agent>]/
          results.json  panes/post-test.txt  sessions/*.cast  agent-logs/*.json

``panes/post-test.txt`` holds the three marker blocks printed by the adapter's
``parser.py`` (``FORMULACODE_TESTS``, ``FORMULACODE_RESULT``, ``FORMULACODE_SNAPSHOT``,
each ``*_START`` ... ``*_END``); the JSON between markers is joined without newlines, as
upstream, so a terminal's hard line wrap inside the JSON does not break it.

Each trial (one agent's attempt at one task) becomes an episode with its measurements,
built by :mod:`evalatlas.adapters.fc_records`. Sub-trials of one task attempt
(``.agent-<i>-<agent>`` suffixes) are merged the way fc-eval's harness does: an agent
fails pytest when its failures exceed the oracle's (when an oracle ran), a snapshot
whose status is not ``passed`` or has ``pass-to-fail > 0`` fails, and a failed non-nop
agent falls back to baseline. Single-trial runs use the parser-path rules
(:func:`~evalatlas.metrics.speedup.pytest_block_failed`,
:func:`~evalatlas.metrics.speedup.snapshot_block_failed`).

Deliberate differences from upstream (also in docs/fc-eval.md): an agent's speedups are
looked up by its exact ``agent:model`` key only (never the first key with the same
agent name, never the top-level speedups, so nop never inherits another agent's
numbers); the snapshot ``failed`` count is kept as ``snapshot["failed"]`` beside the
boolean; a missing marker block is reported as a problem and counts as a failure.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalatlas.adapters.agent_logs import read_agent_logs
from evalatlas.adapters.base import Adapter, Item
from evalatlas.adapters.coerce import Refused, amount, count, number, or_none
from evalatlas.adapters.fc_records import (
    AgentTrial,
    BenchmarkResult,
    experiment_for,
    is_nop,
    is_oracle,
    trial_records,
)
from evalatlas.errors import Problem
from evalatlas.metrics.speedup import (
    merge_pytest_failed,
    merge_snapshot_failed,
    pytest_block_failed,
    snapshot_block_failed,
)

POST_TEST = Path("panes") / "post-test.txt"
BLOCKS = ("TESTS", "RESULT", "SNAPSHOT")
_TRIAL_NAME = re.compile(
    r"^(?P<task>.+?)\.(?P<a>\d+)-of-(?P<n>\d+)\.(?P<run>.+?)(?:\.agent-(?P<i>\d+)-(?P<agent>.+))?$")
_AGENT_MODEL_NAME = re.compile(r"^agent-(\d+)-(.+)$")


# --------------------------------------------------------------------------- blocks


def extract_block(text: str, name: str) -> tuple[Any, str | None]:
    """The JSON between ``FORMULACODE_<name>_START`` and ``_END``: ``(value, None)`` or
    ``(None, reason)``. Lines are joined without newlines (upstream ``str.find`` rule)."""
    start, end = f"FORMULACODE_{name}_START", f"FORMULACODE_{name}_END"
    i = text.find(start)
    if i < 0:
        return None, f"marker {start} not found"
    j = text.find(end, i + len(start))
    if j < 0:
        return None, f"marker {end} not found after {start}"
    body = "".join(line.strip("\r") for line in text[i + len(start):j].split("\n"))
    if not body.strip():
        return None, f"empty {name} block"
    try:
        value = json.loads(body, parse_constant=lambda c: float("nan"))
    except ValueError as exc:
        return None, f"invalid JSON in {name} block: {exc}"
    if not isinstance(value, dict):
        return None, f"{name} block is {type(value).__name__}, expected a JSON object"
    return value, None


def parse_post_test(text: str, file: str) -> tuple[dict[str, Any], list[Problem]]:
    """The three blocks of a post-test pane (missing or broken ones are problems)."""
    out: dict[str, Any] = {}
    problems = []
    for name in BLOCKS:
        value, reason = extract_block(text, name)
        if reason:
            problems.append(Problem(file, reason, field=f"FORMULACODE_{name}"))
        out[name] = value
    return out, problems


def _tally(v: Any) -> int | None:
    """A pytest or snapshot tally: absent is 0 (upstream sums ``.get(key, 0)``); any
    other value by the one coercion rule (:mod:`evalatlas.adapters.coerce`), None when it
    refuses the value (a boolean, a string) or makes it missing (negative, NaN)."""
    return 0 if v is None else or_none(count, v)


def pytest_failures(tests: dict[str, Any] | None) -> int | None:
    """``failed + error`` of a TESTS block, None when the block is missing or a tally is
    not a count (then the block counts as unparsed: failed, as upstream's fallback)."""
    if not isinstance(tests, dict):
        return None
    failed, error = _tally(tests.get("failed")), _tally(tests.get("error"))
    return None if failed is None or error is None else failed + error


def snapshot_status(snapshot: dict[str, Any] | None) -> str:
    return "failed" if snapshot_block_failed(snapshot) else "passed"


def pass_to_fail(snapshot: dict[str, Any] | None) -> int | None:
    if not isinstance(snapshot, dict):
        return 0
    return _tally(snapshot.get("pass-to-fail", snapshot.get("pass_to_fail")))


def speedups_for(result: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """Per-benchmark speedups of ``key`` from a RESULT block, by exact key only.

    ``per_benchmark_speedups_by_agent[key]``, else top-level ``per_benchmark_speedups``
    when ``last_agent`` is exactly ``key``. Never by agent prefix (upstream quirk 9).
    """
    if not isinstance(result, dict):
        return None
    by_agent = result.get("per_benchmark_speedups_by_agent")
    if isinstance(by_agent, dict) and isinstance(by_agent.get(key), dict):
        return by_agent[key]
    if result.get("last_agent") == key and isinstance(result.get("per_benchmark_speedups"), dict):
        return result["per_benchmark_speedups"]
    return None


def benchmarks_from_speedups(
    table: dict[str, Any], file: str, record: str, problems: list[Problem]
) -> list[BenchmarkResult]:
    """``{name: {"agent/nop", "oracle/nop", ...}}`` -> benchmark results (validity checked)."""
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict):
            problems.append(Problem(file, "per-benchmark entry is not an object",
                                    field=f"per_benchmark_speedups.{name}", record=record))
            continue
        speedups: dict[str, float] = {}
        reason = None
        for label in ("agent/nop", "oracle/nop"):
            try:  # the one coercion rule (adapters/coerce.py): a finite JSON number
                c = number(entry.get(label))
            except Refused as exc:
                reason = f"{label}: {exc.reason}"
                break
            if c.value is None:
                reason = f"{label}: {c.note or 'missing'}"
                break
            speedups[label] = c.value
        extra = {k: v for k, v in entry.items()
                 if k in ("significant",) and isinstance(v, bool | int | float | str)}
        if reason:
            problems.append(Problem(file, reason, field=f"per_benchmark_speedups.{name}",
                                    record=record))
        out.append(BenchmarkResult(
            name=name, speedup_agent=speedups.get("agent/nop") if reason is None else None,
            speedup_oracle=speedups.get("oracle/nop") if reason is None else None,
            valid=reason is None,
            reason=reason, extra=extra))
    return out


# --------------------------------------------------------------------------- trials


def _iso(s: Any) -> float | None:
    if not isinstance(s, str):
        return None
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _read_json(path: Path, problems: list[Problem]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(Problem(str(path), f"cannot read JSON: {exc}"))
        return None


def _same_agent(key: str, dir_agent: str) -> bool:
    """Whether ``agent:model`` belongs to the agent named in a ``.agent-<i>-<agent>``
    suffix (compared after T_BENCH's sanitising: other than ``[a-zA-Z0-9 .]`` -> ``-``)."""
    def clean(s: str) -> str:
        return re.sub(r"[^a-zA-Z0-9 .]", "-", s)
    return clean(key.partition(":")[0]) == clean(dir_agent)


def _agent_key(trial_dir: Path, results: dict[str, Any], blocks: dict[str, Any],
               run_meta: dict[str, Any]) -> str:
    pem = results.get("parser_extra_metrics")
    if isinstance(pem, dict) and isinstance(pem.get("agent_model_key"), str):
        return pem["agent_model_key"]
    m = _TRIAL_NAME.match(trial_dir.name)
    own = m.group("agent") if m and m.group("agent") else None
    res = blocks.get("RESULT")
    if isinstance(res, dict) and isinstance(res.get("last_agent"), str) and (
            own is None or _same_agent(res["last_agent"], own)):
        # in a sub-trial whose agent left no tarball, last_agent is an earlier agent
        return res["last_agent"]
    costs = results.get("costs_by_agent_model")
    if isinstance(costs, dict) and len(costs) == 1 and (
            own is None or _same_agent(str(next(iter(costs))), own)):
        return str(next(iter(costs)))
    if own:
        return own
    agent, model = run_meta.get("agent_name"), run_meta.get("model_name")
    if isinstance(agent, str):
        return f"{agent}:{model}" if isinstance(model, str) else agent
    return "unknown"


def read_trial(trial_dir: Path, run_meta: dict[str, Any],
               problems: list[Problem]) -> tuple[AgentTrial, dict[str, Any]]:
    """One trial directory -> (trial without failure flags, its parsed blocks)."""
    post = trial_dir / POST_TEST
    try:
        text = post.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        problems.append(Problem(str(post), f"cannot read: {exc}"))
        text = ""
    blocks, bad = parse_post_test(text, str(post))
    for p in bad:
        problems.append(Problem(p.file, p.reason, field=p.field, record=trial_dir.name))
    results: dict[str, Any] = {}
    if (trial_dir / "results.json").is_file():
        loaded = _read_json(trial_dir / "results.json", problems)
        results = loaded if isinstance(loaded, dict) else {}
    key = _agent_key(trial_dir, results, blocks, run_meta)
    m = _TRIAL_NAME.match(trial_dir.name)
    task_id = results.get("task_id") or (m.group("task") if m else trial_dir.parent.name)
    attempt = int(m.group("a")) - 1 if m else None
    trial = AgentTrial(agent_key=key, task_id=str(task_id), trajectory_id=trial_dir.name,
                       attempt=attempt, source=str(post))
    result = blocks.get("RESULT")
    if isinstance(result, dict) and "error" in result and len(result) == 1:
        trial.extra["result_error"] = str(result["error"])[:500]
    table = speedups_for(result, key)
    if table is not None:
        trial.benchmarks = benchmarks_from_speedups(table, str(post), trial_dir.name, problems)
        total = None
        if isinstance(result, dict):
            adv = result.get("agent_advantages_by_agent")
            if isinstance(adv, dict) and isinstance(adv.get(key), dict):
                total = adv[key].get("total_benchmarks")
            if total is None and result.get("last_agent") == key:
                total = result.get("total_benchmarks")
        trial.num_benchmarks = total if isinstance(total, int) else None
    tests, snap = blocks.get("TESTS"), blocks.get("SNAPSHOT")
    trial.pytest_summary = tests
    trial.snapshot_summary = snap
    # tokens, cost, time
    logs = read_agent_logs(trial_dir, problems)
    pem = results.get("parser_extra_metrics") if isinstance(results, dict) else None
    length = logs.trajectory_length
    if not length and isinstance(pem, dict):
        length = or_none(count, pem.get("trajectory_length")) or length
    trial.trajectory_length = length
    tin = or_none(count, results.get("total_input_tokens"))
    tout = or_none(count, results.get("total_output_tokens"))
    trial.prompt_tokens = tin if tin else logs.prompt_tokens  # 0: not counted upstream
    trial.completion_tokens = tout if tout else logs.completion_tokens
    costs = results.get("costs_by_agent_model")
    cost = costs.get(key) if isinstance(costs, dict) else results.get("total_cost")
    # a reported 0.0 is upstream's "unknown model" (quirk 13): leave it to pricing.
    usd = or_none(amount, cost)
    trial.cost_usd = usd if usd else None
    start, end = _iso(results.get("agent_started_at")), _iso(results.get("agent_ended_at"))
    trial.timestamp = _iso(results.get("trial_started_at"))
    trial.wall_time_s = end - start if start is not None and end is not None and \
        end >= start else None
    if logs.source:
        trial.extra["trajectory_source"] = Path(logs.source).name
    return trial, blocks


def apply_failure_rules(trials: list[tuple[AgentTrial, dict[str, Any]]]) -> None:
    """Set pytest/snapshot failure: parser path for one trial, merge rules for several."""
    if len(trials) == 1:
        t, b = trials[0]
        t.pytest_failed = pytest_block_failed(b.get("TESTS"))
        t.snapshot_failed = snapshot_block_failed(b.get("SNAPSHOT"))
        return
    oracle = [pytest_failures(b.get("TESTS")) for t, b in trials if is_oracle(t.agent_key)]
    oracle_failures = oracle[0] if oracle else None
    for t, b in trials:
        fails = pytest_failures(b.get("TESTS"))
        # no TESTS block (e.g. a timeout) means no parse: failed, as upstream's fallback.
        t.pytest_failed = True if fails is None else merge_pytest_failed(
            fails, oracle_failures if oracle else None)
        snap = b.get("SNAPSHOT")
        t.snapshot_failed = merge_snapshot_failed(
            snapshot_status(snap) if isinstance(snap, dict) else None, pass_to_fail(snap))
        t.extra["merged_agents"] = len(trials)


def _trial_dirs(root: Path) -> list[Path]:
    if (root / POST_TEST).is_file():
        return [root]
    found = [p.parent.parent for p in root.glob("*/*/panes/post-test.txt")]
    found += [p.parent.parent for p in root.glob("*/panes/post-test.txt")]
    return sorted(set(found))


def _has_markers(pane: Path, tail: int = 1 << 20) -> bool:
    try:
        with pane.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - tail))
            return b"FORMULACODE_" in fh.read()
    except OSError:
        return False


def detect(path: Path) -> bool:
    """A trial directory, or a run directory holding trials, whose ``panes/post-test.txt``
    has FORMULACODE marker blocks (plain terminal-bench runs are left to that adapter).
    Looks at up to 5 panes, so a run whose first trials timed out is still found."""
    if (path / POST_TEST).is_file():
        return _has_markers(path / POST_TEST)
    if not ((path / "run_metadata.json").is_file() or (path / "fc.lock").is_file()
            or (path / "results.json").is_file()):
        return False
    for i, pane in enumerate(path.glob("*/*/panes/post-test.txt")):
        if _has_markers(pane):
            return True
        if i >= 4:
            break
    return False


def read_run_dir(root: Path) -> Iterator[Item]:
    """Stream experiments, episodes and measurements of one run (or trial) directory."""
    problems: list[Problem] = []
    run_meta: dict[str, Any] = {}
    run_dir = root if not (root / POST_TEST).is_file() else root.parent.parent
    if (run_dir / "run_metadata.json").is_file():
        loaded = _read_json(run_dir / "run_metadata.json", problems)
        run_meta = loaded if isinstance(loaded, dict) else {}
    run_id = str(run_meta.get("run_id") or run_dir.name)
    groups: dict[str, list[tuple[AgentTrial, dict[str, Any]]]] = defaultdict(list)
    for d in _trial_dirs(root):
        trial, blocks = read_trial(d, run_meta, problems)
        m = _TRIAL_NAME.match(d.name)
        base = f"{d.parent.name}/{m.group('task')}.{m.group('a')}.{m.group('run')}" if m \
            else str(d)
        groups[base].append((trial, blocks))
    by_agent: dict[str, list[AgentTrial]] = defaultdict(list)
    for trials in groups.values():
        apply_failure_rules(trials)
        keys = [t.agent_key for t, _ in trials]
        for t, _ in trials:
            if keys.count(t.agent_key) > 1:
                problems.append(Problem(t.trajectory_id, f"agent {t.agent_key!r} appears twice "
                                        "in one task attempt; both kept as separate episodes",
                                        field="agent_model"))
            by_agent[t.agent_key].append(t)
    yield from problems
    source = str(root.resolve())
    for key, agent_trials in sorted(by_agent.items()):
        exp = experiment_for(key, source, run_id, framework="fc-eval",
                             n_tasks=len({t.task_id for t in agent_trials}),
                             extra={"is_nop": is_nop(key), "is_oracle": is_oracle(key)})
        yield exp
        for t in agent_trials:
            yield from trial_records(t, exp.experiment_id, str(root / t.trajectory_id))


ADAPTER = Adapter(
    name="fceval",
    kind="dir",
    detect=detect,
    read=read_run_dir,
    priority=25,
    description="FC-Eval / terminal-bench run or trial directory (panes/post-test.txt with "
    "FORMULACODE_* blocks)",
)
