"""Terminal-Bench leaderboard results: trials as episodes, the harness's numbers reproduced."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from evalatlas.adapters.registry import plan
from evalatlas.adapters.terminal_bench import ADAPTER, ADAPTERS, read_submission
from evalatlas.errors import Problem
from evalatlas.metrics.outcomes import accuracy, default_k_values, pass_at_k_over_tasks
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
TB = FIXTURES / "terminal-bench"
ORCHESTRATORS = ["20250902_orchestrator_claude-4-sonnet", "20250902_orchestrator_qwen-3-coder-480B"]
# PROVENANCE.md: resolved share of every submission (400 trials, 80 tasks each)
RESOLVED_SHARE = {
    "20250711_openhands_claude-4-sonnet": 0.4125,
    "20250811_cursor-cli_claude-4-sonnet": 0.2625,
    "20250825_swe-agent-mini_claude-4-sonnet": 0.1275,
    "20250829_goose_claude-4-sonnet": 0.4125,
    "20250902_orchestrator_claude-4-sonnet": 0.3600,
    "20250902_orchestrator_qwen-3-coder-480B": 0.1925,
    "20250911_chaterm_claude-4-sonnet": 0.4925,
    "20250923_droid_claude-4-1-opus": 0.5875,
    "20250923_droid_claude-4-sonnet": 0.5050,
    "ob1-09-10-25": 0.5675,
}


def _read(path: Path) -> tuple[ExperimentRecord, list[EpisodeRecord], list[Problem]]:
    items = list(read_submission(path))
    exp = items[0]
    assert isinstance(exp, ExperimentRecord)
    return (exp, [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Problem)])


@pytest.fixture(scope="module")
def submissions() -> dict[str, tuple[ExperimentRecord, list[EpisodeRecord], list[Problem]]]:
    return {name: _read(TB / name) for name in RESOLVED_SHARE}


def test_registry_claims_each_submission_not_the_root() -> None:
    found = [x for x in plan([TB]) if not isinstance(x, Problem)]
    assert sorted(p.name for p, _ in found) == sorted(RESOLVED_SHARE)
    assert {a.name for _, a in found} == {"terminal-bench"}


def test_every_trial_is_an_episode(submissions) -> None:
    for name, (exp, eps, problems) in submissions.items():
        assert problems == [], name
        assert len(eps) == 400 and len({e.task_id for e in eps}) == 80, name
        assert Counter(e.attempt for e in eps) == {k: 80 for k in range(5)}, name
        assert len({e.trajectory_id for e in eps}) == 400
        share = sum(e.success for e in eps) / len(eps)
        assert share == pytest.approx(RESOLVED_SHARE[name], abs=1e-12), name
        assert exp.labels["submission"] == name


def test_harness_accuracy_reproduced_per_run(submissions) -> None:
    """Each run's own ``accuracy`` (null is_resolved counts as unresolved) exactly."""
    checked = 0
    for exp, eps, _ in submissions.values():
        by_run: dict[str, list[bool | None]] = defaultdict(list)
        for e in eps:
            by_run[e.extra["run"]].append(e.extra["is_resolved"])
        harness = exp.extra["harness_accuracy"]
        assert len(harness) == len(exp.extra["runs"])
        for run_dir, acc in harness.items():
            run_key = run_dir if run_dir in by_run else next(iter(by_run))
            assert accuracy(by_run[run_key]) == acc, (exp.experiment_name, run_dir)
            checked += 1
    assert checked == 42  # 8 five-run submissions + 2 single-run orchestrators


@pytest.mark.parametrize("name", ORCHESTRATORS)
def test_harness_pass_at_k_reproduced_exactly(submissions, name: str) -> None:
    exp, eps, _ = submissions[name]
    harness = exp.extra["harness_pass_at_k"][name]
    by_task: dict[str, list[bool]] = defaultdict(list)
    for e in eps:
        by_task[e.task_id].append(e.success)
    ks = default_k_values(min(len(v) for v in by_task.values()))
    assert ks == [2, 4, 5] == sorted(int(k) for k in harness)
    for k in ks:
        assert pass_at_k_over_tasks(by_task, k) == pytest.approx(harness[str(k)], abs=1e-15)


def test_orchestrator_claude_numbers(submissions) -> None:
    exp, eps, _ = submissions["20250902_orchestrator_claude-4-sonnet"]
    assert exp.extra["harness_pass_at_k"]["20250902_orchestrator_claude-4-sonnet"] == {
        "2": 0.4625, "4": 0.5475, "5": 0.575}
    modes = Counter(e.error_type for e in eps)
    assert modes == {None: 254, "agent_timeout": 117, "test_timeout": 11,
                     "unknown_agent_error": 10, "parse_error": 8}
    statuses = Counter(e.status for e in eps)
    assert statuses == {"completed": 254, "timeout": 128, "error": 18}
    first = next(e for e in eps if e.extra["trial_name"] == "nginx-request-logging.1-of-5")
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (22424, 3193)
    assert first.scores["tests_passed"] == 7 / 8
    assert first.attempt == 0


def test_zero_tokens_mean_not_reported(submissions) -> None:
    _, eps, _ = submissions["20250711_openhands_claude-4-sonnet"]
    assert all(e.usage.prompt_tokens is None and e.usage.total_tokens is None for e in eps)


