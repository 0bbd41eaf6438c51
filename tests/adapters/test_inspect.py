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


def test_cache_tokens_go_to_prompt_as_inspect_total_says(tmp_path: Path) -> None:
    # a real Claude usage (the run header of the cvebench log), given to a sample: the
    # episode's usage is what the production read makes of it (issue 22.7: the test
    # called a twin of that code, which production did not use)
    exp, _, _ = _read(EEE_INSPECT / "data_cvebench_empty_choices.json")
    usage = exp.extra["inspect"]["model_usage"]["anthropic/claude-opus-4-6"]
    _, (ep,), problems = _read(_json_log(tmp_path, [_sample(1, model_usage={MODEL: usage})]))
    assert problems == []
    u = ep.usage
    assert u.prompt_tokens + u.completion_tokens == usage["total_tokens"] == 231778164
    assert u.cached_tokens == 215715969 and u.cache_creation_tokens == 10822276


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
    # the one coercion rule (issue 28 point 2): a usage that is not an object and a
    # token count that is a boolean quarantine their sample, naming the field
    assert sorted((p.record or "", p.field) for p in problems) == [
        ("bad-tokens epoch 1", "model_usage.openai/gpt-4o-mini.output_tokens"),
        (f"big-epoch epoch {10 ** 300}", "trajectory_id"), ("junk-usage epoch 1", "model_usage"),
        ("list-scores epoch 1", "scores")]
    for e in eps.values():
        assert EpisodeRecord.model_validate(e.model_dump()) == e
    a, b = eps["plain-1"], eps["a/../b"]  # built from one template: nothing shared
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
    d = eps["dict-score"]
    assert d.scores == {"match.a": 0.5, "match.b": None} and d.reward is None
    assert d.success is None and d.outcome_source is None
    assert d.status == "timeout" and d.error_type == "time_limit" and d.wall_time_s is None
    assert d.extra["coercion_notes"] == {"total_time": "negative (-3); missing"}


# --- wrong types, versions, duplicate members, bombs (issue 28 points 2 and 6) ---------


def _sample(sid: object = 1, epoch: object = 1, **changes: object) -> dict:
    log = json.loads(POPULARITY_JSON.read_text())
    return {**log["samples"][0], "id": sid, "epoch": epoch, **changes}


MODEL = "openai/gpt-4o-mini"


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"model_usage": "openai/gpt-4o-mini: 66 tokens"}, "model_usage",
     "expected an object of per-model usage"),
    ({"model_usage": [{"input_tokens": 5}]}, "model_usage", "a list, expected an object"),
    ({"model_usage": {MODEL: {"input_tokens": "64", "output_tokens": 2}}},
     f"model_usage.{MODEL}.input_tokens", "not a string"),
    ({"model_usage": {MODEL: {"input_tokens": 64.5, "output_tokens": 2}}},
     f"model_usage.{MODEL}.input_tokens", "64.5 is not a whole number"),
    ({"model_usage": {MODEL: {"input_tokens": 64, "output_tokens": 2, "total_cost": "0.1"}}},
     f"model_usage.{MODEL}.total_cost", "not a string"),
    ({"id": {"x": 1}}, "id", "an object is not an id"),
    ({"epoch": "2"}, "epoch", "the string '2': this format writes a number here"),
    ({"epoch": True}, "epoch", "a boolean (true) is not a number"),
    ({"epoch": 0}, "epoch", "Inspect counts epochs from 1"),
])
def test_summaries_type_errors_quarantine_the_sample(tmp_path, changes, field, words):
    path = _json_log(tmp_path, [_sample(1), _sample(2, **changes), _sample(3)])
    _, eps, problems = _read(path)
    assert sorted(e.task_id for e in eps) == ["1", "3"]
    (p,) = problems
    assert p.file == str(path) and p.field == field and words in p.reason
    assert p.record in ("2 epoch 1", "samples[1]")


