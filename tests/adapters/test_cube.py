"""cube-harness trajectory directories (real fixtures) and EvalLog directories."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evalatlas.adapters.cube import read_experiment_dir
from evalatlas.adapters.registry import detect
from evalatlas.errors import Problem
from evalatlas.records import EpisodeRecord, ExperimentRecord

XRAY = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "cube" / "xray"


def _read(path: Path) -> tuple[ExperimentRecord, list[EpisodeRecord], list[Problem]]:
    items = list(read_experiment_dir(path))
    exp = items[0]
    assert isinstance(exp, ExperimentRecord)
    eps = [i for i in items if isinstance(i, EpisodeRecord)]
    return exp, eps, [i for i in items if isinstance(i, Problem)]


def test_detected_as_evallog_dir() -> None:
    adapter = detect(XRAY / "v2_with_status")
    assert adapter is not None and adapter.name == "evallog"


def test_with_status_fixture() -> None:
    exp, eps, problems = _read(XRAY / "v2_with_status")
    assert problems == []
    assert exp.agent.name == "test_agent"
    assert exp.benchmark_subset.n_tasks == 1
    by_id = {e.trajectory_id: e for e in eps}
    ep0, ep1 = by_id["task_1_ep0"], by_id["task_1_ep1"]
    assert (ep0.task_id, ep0.reward, ep0.success, ep0.status) == ("task_1", 1.0, True, "completed")
    assert ep0.wall_time_s == 10.0 and ep0.timestamp == 1000.0 and ep0.attempt == 0
    # ep1: metadata has no times, status.json has them; MAX_STEPS_REACHED, retried once.
    assert (ep1.reward, ep1.success, ep1.status, ep1.attempt) == (0.0, False, "max_steps", 1)
    assert ep1.wall_time_s == 60.0
    assert ep1.extra == {"retry_count": 1, "cube_status": "MAX_STEPS_REACHED"}
    assert all(e.experiment_id == exp.experiment_id for e in eps)
    # summary_stats is null: usage unknown, not zero.
    assert ep0.usage.prompt_tokens is None and ep0.usage.total_cost_usd is None


def test_without_status_fixture() -> None:
    _, eps, problems = _read(XRAY / "v2_no_status")
    assert problems == []
    assert [(e.trajectory_id, e.reward, e.status) for e in eps] == [
        ("task_1_ep0", 1.0, "completed")]


def test_archived_retry_directories_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    shutil.copytree(XRAY / "v2_with_status", root)
    shutil.copytree(root / "episodes/task_1_ep1", root / "episodes/task_1_ep1.archived_1747")
    _, eps, _ = _read(root)
    assert sorted(e.trajectory_id for e in eps) == ["task_1_ep0", "task_1_ep1"]


def test_episode_record_wins_over_metadata(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    shutil.copytree(XRAY / "v2_no_status", root)
    exp, _, _ = _read(root)
    rec = {"experiment_id": exp.experiment_id, "task_id": "task_1", "reward": 0.5,
           "trajectory_id": "task_1_ep0", "usage": {"prompt_tokens": 10}}
    (root / "episodes/task_1_ep0/episode_record.json").write_text(json.dumps(rec))
    _, eps, _ = _read(root)
    assert eps[0].reward == 0.5 and eps[0].usage.prompt_tokens == 10


def test_summary_stats_map_to_usage(tmp_path: Path) -> None:
    root = tmp_path / "exp"
    shutil.copytree(XRAY / "v2_no_status", root)
    meta_path = root / "episodes/task_1_ep0/episode.metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["summary_stats"] = {"n_env_steps": 3, "n_agent_steps": 2, "total_llm_calls": 2,
                             "prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 50,
                             "cache_creation_tokens": 5, "cost": 0.01, "final_reward": 1.0}
    meta["metadata"]["action_schemas"] = [{"function": {"name": "click"}}, {"name": "type"}]
    meta_path.write_text(json.dumps(meta))
    _, eps, _ = _read(root)
    u = eps[0].usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens, u.cached_tokens,
            u.cache_creation_tokens, u.total_cost_usd, u.n_llm_calls) == (
        100, 20, 120, 50, 5, 0.01, 2)
    assert eps[0].tool_names == ["click", "type"]
    assert (eps[0].n_agent_steps, eps[0].n_env_steps) == (2, 3)


def test_wrong_types_in_episode_metadata_quarantine_that_episode(tmp_path, fixtures):
    """Found by mutating the fixture (issue 28 point 1): a list as ``metadata``, a number
    as ``reward_info``, a string token count; each was an AttributeError for the whole
    directory."""
    for change, field in (({"metadata": [1]}, "metadata"),
                          ({"reward_info": 2.5}, "reward_info"),
                          ({"summary_stats": {"prompt_tokens": "12"}},
                           "summary_stats.prompt_tokens")):
        root = tmp_path / field
        shutil.copytree(fixtures / "cube" / "xray" / "v2_no_status", root)
        meta = root / "episodes" / "task_1_ep0" / "episode.metadata.json"
        doc = json.loads(meta.read_text())
        doc.update(change)
        meta.write_text(json.dumps(doc))
        items = list(read_experiment_dir(root))
        assert isinstance(items[0], ExperimentRecord)
        problems = [i for i in items if isinstance(i, Problem)]
        assert [(p.field, p.file) for p in problems] == [(field, str(meta))], field
        assert "Error" not in problems[0].reason
