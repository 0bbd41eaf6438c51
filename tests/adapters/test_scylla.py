"""ProjectScylla run directories: the published dry run and synthetic edge cases."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from evalatlas.adapters.registry import plan
from evalatlas.adapters.scylla import (
    ADAPTER,
    judge_impl_rate,
    majority_pass,
    read_scylla_dir,
)
from evalatlas.errors import Problem
from evalatlas.metrics.outcomes import cost_of_pass
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
DRYRUN = FIXTURES / "scylla" / "dryrun"
RAW = DRYRUN / "raw"


def _items(path: Path) -> tuple[list[ExperimentRecord], list[EpisodeRecord], list[Problem]]:
    items = list(read_scylla_dir(path))
    return ([i for i in items if isinstance(i, ExperimentRecord)],
            [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Problem)])


def _csv(name: str) -> list[dict[str, str]]:
    with (DRYRUN / "data" / name).open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def dryrun() -> tuple[list[ExperimentRecord], list[EpisodeRecord], list[Problem]]:
    return _items(RAW)


def test_detected_through_the_registry() -> None:
    found = [x for x in plan([FIXTURES / "scylla"]) if not isinstance(x, Problem)]
    assert [(p, a.name) for p, a in found] == [(RAW, "scylla")]


def test_one_experiment_per_tier_and_subtest(dryrun) -> None:
    exps, eps, problems = dryrun
    assert problems == []
    assert [(e.labels["tier"], e.labels["subtest"]) for e in exps] == [
        ("T0", "00"), ("T1", "01"), ("T2", "01"), ("T3", "01"), ("T4", "01"), ("T5", "01"),
        ("T6", "01")]
    for e in exps:
        assert e.labels["experiment"] == "2026-01-20T06-13-07-test-001"
        assert e.labels["test"] == "test-001"
        assert e.labels["model"] == "claude-sonnet-4-5-20250929"
        assert e.framework_name == "ProjectScylla"
    assert len({e.agent.agent_id for e in exps}) == 7  # each subtest is its own config
    assert len({e.experiment_id for e in exps}) == 7
    assert all(ep.task_id == "test-001" and ep.attempt == 0 for ep in eps)


def test_runs_match_upstream_runs_csv(dryrun) -> None:
    """Every per-run number of the upstream export (runs.csv) is reproduced."""
    exps, eps, _ = dryrun
    tier_of = {e.experiment_id: e.labels["tier"] for e in exps}
    by_tier = {tier_of[ep.experiment_id]: ep for ep in eps}
    rows = _csv("runs.csv")
    assert len(rows) == 7
    for row in rows:
        ep = by_tier[row["tier"]]
        assert ep.success is (row["passed"] == "True")
        assert ep.reward == 1.0
        assert ep.scores["score"] == pytest.approx(float(row["score"]), abs=1e-12)
        assert ep.scores["impl_rate"] == pytest.approx(float(row["impl_rate"]), abs=1e-12)
        assert ep.usage.total_cost_usd == float(row["cost_usd"])
        assert ep.usage.total_tokens == int(row["total_tokens"])
        assert ep.usage.completion_tokens == int(row["output_tokens"])
        assert ep.usage.cached_tokens == int(row["cache_read_tokens"])
        assert ep.usage.cache_creation_tokens == int(row["cache_creation_tokens"])
        assert ep.wall_time_s == float(row["agent_duration_seconds"])
        assert ep.extra["duration_seconds"] == float(row["duration_seconds"])
        assert ep.extra["judge_duration_seconds"] == float(row["judge_duration_seconds"])
        assert ep.extra["judge_grade"] == row["grade"]
        assert "judge_score_reported" not in ep.extra  # recomputed mean equals upstream's


def test_judges_match_upstream_judges_csv(dryrun) -> None:
    exps, eps, _ = dryrun
    tier_of = {e.experiment_id: e.labels["tier"] for e in exps}
    judges = {(tier_of[ep.experiment_id], j["judge_number"]): j
              for ep in eps for j in ep.extra["judges"]}
    rows = _csv("judges.csv")
    assert len(rows) == 21
    for row in rows:
        j = judges[(row["tier"], int(row["judge_number"]))]
        assert j["model"] == row["judge_model"]
        assert j["score"] == float(row["judge_score"])
        assert j["impl_rate"] == pytest.approx(float(row["judge_impl_rate"]), abs=1e-12)
        assert j["passed"] is (row["judge_passed"] == "True")
        assert j["is_valid"] is (row["judge_is_valid"] == "True")


def test_t0_judge_impl_rate_worked_example() -> None:
    """scylla.md 3.2: T0 judge_01 gives 12.9/13 = 0.9923 (N/A items leave both sums)."""
    jm = json.loads((RAW / "T0/00/run_01/judge/judge_01/judgment.json").read_text())
    assert judge_impl_rate(jm["criteria_scores"]) == pytest.approx(12.9 / 13)


def test_subtest_and_overall_numbers(dryrun) -> None:
    """subtests.csv cop and summary.json totals from the adapter's records."""
    exps, eps, _ = dryrun
    tier_of = {e.experiment_id: e.labels["tier"] for e in exps}
    cost = {tier_of[ep.experiment_id]: ep.usage.total_cost_usd for ep in eps}
    for row in _csv("subtests.csv"):
        assert cost_of_pass(cost[row["tier"]], 1.0) == float(row["cop"])
    summary = json.loads((DRYRUN / "data" / "summary.json").read_text().replace("NaN", "null"))
    overall = summary["overall_stats"]
    assert math.fsum(cost.values()) == pytest.approx(overall["total_cost"], abs=1e-12)
    assert sum(ep.usage.total_tokens for ep in eps) == summary["by_model"]["Sonnet 4.5"][
        "total_tokens"]
    mean_impl = math.fsum(ep.scores["impl_rate"] for ep in eps) / 7
    assert mean_impl == pytest.approx(overall["mean_impl_rate"], abs=1e-12)
    mean_score = math.fsum(ep.scores["score"] for ep in eps) / 7
    assert mean_score == pytest.approx(overall["mean_score"], abs=1e-12)
    assert min(cost.values()) == summary["by_model"]["Sonnet 4.5"]["frontier_cop"]


