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
from typing import TYPE_CHECKING, Any

from evalatlas.text import json_safe

if TYPE_CHECKING:
    import pandas as pd

    from evalatlas.atlas.irt import IRTFit
    from evalatlas.atlas.matrix import ResponseMatrix

FIT_SCHEMA = "evalatlas.atlas.fit/1"


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in the dev and report extras
        raise ImportError("DataFrames need pandas: pip install pandas "
                          "(or use the *_rows lists / to_dict())") from exc
    return pd.DataFrame(rows)


@dataclass
class AtlasFit:
    """One fit: parameters per agent and item, diagnostics, coverage and drift.

    ``agent_rows``/``item_rows``/``coverage_rows``/``drift_rows`` are plain lists of
    dicts; ``agents``/``items``/``coverage`` give the same as pandas DataFrames.
    ``irt`` and ``matrix`` hold the arrays behind them (None for a fit read back from
    the store).
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

    def to_dict(self) -> dict[str, Any]:
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


@dataclass
class AgentEstimate:
    """``atlas estimate``: one agent's ability and predicted full-benchmark success rate."""

    agent: str
    agent_id: str | None
    benchmark: list[str] | None
    ability: float
    ability_ci_low: float
    ability_ci_high: float
    predicted_success_rate: float
    predicted_success_rate_ci_low: float
    predicted_success_rate_ci_high: float
    tasks_observed: int
    n_tasks: int
    method: str
    fit_id: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "notes"}
        d = json_safe(d)
        d["notes"] = list(self.notes)
        return d
