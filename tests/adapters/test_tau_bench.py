"""tau-bench results: tasks x trials, reward parts, user cost, tau-bench's own pass^k."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from evalatlas.adapters.registry import detect
from evalatlas.adapters.tau_bench import read_tau_bench
from evalatlas.errors import Problem
from evalatlas.metrics.outcomes import pass_hat_k_over_tasks
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURE = (Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "tau-bench"
           / "gpt-4o-airline.reduced.json")
# tau-bench's display_metrics on this file (run.py; 50 tasks x 4 trials)
TAU_PASS_HAT = {1: 0.42, 2: 0.2733333333333333, 3: 0.22, 4: 0.2}


def _upstream_pass_hat_k(rows: list[dict]) -> dict[int, float]:
    """tau-bench's own code (run.py display_metrics), transcribed."""
    def is_successful(reward: float) -> bool:
        return (1 - 1e-6) <= reward <= (1 + 1e-6)

    num_trials = len({r["trial"] for r in rows})
    c_per_task: dict[int, int] = {}
    for r in rows:
        c_per_task[r["task_id"]] = c_per_task.get(r["task_id"], 0) + is_successful(r["reward"])
    return {k: sum(comb(c, k) / comb(num_trials, k) for c in c_per_task.values())
            / len(c_per_task) for k in range(1, num_trials + 1)}


def test_fixture_reads_as_50_tasks_by_4_trials() -> None:
    assert detect(FIXTURE).name == "tau-bench"
    items = list(read_tau_bench(FIXTURE))
    exp = items[0]
    eps = [i for i in items if isinstance(i, EpisodeRecord)]
    assert isinstance(exp, ExperimentRecord) and not any(isinstance(i, Problem) for i in items)
    assert exp.agent.name == "gpt-4o" and exp.benchmark_name == "tau-bench-airline"
    assert exp.benchmark_subset.n_tasks == 50 and len(eps) == 200
    assert {e.attempt for e in eps} == {0, 1, 2, 3}
    assert sum(e.reward for e in eps) / len(eps) == pytest.approx(0.42)
    first = next(e for e in eps if e.task_id == "0" and e.attempt == 0)
    assert first.extra["user_cost_usd"] == 0.0035475000000000003
    assert first.usage.total_cost_usd is None  # the agent's own cost is not in the file
    assert first.scores == {"r_actions": 0.0} and first.n_steps == 32


def test_pass_hat_k_reproduces_tau_bench() -> None:
    rows = json.loads(FIXTURE.read_text())
    assert _upstream_pass_hat_k(rows) == pytest.approx(TAU_PASS_HAT, abs=1e-15)
    eps = [i for i in read_tau_bench(FIXTURE) if isinstance(i, EpisodeRecord)]
    by_task: dict[str, list[bool | None]] = {}
    for e in eps:
        by_task.setdefault(e.task_id, []).append(e.success)
    for k, expected in TAU_PASS_HAT.items():
        assert pass_hat_k_over_tasks(by_task, k) == pytest.approx(expected, abs=1e-12)


def test_duplicates_and_bad_entries_are_problems(tmp_path) -> None:
    f = tmp_path / "x-retail.json"
    f.write_text(json.dumps([{"task_id": 1, "trial": 0, "reward": 1.0},
                             {"task_id": 1, "trial": 0, "reward": 0.0},
                             {"task_id": 2, "trial": -1, "reward": 1.0}]))
    items = list(read_tau_bench(f))
    assert [type(i).__name__ for i in items] == \
        ["ExperimentRecord", "EpisodeRecord", "Problem", "Problem"]
    assert items[1].reward == 1.0 and items[0].benchmark_name == "tau-bench-retail"


def test_summary_shows_tau_bench_pass_hat_k_next_to_pass_at_k(tmp_path) -> None:
    import evalatlas.api as ea

    with ea.open(tmp_path / "s.duckdb") as store:
        assert store.ingest(FIXTURE).rejected == 0
        (row,) = ea.summary(store).rows
    assert set(row["pass_hat_k"]) == set(row["pass_at_k"]) == {"1", "2", "3", "4"}
    for k, expected in TAU_PASS_HAT.items():
        assert row["pass_hat_k"][str(k)]["value"] == pytest.approx(expected, abs=1e-12)
    assert row["pass_at_k"]["4"]["value"] == pytest.approx(0.72, abs=1e-12)


# --- bad records (issue 28 points 1 and 2): one bad entry never loses the file --------


def _with_row0(tmp_path: Path, fixtures: Path, **changes: object) -> list:
    rows = json.loads((fixtures / "tau-bench" / "gpt-4o-airline.reduced.json").read_text())
    rows[0].update(changes)
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(rows))
    return list(read_tau_bench(path))


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"reward_info_info": [1, 0]}, "reward_info_info", "a list, expected an object"),
    ({"reward": "1.0"}, "reward", "this format writes a number here, not a string"),
    ({"reward": True}, "reward", "a boolean (true) is not a number"),
    ({"reward": {"v": 1}}, "reward", "an object is not a number"),
    ({"task_id": ["a"]}, "task_id", "a list is not an id"),
    ({"trial": "0"}, "trial", "not a string"),
    ({"user_cost": "cheap"}, "user_cost", "'cheap' is not a number"),
])
def test_one_bad_entry_is_quarantined_naming_the_field(tmp_path, fixtures, changes, field,
                                                       words):
    items = _with_row0(tmp_path, fixtures, **changes)
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    problems = [i for i in items if isinstance(i, Problem)]
    assert len(episodes) == 199
    assert len(problems) == 1
    p = problems[0]
    assert (p.field, p.record, p.file) == (field, "#0", str(tmp_path / "gpt-4o-airline.json"))
    assert words in p.reason
    assert "Error" not in p.reason  # words, not an exception text


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-inf", "1e999"])
def test_a_non_finite_reward_is_an_unknown_outcome_with_a_note(tmp_path, fixtures, value):
    items = _with_row0(tmp_path, fixtures, reward=value)
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert len(episodes) == 200 and not [i for i in items if isinstance(i, Problem)]
    first = episodes[0]
    assert first.reward is None and first.success is None
    assert "not a finite number; missing" in first.extra["coercion_notes"]["reward"]


def test_negative_user_cost_is_missing_with_a_note(tmp_path, fixtures):
    items = _with_row0(tmp_path, fixtures, user_cost=-0.5, n_traj_messages=-3)
    first = next(i for i in items if isinstance(i, EpisodeRecord))
    assert "user_cost_usd" not in first.extra and first.n_steps is None
    assert first.extra["coercion_notes"] == {
        "user_cost": "negative (-0.5); missing",
        "n_traj_messages": "negative count (-3); missing"}
    assert first.reward == 0.0  # the outcome itself is kept