# --------------------------------------------------------------------------- synthetic


def _judgment(score: float, passed: bool, valid: bool = True,
              criteria: dict | None = None) -> dict:
    return {"score": score, "passed": passed, "grade": "A", "reasoning": "r", "is_valid": valid,
            "criteria_scores": criteria if criteria is not None else {
                "functional": {"achieved": 3.0, "max": 4.0, "score": 0.75},
                "quality": {"achieved": "N/A", "max": "N/A", "score": None}}}


def make_run(root: Path, tier: str, sub: str, run: int, judges: list[dict], *,
             cost: float | None = 0.1, exit_code: int = 0, rr_extra: dict | None = None) -> Path:
    d = root / tier / sub / f"run_{run:02d}"
    for i, j in enumerate(judges, 1):
        jd = d / "judge" / f"judge_{i:02d}"
        jd.mkdir(parents=True)
        (jd / "judgment.json").write_text(json.dumps(j))
    d.mkdir(parents=True, exist_ok=True)
    rr = {"run_number": run, "exit_code": exit_code,
          "token_stats": {"input_tokens": 10, "output_tokens": 5, "cache_creation_tokens": 0,
                          "cache_read_tokens": 20},
          "cost_usd": cost, "agent_duration_seconds": 3.0, "duration_seconds": 4.0,
          "judges": [{"model": f"judge-{i}", "judge_number": i} for i in range(1, 4)],
          **(rr_extra or {})}
    (d / "run_result.json").write_text(json.dumps(rr))
    return d


def test_majority_vote_uses_valid_judges_only(tmp_path: Path) -> None:
    root = tmp_path / "2026-01-01T00-00-00-test-042"
    make_run(root, "T0", "00", 1, [_judgment(0.9, True), _judgment(0.2, False),
                                   _judgment(0.0, False, valid=False)])
    make_run(root, "T0", "00", 2, [_judgment(0.9, True), _judgment(0.2, False),
                                   _judgment(0.8, True)])
    make_run(root, "T0", "00", 3, [_judgment(0.0, False, valid=False)] * 3)
    assert ADAPTER.detect(root)
    exps, eps, problems = _items(root)
    assert problems == []
    assert exps[0].labels["experiment"] == "2026-01-01T00-00-00-test-042"
    assert exps[0].labels["test"] == "test-042"
    r1, r2, r3 = sorted(eps, key=lambda e: e.attempt or 0)
    # run 1: one valid yes, one valid no -> no strict majority -> fail
    assert (r1.success, r1.scores["score"]) == (False, pytest.approx(0.55))
    assert r1.scores["impl_rate"] == 0.75  # N/A category counted 0 in both sums
    # run 2: 2 of 3 -> pass; score is the mean of all three
    assert (r2.success, r2.scores["score"]) == (True, pytest.approx((0.9 + 0.2 + 0.8) / 3))
    # run 3: no valid judge -> error, scores missing (not 0)
    assert (r3.status, r3.error_type, r3.reward) == ("error", "judges_invalid", 0.0)
    assert r3.scores == {"score": None, "impl_rate": None}
    assert [e.attempt for e in (r1, r2, r3)] == [0, 1, 2]


