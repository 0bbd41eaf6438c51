"""Every public result implements one protocol (issue 22 point 3): ``schema``, ``rows``,
``meta``, ``notes``, ``to_dict``, ``to_pandas``, a one-line repr under 300 characters
and an escaped ``_repr_html_``. The result types are found by walking ``evalatlas.__all__``
(and ``evalatlas.atlas.__all__``): a new public class must be given an instance below or
be listed as not a result, so none is forgotten."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import evalatlas as ea
from evalatlas.results import HTML_ROWS, Result, columns_of, html_repr, short_repr

EVIL = "<script>alert('x')</script>&"
"""A name no page may show as markup (names, notes and cells come from the data)."""

NOT_RESULTS = {
    # the record contract (pydantic models: their repr is the record)
    "AgentInfo", "BenchmarkSubset", "EpisodeRecord", "EvalLog", "ExperimentRecord",
    "Measurement", "UsageSummary",
    # errors and settings
    "EvalAtlasError", "InputError", "OutputError", "StoreError", "ArgumentError", "Problem",
    "AtlasError", "DriftError", "ReadLimits", "JudgeConfig", "JudgeClient",
    # the service's HTTP client and its error (evalatlas.serve.client): they fetch results,
    # whose envelopes are plain dicts, and are not results themselves
    "Client", "ServerError",
    # atlas inputs and model settings (arrays in, not results out)
    "Cells", "ModelSpec", "Priors", "ResponseMatrix",
}
"""Public classes that are not results (inputs, settings, errors, records)."""

DATA_HOLDERS = {"Store", "FrameworkData"}
"""Public classes that are not results but are shown in notebooks: a short repr and an
``_repr_html_`` all the same."""


def _public_classes() -> dict[str, type]:
    out: dict[str, type] = {}
    for module in (ea, ea.atlas):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value):
                out[name] = value
    return out


def _big_rows(n: int = 5000) -> list[dict[str, Any]]:
    return [{"agent": f"{EVIL}{i}", "task_id": f"task-{i}", "success_rate": i / n,
             "detail": "x" * 500, "ci": [0.1, 0.9]} for i in range(n)]


def _table(cls: type) -> Any:
    return cls(rows=_big_rows(), meta={"confidence": 0.95, "payload": "y" * 10_000},
               notes=[f"{EVIL} note {i}" for i in range(40)])


@pytest.fixture(scope="module")
def verified(fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """SWE-bench Verified (20 agents x 500 tasks) in a store, and its ingest report."""
    path = tmp_path_factory.mktemp("results") / "verified.duckdb"
    with ea.open(path) as store:
        report = store.ingest(fixtures / "swebench-verified")
        yield store, report


@pytest.fixture(scope="module")
def instances(verified: Any) -> dict[str, Any]:
    """Each instance of :func:`_instances`, made once for the module's tests."""
    return {name: make() for name, make in _instances(*verified).items()}


def _instances(store: ea.Store, report: ea.IngestReport) -> dict[str, Callable[[], Any]]:
    """One instance per public class that is a result or a data holder: real results
    of a real store where an analysis makes one, big synthetic ones otherwise (a repr
    must stay short whatever the size)."""
    from evalatlas.analysis.results import TableResult
    from evalatlas.runner.engine import RunSummary

    agents = ea.agents(store).rows
    a, b = agents[0]["name"], agents[1]["name"]
    fit = ea.atlas.fit(store)
    made: dict[str, Callable[[], Any]] = {
        "Store": lambda: store,
        "IngestReport": lambda: report,
        "SummaryResult": lambda: ea.summary(store, by=["agent", "task"]),
        "CompareResult": lambda: ea.compare(store, a, b),
        "GateResult": lambda: ea.gate(store, a, b),
        "GatePlanResult": lambda: ea.gate_plan(store, a),
        "InventoryResult": lambda: ea.agents(store, "experiments"),
        "QuarantineResult": lambda: store.quarantine(),
        "Report": lambda: ea.build_report(store),
        "AtlasFit": lambda: fit,
        "AbilitiesResult": fit.abilities,
        "ItemsResult": fit.item_table,
        "AgentEstimate": lambda: ea.atlas.estimate(a, store),
        "FormatsResult": ea.formats,
        "PriceResult": lambda: ea.price("gpt-4o", input_tokens=1000),
        "RunSummary": lambda: RunSummary(run_dir=Path("runs") / EVIL, experiment_id="e",
                                         experiment_name=EVIL * 100, planned=3,
                                         notes=[EVIL] * 30),
        "FrameworkComparison": lambda: ea.FrameworkComparison(
            {"schema": "evalatlas.compare-frameworks/1", "scenario": EVIL,
             "frameworks": _big_rows(50), "questions": _big_rows(), "notes": [EVIL]}),
        "FrameworkData": lambda: ea.FrameworkData(framework=EVIL * 50, scenario="s" * 500,
                                                  mode="baseline", display_name="d"),
    }
    for name, cls in _public_classes().items():
        if name not in made and inspect.isclass(cls) and issubclass(cls, TableResult):
            made[name] = lambda cls=cls: _table(cls)
    return made


