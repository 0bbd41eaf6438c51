"""Typed results of the atlas: rows for JSON/CLI, DataFrames for Python.

``AtlasFit.to_dict()`` is exactly ``evalatlas atlas fit --format json``:
``{"schema", "fit_id", "model", "cell", ..., "agents": [...], "items": [...],
"diagnostics": {...}, "coverage": [...], "drifted_tasks": [...]}`` (``drift`` is the
drift mode setting; ``drifted_tasks`` the rows of ``atlas drift``).

Agent rows: ``agent``, ``agent_id``, ``ability``, ``ability_se``, ``ability_ci_low``,
``ability_ci_high``, ``tasks_observed``, ``flags`` (+ ``successes``, ``trials``, and for
MF ``ability_dims``). Item rows: ``benchmark``, ``task_id``, ``task_version_hash``,
``difficulty``, ``discrimination`` (null for 1PL), ``difficulty_se``,
``discrimination_se``, their ``_ci_low``/``_ci_high``, ``agents_observed``,
``success_rate_observed``, ``flags``. 95% intervals are Laplace (normal) intervals;
the 2PL discrimination interval is ``exp(log a +- 1.96 se)`` so it stays positive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from evalatlas.analysis.results import TableResult
from evalatlas.errors import ArgumentError
from evalatlas.results import ResultViews
from evalatlas.text import fmt_value, json_safe

if TYPE_CHECKING:
    import pandas as pd

    from evalatlas.atlas.irt import IRTFit
    from evalatlas.atlas.matrix import ResponseMatrix

FIT_SCHEMA = "evalatlas.atlas.fit/1"
ESTIMATE_SCHEMA = "evalatlas.atlas.estimate/1"


@dataclass
class AbilitiesResult(TableResult):
    """``atlas abilities``: the fit's agent rows, highest ability first; ``meta``: fit_id,
    model; ``notes``: the fit's diagnostics in two sentences."""

    SCHEMA: ClassVar[str] = "evalatlas.atlas.abilities/1"


@dataclass
class ItemsResult(TableResult):
    """``atlas items``: the fit's item rows by benchmark, then difficulty (easiest first);
    ``meta``: fit_id, model; ``notes``: the fit's diagnostics."""

    SCHEMA: ClassVar[str] = "evalatlas.atlas.items/1"


@dataclass
class DriftResult(TableResult):
    """``atlas drift``: tasks run under more than one ``task_version_hash``: rows with
    ``benchmark``, ``task_id`` and ``hashes`` (each ``task_version_hash`` with its
    ``agents``)."""

    SCHEMA: ClassVar[str] = "evalatlas.atlas.drift/1"


@dataclass
class NextTasksResult(TableResult):
    """``atlas next-tasks``: tasks the agent (``meta["agent"]``) has not run, most
    informative first: ``benchmark``, ``task_id``, ``task_version_hash``,
    ``information`` (Fisher information at its ability), ``difficulty``,
    ``predicted_success``."""

    SCHEMA: ClassVar[str] = "evalatlas.atlas.next_tasks/1"


def diagnostic_notes(d: dict[str, Any]) -> list[str]:
    """The diagnostics of a fit (``AtlasFit.diagnostics``) as two sentences."""
    return [
        f"model {d.get('model')}: {d.get('cells_observed')} cells fitted, "
        f"{d.get('cells_heldout')} held out; held-out AUC {fmt_value(d.get('heldout_auc'))}, "
        f"log loss {fmt_value(d.get('heldout_log_loss'))}, ECE {fmt_value(d.get('ece'))}; "
        f"{fmt_value(d.get('seconds'))} s",
        f"tasks solved by all: {d.get('tasks_all_solved')}, by none: "
        f"{d.get('tasks_none_solved')}, suspect broken: {d.get('tasks_suspect_broken')}",
    ]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in the dev and report extras
        raise ImportError("DataFrames need pandas: pip install pandas "
                          "(or use the *_rows lists / to_dict())") from exc
    return pd.DataFrame(rows)


