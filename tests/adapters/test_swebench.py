"""SWE-bench results: per-instance leaderboard details, harness reports, SWE-Bench Pro."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalatlas.adapters.registry import plan
from evalatlas.adapters.swebench import ADAPTER, ADAPTERS, read_docent_csv, read_swebench_dir
from evalatlas.errors import Problem
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
VERIFIED = FIXTURES / "swebench-verified"
JAVA = FIXTURES / "swebench-java-verified"
PRO = FIXTURES / "swebench-pro"

# Board rows that do not match their own per-instance data. The first two are listed in
# PROVENANCE.md; the third (Maverick: 105/500 = 21.0%, board 21.04% = 105/499) is not.
MISMATCHED = {
    "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219": (51, 52.8),
    "20250726_mini-v1.0.0_claude-sonnet-4-20250514": (324, 64.93),
    "20250720_mini-v0.0.0-Llama-4-Maverick-17B-Instruct": (105, 21.04),
}


def _read(folder: Path) -> tuple[ExperimentRecord, list[EpisodeRecord], list[Problem]]:
    items = list(read_swebench_dir(folder))
    exp = items[0]
    assert isinstance(exp, ExperimentRecord)
    return (exp, [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Problem)])


def _folders(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())


def test_registry_claims_every_system_folder() -> None:
    for root, n in ((VERIFIED, 20), (JAVA, 5)):
        found = [x for x in plan([root]) if not isinstance(x, Problem)]
        assert len(found) == n
        assert {a.name for _, a in found} == {"swebench"}
    # SWE-Bench Pro: the folder of both sources is one source (runs merged across them);
    # each run directory and the CSV named on their own are still read on their own
    assert [(p, a.name) for p, a in plan([PRO])] == [(PRO, "swebench-pro")]
    alone = [x for x in plan(sorted(PRO.iterdir())) if not isinstance(x, Problem)]
    assert sorted(a.name for _, a in alone) == ["swebench"] * 9 + ["swebench-pro-docent"]


def test_verified_success_rates_match_the_board() -> None:
    summary = json.loads((VERIFIED / "leaderboard_summary.json").read_text())
    boards = {b["name"]: {r["folder"]: r["resolved"] for r in b["results"]}
              for b in summary["leaderboards"]}
    ids = json.loads((VERIFIED / "verified_instance_ids.json").read_text())
    matched = 0
    for folder in _folders(VERIFIED):
        exp, eps, problems = _read(folder)
        assert problems == []
        assert sorted(e.task_id for e in eps) == ids
        resolved = sum(e.success for e in eps)
        rate = round(100 * resolved / len(eps), 2)
        for board in ("Verified", "bash-only"):
            listed = boards[board][folder.name]
            assert exp.extra["leaderboard_resolved_pct"][board] == listed
            if folder.name in MISMATCHED:
                want_resolved, want_board = MISMATCHED[folder.name]
                assert (resolved, listed) == (want_resolved, want_board)
                assert rate != listed
            else:
                assert rate == listed, folder.name
                matched += 1
        if folder.name in MISMATCHED and resolved != 51:
            # the two other rows: the board divided by 499 instead of 500
            assert round(100 * resolved / 499, 2) == MISMATCHED[folder.name][1]
    assert matched == 2 * 17


def test_verified_costs_and_calls() -> None:
    exp, eps, _ = _read(VERIFIED / "20250807_mini-v1.7.0_gpt-5")
    assert exp.agent.name == "GPT-5 (2025-08-07) (medium reasoning)"
    assert exp.agent.llm_model == "gpt-5-2025-08-07"
    total = sum(e.usage.total_cost_usd for e in eps)
    assert total == pytest.approx(exp.extra["leaderboard_cost_usd"]["Verified"], rel=1e-12)
    assert total == pytest.approx(140.19150875, rel=1e-12)
    assert sum(e.usage.n_llm_calls for e in eps) / 500 == pytest.approx(13.208)
    first = next(e for e in eps if e.task_id == "astropy__astropy-12907")
    assert (first.success, first.usage.n_llm_calls, first.usage.total_cost_usd) == (
        True, 12, 0.17641575)


# PROVENANCE.md: resolved / submitted / total
JAVA_COUNTS = {
    "20240825_SWE-agent_deepseek-chat-v2": (9, 91, 91),
    "20240825_SWE-agent_deepseek-coder-v2": (7, 91, 91),
    "20240825_SWE-agent_doubao-pro-128k": (1, 91, 91),
    "20240825_SWE-agent_gpt-4o-2024-05-13": (6, 85, 91),
    "20240825_SWE-agent_gpt-4o-mini-2024-07-18": (1, 1, 91),
}


@pytest.mark.parametrize("name", sorted(JAVA_COUNTS))
def test_java_harness_reports(name: str) -> None:
    resolved, submitted, total = JAVA_COUNTS[name]
    exp, eps, problems = _read(JAVA / name)
    assert problems == []
    assert exp.benchmark_name == "swe-bench-java-verified"
    assert exp.agent.name == f"SWE-agent + {name.split('SWE-agent_')[1]}"
    assert len(eps) == total == exp.benchmark_subset.n_tasks
    assert sum(e.success for e in eps) == resolved
    not_submitted = [e for e in eps if e.error_type == "not_submitted"]
    assert len(not_submitted) == total - submitted
    assert all(e.status == "incomplete" and e.reward == 0 for e in not_submitted)
    # success rate = resolved / total instances, the leaderboard's denominator
    assert sum(e.success for e in eps) / len(eps) == resolved / 91


def test_java_empty_patches() -> None:
    _, eps, _ = _read(JAVA / "20240825_SWE-agent_gpt-4o-2024-05-13")
    report = json.loads((JAVA / "20240825_SWE-agent_gpt-4o-2024-05-13/results/results.json")
                        .read_text())
    empty = {e.task_id for e in eps if e.error_type == "empty_patch"}
    assert empty == set(report["empty_patch_ids"]) and len(empty) == 3


# PROVENANCE.md table: instances, resolved
PRO_COUNTS = {
    "claude-45sonnet-10132025": (730, 319), "claude-4sonnet-10132025": (562, 240),
    "claude-opus-4-1-paper": (891, 206), "claude-sonnet-4-paper": (663, 166),
    "gemini-2-5-pro-preview-paper": (955, 105), "gpt-4o-paper": (619, 36),
    "gpt-5-250-turns-10132025": (729, 265), "gptoss-paper": (728, 118),
    "kimi-k2-instruct-10132025": (729, 202),
}


def test_pro_runs() -> None:
    for name, (n, resolved) in PRO_COUNTS.items():
        exp, eps, problems = _read(PRO / name)
        assert problems == []
        assert exp.benchmark_name == "swe-bench-pro"
        assert (len(eps), sum(e.success for e in eps)) == (n, resolved), name


def test_bad_instances_are_reported(tmp_path: Path) -> None:
    d = tmp_path / "sys"
    d.mkdir()
    (d / "per_instance_details.json").write_text(json.dumps({
        "a__a-1": {"resolved": True, "cost": 0.5, "api_calls": 3},
        "a__a-2": {"resolved": "maybe", "cost": 0.1},
        "a__a-3": {"resolved": False, "cost": None, "api_calls": None},
    }))
    assert ADAPTER.detect(d)
    exp, eps, problems = _read(d)
    assert exp.agent.name == "sys"
    assert [(e.task_id, e.reward, e.usage.total_cost_usd) for e in eps] == [
        ("a__a-1", 1.0, 0.5), ("a__a-3", 0.0, None)]
    assert [(p.record, p.field) for p in problems] == [("a__a-2", "resolved")]
    assert problems[0].file == str(d / "per_instance_details.json")


def test_report_with_missing_instances(tmp_path: Path) -> None:
    d = tmp_path / "sub"
    (d / "results").mkdir(parents=True)
    (d / "results" / "results.json").write_text(json.dumps({
        "total_instances": 3, "resolved_ids": ["x-1"], "unresolved_ids": ["x-2"],
        "completed_ids": ["x-1", "x-2"]}))
    (tmp_path / "index.json").write_text(json.dumps({"x-1": {}, "x-2": {}, "x-3": {}}))
    _exp, eps, problems = _read(d)
    assert [(e.task_id, e.reward) for e in eps] == [("x-1", 1.0), ("x-2", 0.0)]
    assert {p.record for p in problems} == {None, "x-3"}
    assert any("total_instances is 3" in p.reason for p in problems)


# PROVENANCE.md: run labels and row counts of agent_runs_data.csv
DOCENT_ROWS = {
    "GPT-5 High - paper": 730, "Claude 4.5 Sonnet - 10132025": 730, "Kimi - paper": 729,
    "GPT-5 - 10132025": 729, "GLM-4.5 -- 10222025": 729, "Claude 4.5 Haiku -- 10222025": 729,
    "Gemini 2.5 Pro Preview -- debug-oct22": 728, "GPT OSS - paper": 728,
    "Gemini 2.5 Pro Preview - paper": 719, "GPT-5 Codex -- debug-oct22": 708,
    "Claude Opus 4.1 - paper": 663, "Claude Sonnet 4 - paper": 626, "GPT-4o - paper": 619,
    "Claude 4 Sonnet - 10132025": 562,
}


def test_pro_docent_csv() -> None:
    csv_path = PRO / "agent_runs_data.csv"
    assert ADAPTERS[0].detect(csv_path) and not ADAPTERS[0].detect(PRO / "PROVENANCE.md")
    counts: dict[str, int] = {}
    by_run: dict[str, dict[str, bool]] = {}
    name = ""
    for item in read_docent_csv(csv_path):
        assert not isinstance(item, Problem)
        if isinstance(item, ExperimentRecord):
            name = item.experiment_name
            by_run[name] = {}
        else:
            counts[name] = counts.get(name, 0) + 1
            by_run[name][item.task_id] = item.success
            assert item.n_agent_steps is not None
    assert counts == DOCENT_ROWS
    # PROVENANCE cross-checks: equal to the primary file where the labels correspond ...
    primary = json.loads((PRO / "gpt-5-250-turns-10132025" / "eval_results.json").read_text())
    assert by_run["GPT-5 - 10132025"] == primary
    # ... and the mislabelled run is another run's data
    sonnet = json.loads((PRO / "claude-sonnet-4-paper" / "eval_results.json").read_text())
    assert by_run["Claude Opus 4.1 - paper"] == sonnet


def test_docent_csv_bad_rows(tmp_path: Path) -> None:
    f = tmp_path / "runs.csv"
    f.write_text("agent_run_id,metadata.instance_id,metadata.model_name,metadata.resolved,"
                 "metadata.turns,tag,created_at\n"
                 "r1,i-1,M,true,3,,x\nr2,i-2,M,maybe,3,,x\nr3,i-3,,false,1,,x\n")
    items = list(read_docent_csv(f))
    eps = [i for i in items if isinstance(i, EpisodeRecord)]
    problems = [i for i in items if isinstance(i, Problem)]
    assert [(e.task_id, e.reward, e.n_agent_steps) for e in eps] == [("i-1", 1.0, 3)]
    assert sorted((p.line, p.field) for p in problems) == [
        (3, "metadata.resolved"), (4, "metadata.model_name")]


# --- wrong types (issue 28 point 2): never a wrong number, silently ---------------------


def _java_report(tmp_path: Path, fixtures: Path, **changes: object) -> tuple[Path, list]:
    import shutil
    src = fixtures / "swebench-java-verified" / "20240825_SWE-agent_deepseek-chat-v2"
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    report = json.loads((dst / "results" / "results.json").read_text())
    for key, change in changes.items():
        report[key] = change(report[key]) if callable(change) else change
    (dst / "results" / "results.json").write_text(json.dumps(report))
    return dst, list(read_swebench_dir(dst))


def test_resolved_as_one_comma_string_refuses_the_report_by_name(tmp_path, fixtures):
    folder, items = _java_report(tmp_path, fixtures, resolved=",".join,
                                 total_instances="91")
    assert not [i for i in items if isinstance(i, EpisodeRecord)]  # no resolved -> failure
    (p,) = items
    assert isinstance(p, Problem) and p.field == "resolved"
    assert p.file == str(folder / "results" / "results.json")
    assert p.reason.startswith("the string ") and "expected a list of instance ids" in p.reason


def test_total_instances_as_a_string_is_missing_with_a_note(tmp_path, fixtures):
    _, items = _java_report(tmp_path, fixtures, total_instances="91")
    exp = items[0]
    assert isinstance(exp, ExperimentRecord)
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert len(episodes) == 91 and sum(e.success for e in episodes) == 9
    assert exp.benchmark_subset.n_tasks == 91  # counted from the lists instead
    assert exp.extra["coercion_notes"] == {
        "total_instances": "the string '91': this format writes a number here, not a "
                           "string; missing"}


def test_details_with_bad_cost_types(tmp_path):
    folder = tmp_path / "sys"
    folder.mkdir()
    (folder / "per_instance_details.json").write_text(json.dumps({
        "a": {"resolved": True, "cost": "0.5", "api_calls": 3},
        "b": {"resolved": False, "cost": -1.0, "api_calls": True},
        "c": {"resolved": True, "cost": 0.25, "api_calls": -2},
    }))
    (folder / "leaderboard_entry.json").write_text(json.dumps({"board_entries": [1]}))
    exp, episodes, problems = _read(folder)
    assert {(p.record, p.field) for p in problems} == {("a", "cost"), ("b", "api_calls")}
    (c,) = episodes
    assert c.usage.total_cost_usd == 0.25 and c.usage.n_llm_calls is None
    assert c.extra["coercion_notes"] == {"api_calls": "negative count (-2); missing"}
    assert exp.extra["coercion_notes"] == {"board_entries": "a list, expected an object; "
                                           "missing"}
