"""evalatlas: trustworthy, comparable numbers from AI-agent evaluation runs.

The public API (``__all__`` is the single list of what is public)::

    import evalatlas as ea
    store = ea.open("runs.duckdb")          # $EVALATLAS_DB, else ./evalatlas.duckdb; ":memory:"
    store.ingest("runs/")                   # an IngestReport (counts, quarantine)
    eps = store.episodes(benchmark="swe-bench-verified")   # a pandas DataFrame
    s = ea.summary(eps, by="agent")         # typed result: s.rows, s.to_pandas(), s.to_dict()
    c = ea.compare(eps, "agent-a", "agent-b")

See docs/api.md. Names are loaded on first use (module ``__getattr__``), so
``import evalatlas`` (and ``evalatlas --version``) does not import duckdb, pandas, numpy
or pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalatlas._version import __version__
from evalatlas.lazy_names import lazy_attributes

# name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # the store and the analyses (evalatlas.api glues store/ and analysis/)
    "open": "evalatlas.api",
    "set_default_wait": "evalatlas.api",
    "set_default_lake": "evalatlas.api",
    "store_error": "evalatlas.api",
    "Store": "evalatlas.api",
    "summary": "evalatlas.api",
    "agents": "evalatlas.api",
    "InventoryResult": "evalatlas.analysis.inventory",
    "compare": "evalatlas.api",
    "gate": "evalatlas.api",
    "gate_plan": "evalatlas.api",
    "tiers": "evalatlas.api",
    "speedups": "evalatlas.api",
    "speedup_detail": "evalatlas.api",
    "framework_data": "evalatlas.api",
    "compare_frameworks": "evalatlas.api",
    "read_framework_results": "evalatlas.api",
    "FrameworkComparison": "evalatlas.report.frameworks",
    # the HTML report (evalatlas report)
    "build_report": "evalatlas.api",
    "Report": "evalatlas.report.document",
    "validate_eee": "evalatlas.api",
    "IngestReport": "evalatlas.store.ingest",
    # a client of `evalatlas serve` (needs evalatlas[serve])
    "Client": "evalatlas.serve.client",
    "ServerError": "evalatlas.serve.client",
    # what needs no store, each in its domain (no DuckDB, numpy or pandas loaded)
    "formats": "evalatlas.adapters.formats",
    "FormatsResult": "evalatlas.adapters.formats",
    "record_schemas": "evalatlas.records.schemas",
    "price": "evalatlas.pricing.quote",
    "price_presets": "evalatlas.pricing.quote",
    "PriceResult": "evalatlas.pricing.quote",
    "code_quality": "evalatlas.codequality.report",
    "CODE_QUALITY_FRAMEWORKS": "evalatlas.codequality.report",
    "CODE_QUALITY_MAX_LINE_CHARS": "evalatlas.codequality.report",
    "CodeQualityReport": "evalatlas.codequality.report",
    "ReadLimits": "evalatlas.records.limits",
    # running agent frameworks over a scenario (evalatlas run)
    "run": "evalatlas.api",
    "load_scenario": "evalatlas.api",
    "load_framework": "evalatlas.api",
    "RunSummary": "evalatlas.runner.engine",
    # typed results
    "TableResult": "evalatlas.analysis.results",
    "QuarantineResult": "evalatlas.analysis.results",
    "LakeInfoResult": "evalatlas.analysis.lake_results",
    "LakeCompactResult": "evalatlas.analysis.lake_results",
    "SummaryResult": "evalatlas.analysis.summary",
    "CompareResult": "evalatlas.analysis.compare",
    "GateResult": "evalatlas.analysis.gate",
    "GatePlanResult": "evalatlas.analysis.gate",
    "TierReport": "evalatlas.analysis.tiers",
    "SpeedupResult": "evalatlas.analysis.speedups",
    "SpeedupDetail": "evalatlas.analysis.speedups",
    "FrameworkData": "evalatlas.analysis.frameworks",
    # judges
    "JudgeClient": "evalatlas.judge.client",
    "JudgeConfig": "evalatlas.judge.client",
    "judge_episodes": "evalatlas.api",
    "investigate": "evalatlas.api",
    "failures": "evalatlas.api",
    "InvestigateResult": "evalatlas.judge.investigator",
    "FailuresResult": "evalatlas.analysis.failures",
    "judge_answer": "evalatlas.judge.answer",
    "judge_rubric": "evalatlas.judge.rubric",
    "load_rubric": "evalatlas.judge.rubric",
    # the record contract
    "AgentInfo": "evalatlas.records",
    "BenchmarkSubset": "evalatlas.records",
    "EpisodeRecord": "evalatlas.records",
    "EvalLog": "evalatlas.records",
    "ExperimentRecord": "evalatlas.records",
    "Measurement": "evalatlas.records",
    "UsageSummary": "evalatlas.records",
    # errors
    "EvalAtlasError": "evalatlas.errors",
    "InputError": "evalatlas.errors",
    "Problem": "evalatlas.errors",
    "StoreError": "evalatlas.errors",
    "OutputError": "evalatlas.errors",
    "ArgumentError": "evalatlas.errors",
}

# Subpackages reachable as attributes (``ea.atlas.fit(...)``, ``ea.report``): their
# owners add their public names to __all__ below.
_SUBMODULES = ("atlas", "report", "safe_write", "interrupts", "serve")

__all__ = [
    "CODE_QUALITY_FRAMEWORKS",
    "CODE_QUALITY_MAX_LINE_CHARS",
    "AgentInfo",
    "BenchmarkSubset",
    "Client",
    "CodeQualityReport",
    "CompareResult",
    "EpisodeRecord",
    "EvalAtlasError",
    "EvalLog",
    "ExperimentRecord",
    "FailuresResult",
    "FormatsResult",
    "FrameworkComparison",
    "FrameworkData",
    "GatePlanResult",
    "GateResult",
    "IngestReport",
    "InputError",
    "InventoryResult",
    "InvestigateResult",
    "JudgeClient",
    "JudgeConfig",
    "LakeCompactResult",
    "LakeInfoResult",
    "Measurement",
    "OutputError",
    "PriceResult",
    "Problem",
    "QuarantineResult",
    "ReadLimits",
    "Report",
    "RunSummary",
    "ServerError",
    "SpeedupDetail",
    "SpeedupResult",
    "Store",
    "StoreError",
    "SummaryResult",
    "TableResult",
    "TierReport",
    "UsageSummary",
    "__version__",
    "agents",
    "atlas",
    "build_report",
    "code_quality",
    "compare",
    "compare_frameworks",
    "failures",
    "formats",
    "framework_data",
    "gate",
    "gate_plan",
    "interrupts",
    "investigate",
    "judge_answer",
    "judge_episodes",
    "judge_rubric",
    "load_framework",
    "load_rubric",
    "load_scenario",
    "open",
    "price",
    "price_presets",
    "read_framework_results",
    "record_schemas",
    "run",
    "safe_write",
    "serve",
    "set_default_lake",
    "set_default_wait",
    "speedup_detail",
    "speedups",
    "store_error",
    "summary",
    "tiers",
    "validate_eee",
]


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY, _SUBMODULES)


if TYPE_CHECKING:  # for type checkers and IDEs; never executed
    from evalatlas.adapters.formats import FormatsResult, formats
    from evalatlas.analysis.compare import CompareResult
    from evalatlas.analysis.failures import FailuresResult
    from evalatlas.analysis.frameworks import FrameworkData
    from evalatlas.analysis.gate import GatePlanResult, GateResult
    from evalatlas.analysis.inventory import InventoryResult
    from evalatlas.analysis.lake_results import LakeCompactResult, LakeInfoResult
    from evalatlas.analysis.results import QuarantineResult, TableResult
    from evalatlas.analysis.speedups import SpeedupDetail, SpeedupResult
    from evalatlas.analysis.summary import SummaryResult
    from evalatlas.analysis.tiers import TierReport
    from evalatlas.api import (
        Store,
        agents,
        build_report,
        compare,
        compare_frameworks,
        failures,
        framework_data,
        gate,
        gate_plan,
        investigate,
        judge_episodes,
        load_framework,
        load_scenario,
        open,
        read_framework_results,
        run,
        set_default_lake,
        set_default_wait,
        speedup_detail,
        speedups,
        store_error,
        summary,
        tiers,
        validate_eee,
    )
    from evalatlas.codequality.report import (
        CODE_QUALITY_FRAMEWORKS,
        CODE_QUALITY_MAX_LINE_CHARS,
        CodeQualityReport,
        code_quality,
    )
    from evalatlas.errors import EvalAtlasError, InputError, OutputError, Problem, StoreError
    from evalatlas.judge.answer import judge_answer
    from evalatlas.judge.client import JudgeClient, JudgeConfig
    from evalatlas.judge.investigator import InvestigateResult
    from evalatlas.judge.rubric import judge_rubric, load_rubric
    from evalatlas.pricing.quote import PriceResult, price, price_presets
    from evalatlas.records import (
        AgentInfo,
        BenchmarkSubset,
        EpisodeRecord,
        EvalLog,
        ExperimentRecord,
        Measurement,
        UsageSummary,
    )
    from evalatlas.records.limits import ReadLimits
    from evalatlas.records.schemas import record_schemas
    from evalatlas.report.document import Report
    from evalatlas.report.frameworks import FrameworkComparison
    from evalatlas.runner.engine import RunSummary
    from evalatlas.store.ingest import IngestReport
