"""Acceptance (issue 10): every interval in every command's JSON output lies inside the
range of its quantity, on the demo, real fixtures and a hostile synthetic set (all-pass,
all-fail, one task, one attempt); none is zero-width where it could not be estimated.

Every key ``*_ci_low``/``*_ci_high`` and every ``{ci_low, ci_high}`` object is checked:
``low <= high``; rates (success, pass@k, pass^k, pass rate, impl rate, composite,
accuracy, mean reward in [0, 1]) inside [0, 1]; costs, tokens and times >= 0; paired
differences of rates inside [-1, 1].
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))
from verdict_check import assert_verdict_agrees

from evalatlas.cli.main import app
from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import GROUPS, group_expr

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT.parent / "shared" / "fixtures"
runner = CliRunner()

RATE_WORDS = ("success", "pass", "impl", "composite", "accuracy", "reward")
NONNEG_WORDS = ("cost", "token", "time", "wall")


def _intervals(doc: Any, path: str = "") -> Iterator[tuple[str, float | None, float | None]]:
    """(path, low, high) of every interval in a JSON document."""
    if isinstance(doc, dict):
        if "ci_low" in doc or "ci_high" in doc:
            yield path, doc.get("ci_low"), doc.get("ci_high")
        for key, value in doc.items():
            if key.endswith("_ci_low"):
                stem = key[: -len("_ci_low")]
                yield f"{path}.{stem}", value, doc.get(f"{stem}_ci_high")
            elif isinstance(value, dict | list):
                yield from _intervals(value, f"{path}.{key}")
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _intervals(item, f"{path}[{i}]")


def _range(path: str) -> tuple[float, float] | None:
    name = path.lower()
    leaf = name.rsplit(".", 1)[-1]
    if "uplift" in leaf or "speedup" in name or "advantage" in name:
        return None  # relative changes and ratios: no fixed range
    if leaf in ("diff", "score_diff"):
        return (-1.0, 1.0)
    if any(w in name for w in NONNEG_WORDS):
        return (0.0, float("inf"))
    if any(w in name for w in RATE_WORDS):
        return (0.0, 1.0)
    return None


def check_in_range(doc: Any) -> int:
    """Assert every interval of ``doc`` is in range; return how many were checked."""
    n = 0
    for path, lo, hi in _intervals(doc):
        if lo is None or hi is None:
            assert lo is None and hi is None, f"{path}: half an interval ({lo}, {hi})"
            continue
        assert lo == lo and hi == hi, f"{path}: NaN interval"
        assert lo <= hi, f"{path}: low {lo} > high {hi}"
        rng = _range(path)
        if rng is not None:
            assert rng[0] - 1e-12 <= lo and hi <= rng[1] + 1e-12, f"{path}: [{lo}, {hi}]"
        n += 1
    return n


def check_not_zero_width(doc: Any) -> None:
    """No interval collapses to a point: where one cannot be estimated it is null."""
    for path, lo, hi in _intervals(doc):
        assert lo is None or lo != hi, f"{path}: zero-width interval at {lo}"


def _json(db: Path, *args: str) -> Any:
    res = runner.invoke(app, ["--db", str(db), *args, "--format", "json"])
    assert res.exit_code == 0, (args, res.output)
    return json.loads(res.stdout)


def _hostile(folder: Path) -> None:
    """Four agents: all-pass (5 tasks x 3), all-fail (5 x 3), one task (x 4 attempts),
    one attempt each (6 tasks); with tiers, impl_rate scores and costs (one constant)."""
    specs = {"all-pass": (5, 3, lambda t, a: 1.0, "T0"),
             "all-fail": (5, 3, lambda t, a: 0.0, "T1"),
             "one-task": (1, 4, lambda t, a: float(a % 2), "T2"),
             "one-attempt": (6, 1, lambda t, a: float(t % 2), "T3")}
    for name, (n_tasks, attempts, reward, tier) in specs.items():
        exp = {"experiment_id": f"exp-{name}", "experiment_name": f"hostile-{name}",
               "timestamp": 1.0, "framework_name": "hostile", "framework_version": "1",
               "agent": {"agent_id": f"agent-{name}", "name": name, "llm_model": "m"},
               "benchmark_name": "hostile", "benchmark_version": "1",
               "benchmark_subset": {"name": "hostile", "n_tasks": 10},
               "labels": {"tier": tier}}
        lines = [json.dumps(exp)]
        for t in range(n_tasks):
            for a in range(attempts):
                r = reward(t, a)
                lines.append(json.dumps({
                    "experiment_id": f"exp-{name}", "task_id": f"task-{t}",
                    "trajectory_id": f"{name}-{t}-{a}", "attempt": a, "reward": r,
                    "success": r > 0, "wall_time_s": 10.0 + a,
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                              "total_cost_usd": 0.5 if name == "all-fail" else 0.1 * (t + 1)},
                    "scores": {"impl_rate": 1.0 if r else 0.0}}))
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


def _agents_per_group(db: Path, by: str) -> dict[Any, int]:
    """Distinct agents (summary's agent key) with a known outcome behind each displayed
    group value (no judge has run on these stores: outcomes are the harness's)."""
    _, _, disp = group_expr(by)
    with StoreConnection(db, read_only=True) as store:
        rows = store.query(f"SELECT {disp} AS g, count(DISTINCT {GROUPS['agent'][0]}) "
                           "FILTER (WHERE e.success IS NOT NULL) AS n FROM episodes e "
                           "LEFT JOIN experiments x USING (experiment_id) GROUP BY g")
    return {r["g"]: int(r["n"]) for r in rows}


def check_no_pooled_pass_at_k(db: Path, by: str, doc: Any) -> None:
    """pass@k / pass^k never over a group holding several agents' attempts (issue 10
    item 4): such a group has neither, and a note says why."""
    agents = _agents_per_group(db, by)
    for row in doc["rows"]:
        n = agents[row[by]]
        if n > 1:
            assert not row.get("pass_at_k") and not row.get("pass_hat_k"), (by, row[by])
            if "pass_at_k" in row:  # rows without outcomes (measurements only) have none
                assert "agents in this group" in row["pass_at_k_note"], (by, row[by])


def _selectors(db: Path, agents: list[str]) -> list[str]:
    """The given agents, else up to three experiment ids of the benchmark with most."""
    if agents:
        return agents[:3]
    with StoreConnection(db, read_only=True) as store:
        rows = store.query("SELECT benchmark_name AS b, list(experiment_id ORDER BY "
                           "experiment_id) AS ids FROM experiments WHERE experiment_id IN "
                           "(SELECT experiment_id FROM episodes) GROUP BY b "
                           "ORDER BY len(ids) DESC, b LIMIT 1")
    return list(rows[0]["ids"][:3]) if rows else []


def _all_commands(db: Path, agents: list[str]) -> int:
    checked = 0
    for by in ("agent", "experiment", "benchmark", "model", "task", "status", "label:tier"):
        doc = _json(db, "summary", "--by", by)
        checked += check_in_range(doc)
        if by not in ("agent", "experiment"):
            check_no_pooled_pass_at_k(db, by, doc)
    for more in (["--outcome", "harness"], ["--outcome", "judge"], ["--missing", "fail"]):
        checked += check_in_range(_json(db, "summary", *more))
    sides = _selectors(db, agents)
    for pair in ([sides[:2]] if len(sides) == 2 else [sides[:2], sides[:3]]
                 if len(sides) > 2 else []):
        doc = _json(db, "compare", *pair)
        checked += check_in_range(doc)
        for row in doc["rows"]:
            assert_verdict_agrees(row)
    # atlas: abilities and item parameters are on the logit scale (no fixed range); the
    # predicted full-benchmark success rate is a rate (needs known outcomes to fit)
    first_agent = None
    for cmd in (["atlas", "abilities"], ["atlas", "items"]):
        res = runner.invoke(app, ["--db", str(db), *cmd, "--format", "json"])
        if res.exit_code == 0:
            doc = json.loads(res.stdout)
            checked += check_in_range(doc)
            first_agent = first_agent or doc["rows"][0].get("agent_id")
        else:
            assert "nothing to fit" in res.output, (cmd, res.output)
    if first_agent:
        doc = _json(db, "atlas", "estimate", first_agent)
        assert check_in_range(doc) >= 1
        checked += 1
    return checked


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    _hostile(folder)
    db = folder / "h.duckdb"
    res = runner.invoke(app, ["--db", str(db), "ingest", str(folder)])
    assert res.exit_code == 0, res.output
    return db


def test_hostile_set(hostile_db: Path) -> None:
    checked = _all_commands(hostile_db, ["all-pass", "all-fail", "one-attempt"])
    tiers = _json(hostile_db, "tiers")
    checked += check_in_range(tiers)
    assert checked > 20
    rows = {r["agent"]: r for r in _json(hostile_db, "summary")["rows"]}
    # score-type intervals stay defined at 0% and 100%; clustered ones too (worst case)
    assert rows["all-pass"]["success_rate_ci_high"] == 1.0
    assert rows["all-pass"]["success_rate_ci_low"] < 1.0
    assert rows["all-fail"]["success_rate_ci_low"] == 0.0
    assert rows["all-fail"]["pass_at_k"]["3"]["ci_high"] > 0.0
    # one task: no clustered interval, with a reason, never zero width
    one = rows["one-task"]
    assert one["success_rate_clustered_ci_low"] is None
    assert "one task" in one["success_rate_clustered_ci_note"]
    assert one["pass_at_k"]["2"]["ci_low"] is None and one["pass_at_k"]["2"]["ci_note"]
    # one attempt: pass@1 only
    assert list(rows["one-attempt"]["pass_at_k"]) == ["1"]
    by_tier = {r["tier"]: r for r in tiers["rows"]}
    # T1 (all-fail) costs 0.5 every run: no spread, no interval (not a zero-width one)
    assert by_tier["T1"]["mean_cost_ci_low"] is None
    assert by_tier["T1"]["composite_median_ci_low"] is None
    # ... and its uplift against the all-pass T0 (-100%) has no spread to resample either
    assert by_tier["T1"]["uplift"] == -1.0 and by_tier["T1"]["uplift_ci_low"] is None
    for doc in (tiers, _json(hostile_db, "summary"),
                _json(hostile_db, "compare", "all-pass", "all-fail", "one-attempt")):
        check_not_zero_width(doc)


def test_hostile_report(hostile_db: Path, tmp_path: Path) -> None:
    """The HTML report's data (paired differences of rates, costs) on the hostile set:
    paired differences used to reach 1.28 and constant costs gave [0.5, 0.5]."""
    out = tmp_path / "report.json"
    res = runner.invoke(app, ["--db", str(hostile_db), "report", "--format", "json",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert check_in_range(doc) > 10
    check_not_zero_width(doc)
    for section in doc["data"]["sections"]:
        for row in section["pairs"]["rows"]:
            lo, hi = row["diff_ci_low"], row["diff_ci_high"]
            assert (lo is None and row["diff_ci_note"]) or -1 <= lo < hi <= 1, row
    costs = {r["name"]: r for r in doc["data"]["sections"][0]["leaderboard"]}
    assert costs["all-fail"]["cost_ci_low"] is None  # 0.5 every episode


def _framework_doc(name: str, scores: list[float]) -> dict[str, Any]:
    qs = [{"question_id": f"q{i}", "question_text": "?", "expected_answer": "x",
           "actual_answer": "x", "latency_seconds": 1.0, "prompt_tokens": 10,
           "completion_tokens": 0, "total_tokens": 10, "model_name": "m",
           "correctness_score": c, "completeness_score": c, "faithfulness_score": c}
          for i, c in enumerate(scores)]
    return {"framework_name": name, "scenario_name": "s", "scenario_type": "rag_qa",
            "evaluation_mode": "capability", "questions": qs, "run_id": 0, "run_count": 1}


@pytest.mark.parametrize("a, b", [([5, 5], [0, 1]), ([5, 5, 5], [5, 5, 5]), ([5], [0]),
                                  ([5, 5, 4], [0, 0, 0]), ([0, 0, 0], [0, 0, 0])])
def test_hostile_compare_frameworks(tmp_path: Path, a: list[float], b: list[float]) -> None:
    """Correctness (0-5) intervals inside [0, 5], paired differences inside [-5, 5], none
    zero-width (a clipped t interval gave [5, 5] and [-1.85, 10.85] here)."""
    files = []
    for name, scores in (("A", a), ("B", b)):
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(_framework_doc(name, scores)))
        files.append(str(f))
    res = runner.invoke(app, ["compare-frameworks", *files, "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    for fw in doc["frameworks"]:
        c = fw["correctness_interval"]
        if c["low"] is None:
            assert c["high"] is None and c["note"]
        else:
            assert 0.0 <= c["low"] <= c["mean"] <= c["high"] <= 5.0 and c["low"] < c["high"]
    for pair in doc["paired_correctness"]:
        if pair["low"] is None:
            assert pair["high"] is None and pair["note"]
        else:
            assert -5.0 <= pair["low"] <= pair["diff"] <= pair["high"] <= 5.0
            assert pair["low"] < pair["high"]


def test_pooled_agents_get_no_pass_at_k(hostile_db: Path) -> None:
    (row,) = _json(hostile_db, "summary", "--by", "benchmark")["rows"]
    assert row["pass_at_k"] == {} and row["pass_hat_k"] == {}
    assert "4 agents in this group" in row["pass_at_k_note"]


def test_demo(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    assert runner.invoke(app, ["--db", str(db), "ingest", str(ROOT / "examples")]).exit_code == 0
    assert _all_commands(db, ["planner-sonnet", "react-gpt-4o", "tiny-mini"]) > 20
    check_in_range(_json(db, "tiers"))
    doc = _json(db, "summary")
    # the demo's pass@2 used to print [0.893, 1.007]
    assert all(v["ci_high"] <= 1.0 for r in doc["rows"] for v in r["pass_at_k"].values())
    out = tmp_path / "report.json"  # the HTML report's data, from the same API
    res = runner.invoke(app, ["--db", str(db), "report", "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert check_in_range(json.loads(out.read_text())) > 20


@pytest.mark.parametrize("fixture, agents", [
    ("terminal-bench", ["LeadArchitectAgent (20250902_orchestrator_claude-4-sonnet)",
                        "LeadArchitectAgent (20250902_orchestrator_qwen-3-coder-480B)"]),
    ("scylla", []),
    ("tau-bench", []),
    ("formulacode", []),
    ("swebench-verified", []),
    ("swebench-pro", ["Claude Opus 4.1 - paper", "claude-opus-4-1-paper", "Kimi - paper"]),
    ("swebench-java-verified", []),
    ("inspect", []),
    ("eee", []),
    ("cube", []),
])
def test_fixtures(tmp_path: Path, fixture: str, agents: list[str]) -> None:
    db = tmp_path / "f.duckdb"
    res = runner.invoke(app, ["--db", str(db), "ingest", str(FIXTURES / fixture)])
    assert res.exit_code == 0, res.output
    checked = _all_commands(db, agents)
    if fixture == "scylla":
        checked += check_in_range(_json(db, "tiers"))
    if fixture == "formulacode":
        for by in ("agent", "task"):
            checked += check_in_range(_json(db, "speedups", "--by", by))
    assert checked > 0