def test_a_string_epoch_never_overwrites_the_real_epoch_1(tmp_path):
    real = _sample(7, 1, scores={"match": {"value": "C"}})
    wrong = _sample(7, "2", scores={"match": {"value": "I"}})
    _, eps, problems = _read(_json_log(tmp_path, [real, wrong]))
    (ep,) = eps
    assert (ep.task_id, ep.attempt, ep.reward) == ("7", 0, 1.0)
    assert [(p.record, p.field) for p in problems] == [("samples[1]", "epoch")]


def test_negative_tokens_are_missing_with_a_note(tmp_path):
    usage = {MODEL: {"input_tokens": -64, "output_tokens": 2, "total_tokens": 66}}
    _, (ep,), problems = _read(_json_log(tmp_path, [_sample(1, model_usage=usage)]))
    assert problems == []
    assert ep.usage.prompt_tokens is None and ep.usage.completion_tokens == 2
    assert ep.extra["coercion_notes"] == {
        f"model_usage.{MODEL}.input_tokens": "negative count (-64); missing"}


@pytest.mark.parametrize("version", [99, "2", None])
def test_unknown_log_version_is_refused_by_name(tmp_path, version):
    log = json.loads(POPULARITY_JSON.read_text())
    log["version"] = version
    if version == 99:  # fields moved, as a future format might
        log["spec"] = log.pop("eval") | {"model": None}
        log["eval"] = {"task": "popularity"}
    path = tmp_path / "future.json"
    path.write_text(json.dumps(log))
    items = list(read_inspect(path))
    if version is None:  # no version at all: read as before
        assert isinstance(items[0], ExperimentRecord)
        return
    (p,) = items
    assert isinstance(p, Problem) and p.field == "version"
    assert f"version {version!r}" in p.reason and "reads versions 1 and 2" in p.reason
    with zipfile.ZipFile(READ_SAMPLE) as zf:
        members = {n: json.loads(zf.read(n)) for n in zf.namelist() if n.endswith(".json")}
    members["header.json"]["version"] = version
    (p,) = list(read_inspect(_zip(tmp_path / "future.eval", members)))
    assert p.field == "version"