def test_every_public_class_is_a_result_a_data_holder_or_listed(
        instances: dict[str, Any]) -> None:
    made = instances
    unknown = sorted(set(_public_classes()) - set(made) - NOT_RESULTS)
    assert not unknown, f"public classes with no instance here: {unknown}"


def test_every_result_implements_the_protocol(instances: dict[str, Any]) -> None:
    for name, result in instances.items():
        if name in DATA_HOLDERS:
            continue
        assert isinstance(result, Result), name
        assert re.fullmatch(r"evalatlas\.[a-z_.-]+/\d+", result.schema), (name, result.schema)
        assert isinstance(result.meta, dict) and isinstance(list(result.notes), list), name
        env = result.to_dict()
        assert env.get("schema", result.schema) == result.schema, name
        frame = result.to_pandas()
        assert len(frame) == len(result.rows), name


def test_every_repr_is_one_short_line_and_every_html_is_escaped(
        instances: dict[str, Any]) -> None:
    for name, obj in instances.items():
        text = repr(obj)
        assert len(text) < 300 and "\n" not in text, (name, len(text), text[:300])
        assert text.startswith(f"<{name} ") and text.endswith(">"), (name, text)
        page = obj._repr_html_()
        assert "<script>" not in page, name
        assert type(obj).__name__ == name, name  # the class found in __all__, not a twin
        assert len(page) < 20_000, (name, len(page))  # the first rows, not all of them


def test_the_repr_counts_rows_columns_and_notes(verified: Any) -> None:
    store, _ = verified
    s = ea.summary(store)
    cols = len(columns_of(s.rows))
    assert len(s.rows) == 20  # one per SWE-bench Verified agent
    assert repr(s) == (f"<SummaryResult evalatlas.summary/1: 20 rows x {cols} columns, "
                       f"{len(s.notes)} note{'' if len(s.notes) == 1 else 's'}>")
    assert short_repr(s) == repr(s)
    page = html_repr(s)
    assert page.count("<tr>") == HTML_ROWS + 1  # the head and the first rows
    assert "10 more rows" in page


def test_store_repr_says_where_and_whether_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = ea.open(path)
    assert repr(store) == f"<Store {str(path)!r} (open)>"
    store.close()
    assert repr(store) == f"<Store {str(path)!r} (closed)>"
    with ea.open(path, read_only=True) as ro:
        assert repr(ro) == f"<Store {str(path)!r} (read-only)>"


def test_ingest_report_to_dict_and_the_deprecated_as_dict(verified: Any) -> None:
    _, report = verified
    d = report.to_dict()
    assert (d["experiments"], d["episodes"], d["rejected"]) == (20, 10_000, 0)
    assert repr(report) == ("<IngestReport evalatlas.ingest/1: 20 experiments, 10000 "
                            "episodes, 0 measurements, 0 rejected>")
    with pytest.warns(DeprecationWarning, match="to_dict"):
        assert report.as_dict() == d
