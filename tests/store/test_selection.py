"""Selectors resolved through the store (issue 21 point 5, issue 28 point 2): one matcher
for summary, exports and ``Store.episodes``, a string or a list everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalatlas as ea
from evalatlas.errors import ArgumentError
from evalatlas.store.selection import select_agents, select_benchmarks, select_experiments

AIRLINE = "6b72ccee3bac47d7"  # tau-bench gpt-4o-airline.reduced, 200 episodes


@pytest.fixture
def store_path(fixtures: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    with ea.open(path) as store:
        store.ingest(fixtures / "inspect", fixtures / "tau-bench")
    return path


def test_summary_takes_a_typed_experiment_name(store_path: Path) -> None:
    for typed in ("gpt-4o-airline.reduced", "GPT-4O AIRLINE", "gpt_4o_airline",
                  ["airline.reduced"]):
        (row,) = ea.summary(store_path, "experiment", experiment=typed).rows
        assert row["episodes"] == 200 and row["experiment"] == "gpt-4o-airline.reduced"


def test_ambiguous_and_unknown_experiments(store_path: Path) -> None:
    with pytest.raises(ArgumentError) as err:
        ea.summary(store_path, experiment="popularity")
    assert "'popularity' is ambiguous (substring of experiment 2025-02-11" in str(err.value)
    with pytest.raises(ArgumentError, match=r"'log_read_smaple' matches no experiment; "
                       r"closest: experiment log_read_sample"):
        ea.summary(store_path, experiment=["log_read_smaple"])


def test_agents_and_benchmarks(store_path: Path) -> None:
    with ea.open(store_path, read_only=True) as store:
        # one name, two agent ids: both (an exact name selects every agent carrying it)
        assert len(select_agents(store, "OpenAI/GPT-4o-mini")) == 2
        assert len(store.episodes(agent="openai/gpt-4o-mini")) == 13
        assert len(store.episodes(agent="GPT-4o")) == 200
        assert select_benchmarks(store, "Tau Bench") == ["tau-bench-airline"]
        assert len(store.episodes(benchmark="tau bench", agent="gpt-4o")) == 200
        assert select_experiments(store, "7c9b") == ["7c9bd6d00c6ff634"]  # id prefix
        assert select_experiments(store, None) is None


def test_exports_take_one_selector_as_a_string(store_path: Path, tmp_path: Path) -> None:
    """Issue 28.2: ``export_jsonl("x.jsonl", "exp-name")`` was 0 records, no error."""
    with ea.open(store_path, read_only=True) as store:
        out = tmp_path / "x.jsonl"
        assert store.export_jsonl(out, "gpt-4o-airline.reduced") == 200
        episodes = [json.loads(line) for line in out.read_text().splitlines()]
        assert {e["experiment_id"] for e in episodes if "trajectory_id" in e} == {AIRLINE}
        eee = store.export_eee(tmp_path / "eee", "gpt-4o-airline.reduced")
        assert len(eee.written) == 1 and eee.written[0].rows == 200
        with pytest.raises(ArgumentError, match="matches no experiment"):
            store.export_jsonl(tmp_path / "none.jsonl", "no-such-run")
        assert not (tmp_path / "none.jsonl").exists()
        with pytest.raises(ArgumentError, match="experiment takes a name or a list"):
            store.export_jsonl(tmp_path / "none.jsonl", 123)  # type: ignore[arg-type]


def test_candidates_are_read_only_for_a_given_selector(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No selector, no candidate list read (each lists every experiment: 15 s at 100M
    episodes); a given one still resolves."""
    from evalatlas.store import selection

    read: list[str] = []
    for name in ("experiment_candidates", "agent_candidates", "benchmark_candidates"):
        real = getattr(selection, name)
        monkeypatch.setattr(selection, name,
                            lambda store, _n=name, _r=real: read.append(_n) or _r(store))
    with ea.open(store_path, read_only=True) as store:
        assert selection.experiments_of(store) is None
        assert read == []
        ids = selection.experiments_of(store, experiment="gpt-4o-airline.reduced")
        assert ids == [AIRLINE] and read == ["experiment_candidates"]