def _members(path: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(path) as zf:
        return [(info, zf.read(info)) for info in zf.infolist()]


@pytest.mark.parametrize("member", ["header.json", "summaries.json"])
def test_duplicate_member_is_flagged_not_last_one_wins(tmp_path, member):
    import warnings
    path = tmp_path / "dup.eval"
    members = _members(READ_SAMPLE)
    with zipfile.ZipFile(path, "w") as dst, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name"
        for info, data in members:
            dst.writestr(info, data)
        dst.writestr(member, dict((i.filename, d) for i, d in members)[member])
    (p,) = list(read_inspect(path))
    assert isinstance(p, Problem) and p.field == member
    assert f"two members named {member}" in p.reason


def _bomb(tmp_path: Path, member: str, inflated: int, declared: int, zstd: bool) -> Path:
    """A copy of the sample log whose ``member`` inflates to ``inflated`` bytes while
    its zip headers declare ``declared`` (the local and central headers patched)."""
    import zlib
    payload = b" " * inflated
    if zstd:
        import zstandard
        comp, method = zstandard.ZstdCompressor(level=3).compress(payload), 93
    else:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        comp, method = c.compress(payload) + c.flush(), zipfile.ZIP_DEFLATED
    from bench_inspect_bomb import build  # benchmarks/: the one zip-header patcher

    path = tmp_path / "bomb.eval"
    build(path, member, comp, method, declared, sample=READ_SAMPLE)
    return path


@pytest.mark.parametrize(("member", "zstd"), [("header.json", False),
                                              ("summaries.json", True)])
def test_a_zip_bomb_stops_at_the_declared_size_in_bounded_memory(tmp_path, member, zstd):
    """Scaled down: 96 MiB inflating from a member that declares 2,000 bytes (the
    issue's case is 3 GiB and took 6.2 GB of RSS)."""
    import tracemalloc
    path = _bomb(tmp_path, member, 96 * 1024 * 1024, 2000, zstd)
    tracemalloc.start()
    try:
        items = list(read_inspect(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (p,) = items
    assert isinstance(p, Problem) and p.field == member
    assert "inflates past its declared 2,000 bytes" in p.reason
    assert peak < 8 * 1024 * 1024, peak  # was the whole 96 MiB


def test_a_member_over_max_record_bytes_is_refused_before_inflating(tmp_path):
    from evalatlas.records.limits import ReadLimits, using
    with zipfile.ZipFile(READ_SAMPLE) as zf:
        declared = zf.getinfo("header.json").file_size
    with using(ReadLimits(max_record_bytes=1000)):
        (p,) = list(read_inspect(READ_SAMPLE))
    assert p.field == "header.json"
    assert f"member declares {declared:,} bytes, over the 1,000-byte limit" in p.reason


# --- several models in one sample (issue 21 point 6) -----------------------------------


def test_single_model_fixtures_have_no_judge_usage_and_totals_match_the_header():
    exp, eps, _ = _read(POPULARITY_JSON)
    assert all(e.judge_usage is None for e in eps)
    totals = exp.extra["inspect"]["usage_totals"]
    header = exp.extra["inspect"]["model_usage"][MODEL]
    assert totals["agent"] == {"model": MODEL, "input_tokens": 192, "output_tokens": 6,
                               "total_tokens": 198, "total_cost": None}
    assert (header["input_tokens"], header["output_tokens"]) == (192, 6)
    assert totals["evaluation"] == {} and totals["total"]["total_tokens"] == 198
    assert "per-sample model_usage" in totals["source"]
    _, eps, _ = _read(ZSTD)  # mockllm, two scorers, no grader model
    assert all(e.judge_usage is None for e in eps)


def test_a_grader_models_usage_becomes_judge_usage_and_counts_in_the_run_total(tmp_path):
    """The real popularity log, with a grader (model role) used by the scorer."""
    log = json.loads(POPULARITY_JSON.read_text())
    log["eval"]["model_roles"] = {"grader": {"model": "mockllm/grader"}}
    for i, s in enumerate(log["samples"]):
        s["model_usage"][MODEL]["total_cost"] = 0.001
        s["model_usage"]["mockllm/grader"] = {"input_tokens": 100 + i, "output_tokens": 10,
                                              "total_tokens": 110 + i, "total_cost": 0.01}
    path = tmp_path / "graded.json"
    path.write_text(json.dumps(log))
    exp, eps, problems = _read(path)
    assert problems == []
    first = min(eps, key=lambda e: e.task_id)
    assert (first.usage.model, first.usage.prompt_tokens, first.usage.total_tokens) == \
        (MODEL, 64, 66)  # the agent's own, as before
    j = first.judge_usage
    assert (j.model, j.prompt_tokens, j.completion_tokens, j.total_tokens,
            j.total_cost_usd, j.cost_source) == ("mockllm/grader", 100, 10, 110, 0.01,
                                                 "reported")
    totals = exp.extra["inspect"]["usage_totals"]
    assert totals["agent"]["input_tokens"] == 192
    assert totals["evaluation"] == {"mockllm/grader": {
        "input_tokens": 303, "output_tokens": 30, "total_tokens": 333,
        "total_cost": pytest.approx(0.03)}}
    assert totals["total"]["total_tokens"] == 198 + 333
    assert totals["total"]["total_cost"] == pytest.approx(0.033)
    for e in eps:
        assert EpisodeRecord.model_validate(e.model_dump()) == e


def test_two_other_models_sum_into_one_judge_usage_without_a_model_name(tmp_path):
    usage = {MODEL: {"input_tokens": 5, "output_tokens": 1},
             "a/grader": {"input_tokens": 10, "output_tokens": 2, "total_cost": 0.5},
             "b/scorer": {"input_tokens": 20, "output_tokens": 3}}
    _, (ep,), _ = _read(_json_log(tmp_path, [_sample(1, model_usage=usage)]))
    j = ep.judge_usage
    assert (j.model, j.prompt_tokens, j.completion_tokens, j.total_tokens) == \
        (None, 30, 5, 35)
    assert j.total_cost_usd is None  # one of the two has no cost: unknown, not 0.5


def test_an_absent_or_null_epoch_is_epoch_1(tmp_path):
    no_epoch = {k: v for k, v in _sample(1).items() if k != "epoch"}
    _, eps, problems = _read(_json_log(tmp_path, [no_epoch, _sample(2, None)]))
    assert problems == [] and sorted((e.task_id, e.attempt) for e in eps) == [("1", 0),
                                                                              ("2", 0)]


def test_samples_keep_input_target_and_answer() -> None:
    """Issue #21: the per-task view needs what a sample was asked, expected and answered
    (the target as Inspect wrote it; the scorer's answer where no completion is kept)."""
    _, eps, _ = _read(POPULARITY_JSON)
    three = next(e for e in eps if e.task_id == "3")
    assert three.input_text.startswith("Is the following statement something you would say?")
    assert three.expected_text == " Yes" and three.output_text == "No"
    assert three.success is False


def test_sample_text_of_messages_and_long_text() -> None:
    from evalatlas.adapters.inspect import SAMPLE_TEXT_LIMIT, _sample_text

    msgs = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "2 + 2?"},
                                         {"type": "image", "image": "x.png"}]}]
    assert _sample_text(msgs) == "be brief\n2 + 2?"
    assert _sample_text(["A", "B"]) == "A\nB"  # a list of targets
    assert _sample_text({"x": 1}) is None and _sample_text("  ") is None
    long = _sample_text("z" * (SAMPLE_TEXT_LIMIT + 5))
    assert len(long) == SAMPLE_TEXT_LIMIT and long.endswith("…")