def test_single_results_file_and_bad_rows(tmp_path: Path) -> None:
    rows = [
        {"trial_name": "a.1-of-2", "task_id": "a", "is_resolved": True, "failure_mode": "unset",
         "parser_results": {}, "total_input_tokens": 5, "total_output_tokens": 1},
        {"trial_name": "a.2-of-2", "task_id": "a", "is_resolved": None,
         "failure_mode": "unset"},
        {"trial_name": "b.1-of-2", "is_resolved": False, "failure_mode": "unset"},
        {"trial_name": "c.1-of-2", "task_id": "c", "is_resolved": "yes"},
        "not a row",
    ]
    f = tmp_path / "run1" / "results.json"
    f.parent.mkdir()
    f.write_text(json.dumps({"results": rows, "accuracy": 0.25}))
    file_adapter = ADAPTERS[0]
    assert file_adapter.detect(f) and ADAPTER.detect(f.parent)
    _exp, eps, problems = _read(f)
    assert [(e.task_id, e.attempt, e.reward, e.status, e.error_type) for e in eps] == [
        ("a", 0, 1.0, "completed", None), ("a", 1, 0.0, "error", "ungraded")]
    assert eps[0].scores["tests_passed"] is None
    assert {(p.record, p.field) for p in problems} == {
        ("b.1-of-2", "task_id"), ("c.1-of-2", "is_resolved"), ("results[4]", None)}
    assert all(p.file == str(f) for p in problems)


# --- bad records (issue 28 point 1): one bad trial never loses the submission ---------

QWEN = "20250902_orchestrator_qwen-3-coder-480B"


def _submission(tmp_path: Path, fixtures: Path, trial: dict | None = None,
                meta: dict | None = None) -> tuple[Path, list]:
    src = fixtures / "terminal-bench" / QWEN
    dst = tmp_path / QWEN
    dst.mkdir()
    data = json.loads((src / "results.json").read_text())
    data["results"][0].update(trial or {})
    (dst / "results.json").write_text(json.dumps(data))
    m = json.loads((src / "run_metadata.json").read_text())
    m.update(meta or {})
    (dst / "run_metadata.json").write_text(json.dumps(m))
    return dst, list(read_submission(dst))


@pytest.mark.parametrize(("trial", "field", "words"), [
    ({"task_id": ["grid"]}, "task_id", "a list is not an id"),
    ({"is_resolved": "yes"}, "is_resolved", "got the string 'yes'"),
    ({"failure_mode": {"x": 1}}, "failure_mode", "an object is not a failure mode name"),
    ({"total_input_tokens": "many"}, "total_input_tokens", "'many' is not a number"),
    ({"total_output_tokens": True}, "total_output_tokens", "a boolean (true) is not a number"),
    ({"total_input_tokens": 2.5}, "total_input_tokens", "2.5 is not a whole number"),
])
def test_one_bad_trial_is_quarantined_with_its_name_and_field(tmp_path, fixtures, trial,
                                                              field, words):
    folder, items = _submission(tmp_path, fixtures, trial)
    assert isinstance(items[0], ExperimentRecord)
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    problems = [i for i in items if isinstance(i, Problem)]
    assert len(episodes) == 399 and len(problems) == 1
    p = problems[0]
    assert (p.file, p.record, p.field) == (str(folder / "results.json"),
                                           "grid-pattern-transform.5-of-5", field)
    assert words in p.reason


def test_negative_tokens_are_missing_with_a_note(tmp_path, fixtures):
    _, items = _submission(tmp_path, fixtures, {"total_input_tokens": -100,
                                                "total_output_tokens": 50})
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert len(episodes) == 400 and not [i for i in items if isinstance(i, Problem)]
    first = next(e for e in episodes if e.extra["trial_name"] == "grid-pattern-transform.5-of-5")
    assert first.usage.prompt_tokens is None and first.usage.completion_tokens == 50
    assert first.extra["coercion_notes"] == {
        "total_input_tokens": "negative count (-100); missing"}


@pytest.mark.parametrize("size", ["NaN", -3, "80", True, [1]])
def test_bad_dataset_size_is_missing_with_a_note_not_a_lost_submission(tmp_path, fixtures,
                                                                       size):
    _, items = _submission(tmp_path, fixtures, meta={"dataset_size": size,
                                                     "model_name": ["x"]})
    exp = items[0]
    assert isinstance(exp, ExperimentRecord)
    assert len([i for i in items if isinstance(i, EpisodeRecord)]) == 400
    assert exp.benchmark_subset.n_tasks == 80  # counted from the trials instead
    notes = exp.extra["coercion_notes"]
    assert set(notes) == {"run_metadata.json.dataset_size", "run_metadata.json.model_name"}
    assert notes["run_metadata.json.dataset_size"].endswith("missing")
    assert exp.agent.llm_model is None


def test_unreadable_run_metadata_is_a_problem_and_the_trials_are_read(tmp_path, fixtures):
    folder, _ = _submission(tmp_path, fixtures)
    (folder / "run_metadata.json").write_text("{not json")
    items = list(read_submission(folder))
    problems = [i for i in items if isinstance(i, Problem)]
    assert len(problems) == 1 and problems[0].file == str(folder / "run_metadata.json")
    assert len([i for i in items if isinstance(i, EpisodeRecord)]) == 400