def test_majority_pass_rules() -> None:
    j = lambda p, v=True: {"passed": p, "is_valid": v}  # noqa: E731
    assert majority_pass([j(True), j(True), j(False)]) is True
    assert majority_pass([j(True), j(False)]) is False
    assert majority_pass([j(True, False), j(False)]) is False
    assert majority_pass([j(True, False)]) is None


def test_completed_layout_missing_cost_and_bad_runs(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    done = root / "completed"
    make_run(done, "T1", "03", 1, [_judgment(0.5, True)], cost=None, exit_code=1)
    bad = make_run(done, "T1", "03", 2, [_judgment(0.5, True)], rr_extra={"run_number": 0})
    (done / "T1" / "03" / "run_03").mkdir()
    (done / "T1" / "04" / "run_01").mkdir(parents=True)
    (done / "T1" / "04" / "run_01" / "run_result.json").write_text("{not json")
    assert ADAPTER.detect(root)
    exps, eps, problems = _items(root)
    assert [e.labels["subtest"] for e in exps] == ["03", "04"]
    assert len(eps) == 1
    ep = eps[0]
    assert ep.usage.total_cost_usd is None  # unknown, not free
    assert ep.usage.prompt_tokens == 30 and ep.usage.total_tokens == 35
    assert (ep.status, ep.error_type, ep.success) == ("error", "nonzero_exit", True)
    reasons = {(Path(p.file).parent.name, p.field) for p in problems}
    assert any(p.file.endswith("run_03") and "no run_result.json" in p.reason
               for p in problems)
    assert (bad.name, "run_number") in reasons
    assert any("run_result.json" in (p.file or "") and "JSON" in p.reason.upper()
               for p in problems if "04" in (p.file or ""))


def test_not_a_scylla_dir(tmp_path: Path) -> None:
    (tmp_path / "T0" / "00").mkdir(parents=True)
    assert not ADAPTER.detect(tmp_path)
    assert not ADAPTER.detect(DRYRUN)


def test_wrong_types_in_judges_and_config_never_crash(tmp_path, fixtures):
    """Found by mutating the fixture (issue 28 point 1): ``models`` an object,
    ``criteria_scores`` a string, a ``judge_number`` that is an object. Each was a
    crash of the whole directory; now the run is read, the bad value missing."""
    import shutil
    root = tmp_path / "dryrun"
    shutil.copytree(fixtures / "scylla" / "dryrun", root)
    cfg = root / "raw" / "config" / "experiment.json"
    doc = json.loads(cfg.read_text())
    doc["models"] = {"a": 1}
    cfg.write_text(json.dumps(doc))
    rr = root / "raw" / "T2" / "01" / "run_01" / "run_result.json"
    doc = json.loads(rr.read_text())
    if isinstance(doc.get("judges"), list) and len(doc["judges"]) > 1:
        doc["judges"][1]["judge_number"] = {"a": 1}
    rr.write_text(json.dumps(doc))
    jm = next((root / "raw" / "T2" / "01" / "run_01" / "judge").glob("judge_*/judgment.json"))
    doc = json.loads(jm.read_text())
    doc["criteria_scores"] = "x"
    jm.write_text(json.dumps(doc))
    items = list(read_scylla_dir(root / "raw"))
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert episodes and not [i for i in items if isinstance(i, Problem)
                             and "Error" in i.reason]
    run = next(e for e in episodes if e.trajectory_id.startswith("T2-01-run_01"))
    assert any(k.endswith("criteria_scores") for k in run.extra["coercion_notes"])