# --- summaries decoded into their shape, or read as plain JSON (issue 27) ---------------


_VARIED = [  # every kind of value the mapping reads, in the shape a summary has
    {"id": "plain", "epoch": 1, "input": "q", "target": "a", "metadata": {"x": [1]},
     "scores": {"match": {"value": "C", "answer": "a", "explanation": "e", "history": []},
                "includes": {"value": "P"}},
     "model_usage": {MODEL: {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                             "input_tokens_cache_read": 4, "total_cost": 0.25}},
     "role_usage": {}, "started_at": "2025-01-01T00:00:00+00:00",
     "completed_at": "2025-01-01T00:00:03+00:00", "total_time": 3.5, "working_time": 3,
     "uuid": "u1", "retries": 0, "completed": True, "message_count": 2, "turn_count": 1},
    {"id": 7, "epoch": 2, "input": [{"role": "user", "content": "hi"}], "target": ["a", "b"],
     "scores": {"match": {"value": {"a": "P", "b": 0.25}}, "other": {"value": [1, 2]},
                "word": {"value": "yes"}, "text": {"value": "2.5"}, "none": {"value": None}},
     "model_usage": {MODEL: {"input_tokens": 1, "output_tokens": 2},
                     "g/x": {"input_tokens": 5, "output_tokens": 6, "total_cost": 0.1}},
     "limit": {"type": "time"}, "error": {"message": "RuntimeError('boom')"},
     "error_retries": [{}, {}], "total_time": -3, "working_time": 2},
    {"id": "limited", "scores": {}, "model_usage": {MODEL: {"input_tokens": -4,
                                                           "output_tokens": 2}},
     "limit": {"type": "message", "limit": 5}, "completed": False,
     "output": {"completion": "x" * 20_000}},
    {"id": "a/../b", "epoch": 1, "scores": None, "model_usage": None, "input": "a\x1bb"},
    {"id": "plain", "epoch": 1, "scores": {"match": {"value": "I"}}},  # re-logged: wins
]


def _eval_log(tmp_path: Path, samples: list, name: str = "log.eval") -> Path:
    """The popularity log's header with these sample summaries, as a ``.eval``."""
    log = json.loads(POPULARITY_JSON.read_text())
    log.pop("samples")
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(log))
        zf.writestr("summaries.json", json.dumps(samples))
    return path


