"""The public API's boundary (issue 22 point 4): selectors take a name or a list of names
everywhere, the data argument is a store, a path or a frame and never a default store,
options are checked up front with an ArgumentError in API words, and a store stays
usable (or says it is closed) whatever happened to it. One test per case of the issue."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import evalatlas as ea
from evalatlas.errors import ArgumentError, StoreError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ea.Store]:
    """The demo data (three agents on toybench) in a store, open read-only (a path to it
    may be opened again in this process)."""
    path = tmp_path_factory.mktemp("boundary") / "demo.duckdb"
    with ea.open(path) as store:
        store.ingest(EXAMPLES / "evallogs", EXAMPLES / "jsonl")
    with ea.open(path, read_only=True) as store:
        yield store


def _names(store: ea.Store, what: str) -> list[str]:
    return [r["name"] for r in ea.agents(store, what).rows]


# --- selectors: one name is one name, not its characters -----------------------------

@pytest.mark.parametrize("call", [
    lambda s, e: ea.summary(s, experiment=e).to_dict(),
    lambda s, e: ea.agents(s, experiment=e).to_dict(),
    lambda s, e: ea.tiers(s, experiment=e).to_dict(),
    lambda s, e: ea.build_report(s, experiment=e).data["sections"],
    lambda s, e: ea.speedup_detail(s, experiment=e).to_dict(),
], ids=["summary", "agents", "tiers", "build_report", "speedup_detail"])
def test_an_experiment_name_is_one_selector(demo: ea.Store,
                                            call: Callable[[ea.Store, Any], Any]) -> None:
    name = _names(demo, "experiments")[0]
    assert call(demo, name) == call(demo, [name]) == call(demo, (name,))
    if call(demo, name) != call(demo, None):  # the name selects less than everything
        assert call(demo, name) != call(demo, _names(demo, "experiments"))


def test_agent_and_benchmark_names_are_one_selector(demo: ea.Store) -> None:
    agent = _names(demo, "agents")[0]
    bench = _names(demo, "benchmarks")[0]
    one = ea.summary(demo, agent=agent, benchmark=bench)
    assert [r["agent"] for r in one.rows] == [agent]
    assert one.to_dict() == ea.summary(demo, agent=[agent], benchmark=[bench]).to_dict()
    assert ea.failures(demo, agent=agent).to_dict() == \
        ea.failures(demo, agent=[agent]).to_dict()


def test_a_task_name_is_one_selector(demo: ea.Store) -> None:
    # toybench has no measurements: both select nothing, but a string must not be read
    # as a set of characters (it was: 'task-1' kept a task called 't')
    assert ea.speedup_detail(demo, task="toy-001").rows == \
        ea.speedup_detail(demo, task=["toy-001"]).rows == []
    with pytest.raises(ArgumentError, match="task takes a name or a list of names"):
        ea.speedup_detail(demo, task=1)  # type: ignore[arg-type]


def test_an_unknown_experiment_name_is_an_argument_error(demo: ea.Store) -> None:
    with pytest.raises(ArgumentError, match="experiment: 'no-such-run' matches no "
                                            "experiment"):
        ea.summary(demo, experiment="no-such-run")


# --- the data argument -----------------------------------------------------------------

class _PathLike:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return str(self.path)


def test_data_is_a_store_a_path_a_pathlike_or_a_frame(demo: ea.Store) -> None:
    want = ea.summary(demo).to_dict()["rows"]
    assert ea.summary(str(demo.path)).to_dict()["rows"] == want
    assert ea.summary(_PathLike(demo.path)).to_dict()["rows"] == want  # type: ignore[arg-type]
    assert [r["agent"] for r in ea.summary(demo.episodes()).rows] == \
        [r["agent"] for r in want]
    for bad in (None, 42, "", b"x.duckdb"):
        with pytest.raises(ArgumentError, match="data must be a Store, a store file's path "
                                                "or a pandas DataFrame"):
            ea.summary(bad)  # type: ignore[arg-type]


def test_the_atlas_opens_no_default_store(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALATLAS_DB", raising=False)
    for call in (lambda: ea.atlas.fit(None), lambda: ea.atlas.drift(None),
                 lambda: ea.atlas.stored_fit(None), lambda: ea.atlas.matrix(None),
                 lambda: ea.atlas.estimate("a", None)):
        with pytest.raises(ArgumentError, match="source: no store given"):
            call()
    with pytest.raises(TypeError):
        ea.atlas.fit()  # type: ignore[call-arg]
    assert not (tmp_path / "evalatlas.duckdb").exists()


def test_a_store_path_that_does_not_exist_raises(tmp_path: Path) -> None:
    missing = tmp_path / "nope.duckdb"
    for call in (lambda: ea.summary(missing), lambda: ea.atlas.fit(missing)):
        with pytest.raises(StoreError, match=r"nope\.duckdb does not exist"):
            call()
    assert not missing.exists()


# --- options: checked up front, ArgumentError in API words ---------------------------

@pytest.mark.parametrize(("call", "message"), [
    (lambda s: ea.summary(s, by="nonsense"), r"by: unknown grouping 'nonsense'; use one of "
                                             r"agent, experiment"),
    (lambda s: ea.summary(s, by=["agent", "_agent_in_benchmark"]), "by: unknown grouping"),
    (lambda s: ea.summary(s, outcome="x"), "outcome: unknown outcome 'x'"),
    (lambda s: ea.summary(s, missing="x"), "missing: unknown missing policy 'x'"),
    (lambda s: ea.summary(s, confidence=95), r"confidence must be a fraction in \(0, 1\), "
                                             r"e.g. 0.95; got 95"),
    (lambda s: ea.speedups(s, by="model"), "by must be one of agent, task; got 'model'"),
    (lambda s: ea.build_report(s, by="nonsense"), "by: unknown grouping 'nonsense'"),
    (lambda s: ea.build_report(s, by="agent,task"), "by takes one grouping key"),
    (lambda s: ea.build_report(s, confidence=95), "confidence must be a fraction"),
    (lambda s: s.ingest(EXAMPLES / "jsonl", fmt="no-such-format"),
     "fmt: unknown input format 'no-such-format'; known formats: "),
    (lambda s: ea.atlas.fit(s, model="3pl"), r"model: unknown model '3pl'; use 1pl, 2pl or "
                                             r"mf:R"),
    (lambda s: ea.compare(s, "tiny-mini", "react-gpt-4o", pair_by="nonsense"),
     "pair_by must be one of task, attempt; got 'nonsense'"),
    (lambda s: ea.compare(s, "tiny-mini"), "compare needs at least two"),
    (lambda s: ea.failures(s, by="nonsense"), "by: unknown grouping 'nonsense'"),
    (lambda s: s.quarantine(limit=-1), "limit must be a whole number >= 0"),
    (lambda s: s.export_eee("out", relationship="friend"), "relationship must be one of"),
], ids=["summary-by", "summary-internal-by", "summary-outcome", "summary-missing",
        "summary-confidence", "speedups-by", "report-by", "report-two-keys",
        "report-confidence", "ingest-fmt", "atlas-model", "compare-pair-by",
        "compare-one-side", "failures-by", "quarantine-limit", "eee-relationship"])
def test_a_bad_option_is_an_argument_error_in_api_words(
        demo: ea.Store, call: Callable[[ea.Store], Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message) as info:
        call(demo)
    assert "--" not in str(info.value)  # API words, not CLI flags
    assert isinstance(info.value, ValueError)


# --- the store stays usable, or says it is closed --------------------------------------

def test_a_closed_store_says_it_is_closed(tmp_path: Path) -> None:
    store = ea.open(tmp_path / "s.duckdb")
    store.ingest(EXAMPLES / "jsonl")
    store.close()
    store.close()  # twice is harmless
    for call in (lambda: ea.summary(store), store.episodes, store.is_empty,
                 lambda: store.ingest(EXAMPLES / "jsonl")):
        with pytest.raises(StoreError, match=r"store .*s\.duckdb is closed"):
            call()


def test_a_failed_ingest_leaves_the_store_usable(tmp_path: Path) -> None:
    not_inspect = tmp_path / "results.json"
    not_inspect.write_text('{"resolved": ["a"], "eval": null}', encoding="utf-8")
    broken_eval = tmp_path / "run.eval"
    broken_eval.write_bytes(b"PK\x03\x04 not really a zip")
    with ea.open(tmp_path / "s.duckdb") as store:
        before = store.ingest(EXAMPLES / "jsonl").episodes
        for path in (not_inspect, broken_eval):
            report = store.ingest(path, fmt="inspect")
            assert report.rejected == 1 and report.episodes == 0
            assert len(store.episodes()) == before  # later queries still run
            assert len(ea.summary(store).rows) == 1
        assert store.ingest(EXAMPLES / "evallogs").episodes > 0  # and later ingests
        assert store.quarantine().total == 2


def test_store_path_argument_errors_name_the_path(tmp_path: Path) -> None:
    assert os.fspath(_PathLike(tmp_path)) == str(tmp_path)
    with pytest.raises(ArgumentError, match="fmt must be an input format's name"):
        ea.open(":memory:").ingest(tmp_path, fmt=3)  # type: ignore[arg-type]


def test_a_missing_ingest_path_raises_and_stores_nothing(tmp_path: Path) -> None:
    from evalatlas.errors import InputError

    with ea.open(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match=r"nope\.jsonl: no such file or folder "
                                             r"\(nothing was ingested\)"):
            store.ingest(EXAMPLES / "jsonl", tmp_path / "nope.jsonl")
        assert store.is_empty() and store.quarantine().total == 0
