"""hypothesis: save/load and to_jsonl round trips are identities."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalatlas.records import (
    AgentInfo,
    BenchmarkSubset,
    EpisodeRecord,
    EvalLog,
    ExperimentRecord,
    UsageSummary,
)

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
ident = st.from_regex(r"[A-Za-z0-9_\-]{1,20}", fullmatch=True)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
count = st.none() | st.integers(min_value=0, max_value=10**12)

usage = st.builds(UsageSummary, prompt_tokens=count, completion_tokens=count,
                  cached_tokens=count, total_cost_usd=st.none() | finite.map(abs),
                  n_llm_calls=count, model=st.none() | text)


@st.composite
def episodes(draw: st.DrawFn, eid: str, tid: str) -> EpisodeRecord:
    return EpisodeRecord(
        experiment_id=eid, task_id=draw(text), trajectory_id=tid, reward=draw(finite),
        seed=draw(st.none() | st.integers(-2**31, 2**31)),
        tool_names=draw(st.lists(text, max_size=3)),
        error_type=draw(st.none() | text), wall_time_s=draw(st.none() | finite.map(abs)),
        usage=draw(usage), attempt=draw(st.none() | st.integers(0, 100)),
        status=draw(st.sampled_from(["completed", "error", "timeout"])),
        scores=draw(st.dictionaries(text, st.none() | finite, max_size=3)),
        output_text=draw(st.none() | text),
        retrieved_sources=draw(st.none() | st.lists(text, max_size=3)),
        extra=draw(st.dictionaries(ident, st.none() | st.integers() | text, max_size=3)),
    )


@st.composite
def evallogs(draw: st.DrawFn) -> EvalLog:
    eid = draw(ident)
    exp = ExperimentRecord(
        experiment_id=eid, experiment_name=draw(text), timestamp=draw(st.none() | finite),
        agent=AgentInfo(config=draw(st.dictionaries(ident, st.integers() | text, max_size=4)),
                        llm_model=draw(st.none() | text)),
        benchmark_name=draw(text),
        benchmark_subset=BenchmarkSubset(name=draw(text), n_tasks=draw(st.integers(0, 10**6))),
        labels=draw(st.dictionaries(ident, text, max_size=3)))
    tids = draw(st.lists(ident, unique=True, max_size=5))
    return EvalLog(experiment=exp, episodes=[draw(episodes(eid, t)) for t in tids])


@settings(max_examples=60, deadline=None)
@given(evallogs())
def test_save_load_round_trip(log: EvalLog) -> None:
    with tempfile.TemporaryDirectory() as d:
        log.save(Path(d))
        loaded = EvalLog.load(Path(d), strict=True)
    loaded.episodes.sort(key=lambda e: e.trajectory_id)
    log.episodes.sort(key=lambda e: e.trajectory_id)
    assert loaded == log


@settings(max_examples=60, deadline=None)
@given(evallogs())
def test_jsonl_round_trip(log: EvalLog) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.jsonl"
        log.to_jsonl(path)
        back = [EpisodeRecord.model_validate(json.loads(line))
                for line in path.read_text(encoding="utf-8").splitlines()]
    assert back == log.episodes