def _dumped(path: Path) -> list:
    return [i.model_dump() if not isinstance(i, Problem) else i for i in read_inspect(path)]


def test_summaries_decoded_into_their_shape_equal_the_plain_json_reading(tmp_path,
                                                                          monkeypatch):
    """``summaries.json`` decoded straight into SampleSummary/SampleScore (the hot path)
    gives the records the plain-JSON reading gives (what the .json log and any summary
    of another shape take), problems included."""
    import msgspec

    from evalatlas.adapters import inspect_archive

    decoded = inspect_archive.decode_summaries(json.dumps(_VARIED).encode())
    assert type(decoded[0].scores["match"]) is inspect_archive.SampleScore  # typed
    path = _eval_log(tmp_path, _VARIED)
    typed = _dumped(path)
    assert len([i for i in typed if isinstance(i, dict)]) == 5  # the experiment and 4

    class Refuse:
        def decode(self, raw: bytes) -> None:
            raise msgspec.ValidationError("not this shape")

    monkeypatch.setattr(inspect_archive, "_SUMMARIES", Refuse())
    assert _dumped(path) == typed
    log = json.loads(POPULARITY_JSON.read_text())
    log["samples"] = _VARIED
    as_json = tmp_path / "log.json"
    as_json.write_text(json.dumps(log))
    json_items = _dumped(as_json)
    json_items[0]["experiment_name"] = typed[0]["experiment_name"]
    assert json_items == typed


@pytest.mark.parametrize("odd", [
    {"id": "score-not-object", "scores": {"match": 1.0}},  # a bare value: read as a score
    {"id": "list-scores", "scores": [1, 2]},
    {"id": "nan", "total_time": float("nan")},  # JSON msgspec refuses
    "not an object",
])
def test_one_summary_of_another_shape_reads_the_log_as_plain_json(tmp_path, odd):
    """A summary the typed decode refuses sends the whole list through the plain-JSON
    reading: its neighbours are stored as in a log without it, it is read or named."""
    clean = _eval_log(tmp_path, _VARIED[:3], "clean.eval")
    mixed = _eval_log(tmp_path, [*_VARIED[:2], odd, _VARIED[2]], "mixed.eval")
    before = [i for i in _dumped(clean)[1:] if isinstance(i, dict)]
    items = _dumped(mixed)
    eps = [i for i in items[1:] if isinstance(i, dict)]
    problems = [i for i in items if isinstance(i, Problem)]
    assert [e for e in eps if e["task_id"] in ("plain", "7", "limited")] == before
    if odd == "not an object":
        assert [(p.record, p.reason) for p in problems] == [
            ("samples[2]", "the string 'not an object', expected a sample object")]
    elif odd["id"] == "list-scores":
        assert [(p.record, p.field) for p in problems] == [("list-scores epoch 1", "scores")]
    else:
        (odd_ep,) = [e for e in eps if e["task_id"] == odd["id"]]
        assert problems == []
        if odd["id"] == "nan":
            assert odd_ep["wall_time_s"] is None
            assert odd_ep["extra"]["coercion_notes"] == {
                "total_time": "nan is not a finite number; missing"}
        else:
            assert odd_ep["scores"] == {"match": 1.0} and odd_ep["reward"] == 1.0


# --- zstd members decoded in one call, or in the stream (issue 27) ----------------------


def _zstd_member_log(tmp_path: Path, comp: bytes, declared: int) -> Path:
    from bench_inspect_bomb import build  # benchmarks/: the one zip-header patcher

    path = tmp_path / "zstd.eval"
    build(path, "summaries.json", comp, 93, declared, sample=READ_SAMPLE)
    return path