@dataclass(repr=False)
class AtlasFit(ResultViews):
    """One fit: parameters per agent and item, diagnostics, coverage and drift.

    ``agent_rows``/``item_rows``/``coverage_rows``/``drift_rows`` are plain lists of
    dicts; ``agents``/``items``/``coverage`` give the same as pandas DataFrames.
    ``irt`` and ``matrix`` hold the arrays behind them (None for a fit read back from
    the store). As a result (:class:`evalatlas.results.Result`): ``rows`` are the agent
    rows, ``meta`` the fit id, settings and diagnostics.
    """

    fit_id: str
    settings: dict[str, Any]
    agent_rows: list[dict[str, Any]]
    item_rows: list[dict[str, Any]]
    diagnostics: dict[str, Any]
    coverage_rows: list[dict[str, Any]] = field(default_factory=list)
    drift_rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    irt: IRTFit | None = None
    matrix: ResponseMatrix | None = None

    @property
    def model(self) -> str:
        return str(self.settings.get("model"))

    @property
    def schema(self) -> str:
        return FIT_SCHEMA

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The agent rows (``agent_rows``; the items are in ``item_rows``)."""
        return self.agent_rows

    @property
    def meta(self) -> dict[str, Any]:
        return {"fit_id": self.fit_id, **self.settings, "diagnostics": self.diagnostics}

    def to_pandas(self) -> pd.DataFrame:
        """The agent rows as a DataFrame (as :attr:`agents`)."""
        return self.agents

    def __repr__(self) -> str:
        notes = len(self.notes)
        return (f"<AtlasFit {FIT_SCHEMA} {self.model}: {len(self.agent_rows)} agents x "
                f"{len(self.item_rows)} items" + (f", {notes} note{'s' * (notes != 1)}>"
                                                  if notes else ">"))

    @property
    def agents(self) -> pd.DataFrame:
        return _frame(self.agent_rows)

    @property
    def items(self) -> pd.DataFrame:
        return _frame(self.item_rows)

    @property
    def coverage(self) -> pd.DataFrame:
        return _frame(self.coverage_rows)

    def agent_order(self) -> list[str]:
        """agent_ids from the highest ability down (for heatmaps)."""
        rows = sorted(self.agent_rows, key=lambda r: (-(r["ability"] or 0.0), r["agent"]))
        return [r["agent_id"] for r in rows]

    def item_order(self) -> list[tuple[str, str, str | None]]:
        """(benchmark, task_id, task_version_hash) from easiest to hardest."""
        rows = sorted(self.item_rows, key=lambda r: (r["difficulty"], r["task_id"]))
        return [(r["benchmark"], r["task_id"], r["task_version_hash"]) for r in rows]

    def abilities(self) -> AbilitiesResult:
        """The agent rows, highest ability first (``evalatlas atlas abilities``; its
        ``--format json`` is this result's ``to_dict()``)."""
        d = self.to_dict()
        rows = sorted(d["agents"], key=lambda r: -r["ability"])
        return AbilitiesResult(rows=rows, meta={"fit_id": d["fit_id"], "model": d["model"]},
                               notes=diagnostic_notes(d["diagnostics"]))

    def item_table(self, *, sort: str | None = None, top: int | None = None,
                   hardest: bool = False) -> ItemsResult:
        """The item rows (``evalatlas atlas items``): by benchmark, then difficulty
        (easiest first) by default; ``sort="difficulty"`` easiest first over every
        benchmark (``hardest=True``: hardest first), ``sort="discrimination"`` the most
        discriminating first (a 2PL/MF fit: 1PL has none); ``top``: the first N rows."""
        if sort not in (None, "difficulty", "discrimination"):
            raise ArgumentError(f"sort must be difficulty or discrimination, got {sort!r}")
        if hardest and sort == "discrimination":
            raise ArgumentError("hardest orders by difficulty; it does not apply to "
                                "sort='discrimination'")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int)
                                or top < 1):
            raise ArgumentError(f"top must be a whole number >= 1, got {top!r}")
        d = self.to_dict()
        if hardest:
            sort = "difficulty"
        if sort == "discrimination":
            if d["model"] == "1pl":
                raise ArgumentError("sort='discrimination' needs a 2pl or mf fit: 1pl "
                                    "gives every item the same discrimination")
            rows = sorted(d["items"], key=lambda r: (-r["discrimination"], r["benchmark"],
                                                     r["task_id"]))
        elif sort == "difficulty":
            sign = -1 if hardest else 1
            rows = sorted(d["items"], key=lambda r: (sign * r["difficulty"], r["benchmark"],
                                                     r["task_id"]))
        else:
            rows = sorted(d["items"], key=lambda r: (r["benchmark"], r["difficulty"],
                                                     r["task_id"]))
        meta = {"fit_id": d["fit_id"], "model": d["model"], "items": len(rows)}
        notes = diagnostic_notes(d["diagnostics"])
        if sort:
            meta["sort"] = "difficulty, hardest first" if hardest else (
                "difficulty, easiest first" if sort == "difficulty"
                else "discrimination, highest first")
        if top is not None and top < len(rows):
            notes.append(f"the first {top} of {len(rows)} items"
                         + (f" by {meta['sort']}" if sort else ""))
            rows = rows[:top]
            meta["top"] = top
        return ItemsResult(rows=rows, meta=meta, notes=notes)

    def to_dict(self) -> dict[str, Any]:
        """Exactly ``evalatlas atlas fit --format json`` (strict JSON values)."""
        env: dict[str, Any] = {
            "schema": FIT_SCHEMA, "fit_id": self.fit_id, **json_safe(dict(self.settings)),
            "agents": [json_safe(dict(r)) for r in self.agent_rows],
            "items": [json_safe(dict(r)) for r in self.item_rows],
            "diagnostics": json_safe(dict(self.diagnostics)),
            "coverage": [json_safe(dict(r)) for r in self.coverage_rows],
            "drifted_tasks": [json_safe(dict(r)) for r in self.drift_rows],
        }
        if self.notes:
            env["notes"] = list(self.notes)
        return env


@dataclass(repr=False)
class AgentEstimate(ResultViews):
    """``atlas estimate``: one agent's ability and predicted full-benchmark success rate.

    As a result (:class:`evalatlas.results.Result`): one row, the fields."""

    agent: str
    agent_id: str | None
    benchmark: list[str] | None
    ability: float
    ability_ci_low: float
    ability_ci_high: float
    predicted_success_rate: float
    predicted_success_rate_ci_low: float | None
    predicted_success_rate_ci_high: float | None
    tasks_observed: int
    n_tasks: int
    method: str
    fit_id: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Exactly ``evalatlas atlas estimate --format json``: ``schema``, every field
        (strict JSON values), ``notes``."""
        d = {k: v for k, v in self.__dict__.items() if k != "notes"}
        d = {"schema": ESTIMATE_SCHEMA, **json_safe(d)}
        d["notes"] = list(self.notes)
        return d

    @property
    def schema(self) -> str:
        return ESTIMATE_SCHEMA

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One row: every field but the notes."""
        return [{k: v for k, v in self.__dict__.items() if k != "notes"}]

    @property
    def meta(self) -> dict[str, Any]:
        return {}

    def to_pandas(self) -> pd.DataFrame:
        return _frame(self.rows)
