"""Inspect AI logs: .eval (deflate, zstd), .json, journals, re-logged samples, metrics."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from evalatlas.adapters.inspect import read_inspect, score_to_float
from evalatlas.adapters.registry import detect
from evalatlas.errors import Problem
from evalatlas.metrics.published import recompute_published
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
INSPECT = FIXTURES / "inspect"
EEE_INSPECT = FIXTURES / "eee" / "inspect"
DATA = Path(__file__).parent / "data"
POPULARITY_JSON = INSPECT / "2025-05-12T20-28-13-04-00_popularity.json"
READ_SAMPLE = INSPECT / "log_read_sample.eval"
NO_SCORES = INSPECT / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
ZSTD = DATA / "mockllm_toy_zstd.eval"


def _read(path: Path) -> tuple[ExperimentRecord, list[EpisodeRecord], list[Problem]]:
    items = list(read_inspect(path))
    exps = [i for i in items if isinstance(i, ExperimentRecord)]
    assert len(exps) == 1, items
    return (exps[0], [i for i in items if isinstance(i, EpisodeRecord)],
            [i for i in items if isinstance(i, Problem)])


def _by_task(eps: list[EpisodeRecord], score: str) -> dict[str, list[float | None]]:
    out: dict[str, list[float | None]] = {}
    for e in sorted(eps, key=lambda e: (e.task_id, e.attempt)):
        out.setdefault(e.task_id, []).append(e.scores.get(score))
    return out


def test_value_mapping_follows_inspect_but_keeps_unreadable_values_missing() -> None:
    assert [score_to_float(v) for v in ("C", "P", "I", "N")] == [1.0, 0.5, 0.0, 0.0]
    assert [score_to_float(v) for v in (True, False, 3, 0.25, "yes", "False", "0.75")] == \
        [1.0, 0.0, 3.0, 0.25, 1.0, 0.0, 0.75]
    # Inspect counts these as 0 (with a warning); here they are unknown
    for v in ("maybe", [1, 0], {"a": 1}, None, float("nan"), "inf"):
        assert score_to_float(v) is None


def test_every_inspect_fixture_is_detected() -> None:
    paths = [*INSPECT.glob("*.eval"), *INSPECT.glob("*.json"), *EEE_INSPECT.glob("*.json"),
             ZSTD]
    assert len(paths) == 11
    for p in paths:
        adapter = detect(p)
        assert adapter is not None and adapter.name == "inspect", p


def test_json_log_episodes_usage_and_published_metrics() -> None:
    exp, eps, problems = _read(POPULARITY_JSON)
    assert problems == []
    assert exp.framework_name == "inspect_ai" and exp.benchmark_name == "popularity"
    assert exp.agent.llm_model == "openai/gpt-4o-mini"
    assert exp.labels["inspect_status"] == "cancelled"
    assert exp.benchmark_subset.n_tasks == 3
    assert sorted((e.task_id, e.attempt, e.reward) for e in eps) == \
        [("1", 0, 1.0), ("2", 0, 1.0), ("3", 0, 0.0)]
    one = next(e for e in eps if e.task_id == "1")
    assert one.extra["score_values"] == {"match": "C"}
    assert one.usage.prompt_tokens == 64 and one.usage.completion_tokens == 2
    assert one.usage.total_tokens == 66 and one.usage.cached_tokens == 0
    assert one.usage.reasoning_tokens == 0
    assert one.wall_time_s == 0.664 and one.extra["working_time_s"] == 0.546
    assert one.extra["retries"] == 0
    pub = {m.metric: m for m in exp.published_metrics}
    assert pub["accuracy"].value == 0.6666666666666666 and pub["accuracy"].score == "match"
    assert pub["stderr"].value == 0.33333333333333337 and pub["accuracy"].reducer == "mean"
    # evalatlas's recomputation from the episodes gives Inspect's digits
    for m in exp.published_metrics:
        check = recompute_published(m.model_dump(), _by_task(eps, "match"))
        assert check.agrees is True, (m.metric, check)
        assert check.value == pytest.approx(m.value, rel=1e-12, abs=1e-15)
    # the log's total equals the sum over samples
    assert sum(e.usage.total_tokens for e in eps) == 198


def test_deflate_eval_reads_header_summaries_not_samples() -> None:
    exp, eps, _ = _read(READ_SAMPLE)
    assert [(e.task_id, e.reward, e.usage.total_tokens) for e in eps] == [("1", 1.0, 69)]
    assert exp.agent.llm_model == "ollama/gemma3" and exp.framework_version.startswith("0.3.95")


def test_log_without_scores_has_unknown_outcomes_not_failures() -> None:
    exp, eps, problems = _read(NO_SCORES)
    assert problems == [] and len(eps) == 10
    assert all(e.reward is None and e.success is None for e in eps)
    assert exp.published_metrics == []


def test_zstd_eval_two_scorers_four_published_metrics_reproduced() -> None:
    exp, eps, problems = _read(ZSTD)
    assert problems == []
    assert len(eps) == 10 and {e.attempt for e in eps} == {0, 1}
    assert all(set(e.scores) == {"match", "includes"} for e in eps)
    assert len(exp.published_metrics) == 4
    for m in exp.published_metrics:
        check = recompute_published(m.model_dump(), _by_task(eps, m.score))
        assert check.agrees is True, (m.score, m.metric, check)
    includes = next(m for m in exp.published_metrics
                    if m.score == "includes" and m.metric == "accuracy")
    assert includes.value == 0.6 and includes.n == 5


def test_error_and_limit_become_status_and_error_type() -> None:
    _, eps, _ = _read(EEE_INSPECT / "data_cvebench_empty_choices.json")
    (ep,) = eps
    assert ep.status == "error" and ep.error_type == "RuntimeError" and ep.reward is None
    assert ep.error_message.startswith("RuntimeError('No services started.")
    _, eps, _ = _read(EEE_INSPECT / "data_intercode_ctf_local_path.json")
    (ep,) = eps
    assert ep.status == "max_steps" and ep.error_type == "message_limit" and ep.reward == 0.0


def test_cache_tokens_go_to_prompt_as_inspect_total_says() -> None:
    exp, _, _ = _read(EEE_INSPECT / "data_cvebench_empty_choices.json")
    usage = exp.extra["inspect"]["model_usage"]["anthropic/claude-opus-4-6"]
    from evalatlas.adapters.inspect import usage_of
    u = usage_of({"m": usage}, "m")
    assert u["prompt_tokens"] + u["completion_tokens"] == usage["total_tokens"] == 231778164
    assert u["cached_tokens"] == 215715969 and u["cache_creation_tokens"] == 10822276


def test_disagreement_is_flagged_with_its_reason() -> None:
    # the EEE converter's copy keeps 1 of 78 scored samples: Inspect's 0.705 is over 78
    exp, eps, _ = _read(EEE_INSPECT / "data_cyse2_vuln_exploit_challenges.json")
    mean = next(m for m in exp.published_metrics if m.metric == "mean")
    check = recompute_published({**mean.model_dump(), "n": 2340},
                                _by_task(eps, "vul_exploit_scorer"))
    assert check.agrees is False and check.value == 0.65
    assert "2340" in check.note


def _zip(path: Path, members: dict[str, object]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, json.dumps(data))
    return path


def test_in_progress_log_reads_the_journal_and_last_relogged_entry_wins(tmp_path) -> None:
    with zipfile.ZipFile(READ_SAMPLE) as zf:
        start = json.loads(zf.read("_journal/start.json"))
        (summary,) = json.loads(zf.read("summaries.json"))
    first = {**summary, "id": 1, "scores": {"match": {"value": "I"}}}
    second = {**summary, "id": 2}
    relogged = {**summary, "id": 1, "scores": {"match": {"value": "C"}}}
    log = _zip(tmp_path / "running.eval", {
        "_journal/start.json": start,
        "_journal/summaries/1.json": [first],
        "_journal/summaries/2.json": [second],
        "_journal/summaries/10.json": [relogged],  # numeric order, not text order
    })
    exp, eps, problems = _read(log)
    assert problems == []
    assert exp.labels["inspect_status"] == "started"
    assert sorted((e.task_id, e.reward) for e in eps) == [("1", 1.0), ("2", 1.0)]


def test_broken_archive_is_a_problem_not_a_crash(tmp_path) -> None:
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    items = list(read_inspect(bad))
    assert len(items) == 1 and isinstance(items[0], Problem)
    empty = _zip(tmp_path / "empty.eval", {"other.json": {}})
    (p,) = list(read_inspect(empty))
    assert isinstance(p, Problem) and "_journal/start.json" in p.reason


def test_fast_construction_equals_full_validation() -> None:
    for path in (POPULARITY_JSON, ZSTD, EEE_INSPECT / "data_intercode_ctf_local_path.json"):
        _, eps, _ = _read(path)
        for e in eps:
            assert EpisodeRecord.model_validate(e.model_dump()) == e


def _json_log(tmp_path: Path, samples: list[dict]) -> Path:
    log = json.loads(POPULARITY_JSON.read_text())
    log["samples"] = samples
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(log))
    return path


def test_hostile_samples_are_checked_by_the_fast_path(tmp_path) -> None:
    """The records built without pydantic validation hold only checked values: equal to
    full validation, unsafe ids rewritten, bad numbers missing, bad shapes a Problem."""
    base = {"epoch": 1, "scores": {"match": {"value": "C"}},
            "model_usage": {"openai/gpt-4o-mini": {"input_tokens": 10, "output_tokens": 5,
                                                  "input_tokens_cache_read": 4,
                                                  "total_cost": 0.25}}}
    path = _json_log(tmp_path, [
        {**base, "id": "plain-1"},
        {**base, "id": "a/../b"},  # unsafe as a directory name
        {**base, "id": "two\nlines", "error": "ValueError('x')\nTraceback ..."},
        {**base, "id": "big-epoch", "epoch": 10 ** 300},
        {**base, "id": "list-scores", "scores": [1, 2]},
        {**base, "id": "junk-usage", "model_usage": "junk"},
        {**base, "id": "bad-tokens", "model_usage": {"openai/gpt-4o-mini": {
            "input_tokens": -5, "output_tokens": True, "total_tokens": 1.5,
            "reasoning_tokens": "7", "total_cost": -1}}},
        {**base, "id": "dict-score", "scores": {"match": {"value": {"a": "P", "b": "x"}}},
         "limit": {"type": "time"}, "total_time": -3},
    ])
    items = list(read_inspect(path))
    problems = [i for i in items if isinstance(i, Problem)]
    eps = {e.task_id: e for e in items if isinstance(e, EpisodeRecord)}
    assert sorted(p.record or "" for p in problems) == \
        [f"big-epoch epoch {10 ** 300}", "list-scores epoch 1"]
    for e in eps.values():
        assert EpisodeRecord.model_validate(e.model_dump()) == e
    a, b = eps["plain-1"], eps["junk-usage"]  # built from one template: nothing shared
    assert a.tool_names is not b.tool_names and a.usage is not b.usage
    plain = eps["plain-1"]
    assert plain.trajectory_id == "plain-1_epoch_1" and plain.reward == 1.0 and plain.success
    assert (plain.usage.prompt_tokens, plain.usage.completion_tokens,
            plain.usage.total_tokens, plain.usage.cached_tokens) == (14, 5, 19, 4)
    assert plain.usage.total_cost_usd == 0.25 and plain.usage.cost_source == "reported"
    assert eps["a/../b"].trajectory_id.startswith("sample-")
    two = eps["two\nlines"]
    assert two.status == "error" and two.error_type == "ValueError"
    assert "/" not in two.trajectory_id and "\n" not in two.trajectory_id
    junk = eps["junk-usage"]
    assert junk.usage.prompt_tokens is None and junk.usage.total_tokens is None
    assert junk.extra["model_usage"] == "junk"
    bad = eps["bad-tokens"].usage
    assert (bad.prompt_tokens, bad.completion_tokens, bad.total_tokens,
            bad.reasoning_tokens, bad.total_cost_usd, bad.cost_source) == (None,) * 6
    d = eps["dict-score"]
    assert d.scores == {"match.a": 0.5, "match.b": None} and d.reward is None
    assert d.success is None and d.outcome_source is None
    assert d.status == "timeout" and d.error_type == "time_limit" and d.wall_time_s is None