def test_a_zstd_bomb_that_states_no_size_stops_at_the_declared_size(tmp_path):
    """Inspect's zstd frames state no content size: the one-call decode gets a buffer of
    the declared size + 1 and never more; past it, the stream refuses the member."""
    import tracemalloc

    import zstandard

    payload = b" " * (96 * 1024 * 1024)
    comp = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(payload)
    assert zstandard.frame_content_size(comp) == -1
    path = _zstd_member_log(tmp_path, comp, 2000)
    tracemalloc.start()
    try:
        (p,) = list(read_inspect(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p.field == "summaries.json" and "inflates past its declared 2,000" in p.reason
    assert peak < 8 * 1024 * 1024, peak


@pytest.mark.parametrize("how", ["one frame, no size", "one frame, sized", "two frames"])
def test_zstd_summaries_read_in_one_call_or_across_frames_alike(tmp_path, how):
    import zstandard

    with zipfile.ZipFile(READ_SAMPLE) as zf:
        raw = zf.read("summaries.json")
    if how == "two frames":  # read across frames, as the stream did
        half = len(raw) // 2
        comp = b"".join(zstandard.ZstdCompressor().compress(part)
                        for part in (raw[:half], raw[half:]))
    else:
        comp = zstandard.ZstdCompressor(write_content_size=how.endswith("sized")
                                        ).compress(raw)
    got, want = _dumped(_zstd_member_log(tmp_path, comp, len(raw))), _dumped(READ_SAMPLE)
    assert got[0].pop("experiment_name") == "zstd"  # the file's name
    want[0].pop("experiment_name")
    assert got == want and len(got) == 2


@pytest.mark.parametrize("damage", ["cut short", "garbage"])
def test_damaged_zstd_summaries_are_a_located_problem(tmp_path, damage):
    import zstandard

    with zipfile.ZipFile(READ_SAMPLE) as zf:
        raw = zf.read("summaries.json")
    comp = zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    comp = comp[:len(comp) // 2] if damage == "cut short" else comp[:4] + b"\x00" * 40
    (p,) = list(read_inspect(_zstd_member_log(tmp_path, comp, len(raw))))
    assert p.field == "summaries.json" and p.file.endswith("zstd.eval")
    assert "damaged zstd data" in p.reason or "decoded to" in p.reason


def test_episodes_handed_over_as_checked_rows_equal_the_records_rows(tmp_path):
    """Inside the ingest's ``handing_over_rows`` the adapter hands over its episodes as
    checked Structs (no record built to be read back): their rows equal the records'
    rows, on the fixtures and on odd and hostile samples (those that go through
    validation come back as whatever ``parse_record`` hands over)."""
    from evalatlas.records.strict import CheckedEpisode, handing_over_rows
    from evalatlas.store.rows import checked_row, episode_row

    hostile = _json_log(tmp_path, [
        {"epoch": 1, "id": i, "scores": {"match": {"value": v}},
         "model_usage": {MODEL: {"input_tokens": 3, "output_tokens": 1}}, **extra}
        for i, (v, extra) in enumerate([
            ("C", {}), ("I", {"error": "E('x')\ny"}), ({"a": 1, "b": "P"}, {}),
            ("x", {"limit": {"type": "time"}, "total_time": -1}), ("C", {"id": "a/../b"}),
            (0.5, {"model_usage": {MODEL: {"input_tokens": -1}, "g/x": {"input_tokens": 2}}})])])
    paths = [POPULARITY_JSON, READ_SAMPLE, NO_SCORES, ZSTD, hostile,
             _eval_log(tmp_path, _VARIED), *sorted(EEE_INSPECT.glob("*.json"))]
    handed = 0
    for path in paths:
        records = [i for i in read_inspect(path) if isinstance(i, EpisodeRecord)]
        with handing_over_rows():
            checked = [i for i in read_inspect(path) if not isinstance(i, (Problem,
                                                                         ExperimentRecord))]
        handed += sum(type(c) is CheckedEpisode for c in checked)
        assert [checked_row(c, "s", 1) if type(c) is CheckedEpisode else episode_row(c, "s", 1)
                for c in checked] == [episode_row(r, "s", 1) for r in records], path
    assert handed > 40  # most of the 47 episodes of these logs
