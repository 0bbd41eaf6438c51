"""What a user says about runs whose source lacks it: ``ingest --model --agent-name
--label``, applied to every experiment record of that ingest and recorded as overrides.

Terminal-Bench leaves the model of 6 of 10 runs unknown and names agents by class
(``LeadArchitectAgent``); the user knows better. An override sets the agent's model
(episodes without a usage model of their own take it, and their cost is computed from
it), the agent's display name or a label, and ``extra["overrides"]`` keeps what the
source said (``{"model": {"source": null, "override": "gpt-4o"}}``), so the change is
visible and never mistaken for the harness's own record. The agent id (a hash of the
agent's config) does not change. Outcomes are never touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from evalatlas.errors import ArgumentError
from evalatlas.records.models import ExperimentRecord

_LABEL_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Overrides:
    """``model``, ``agent_name`` (None: keep the source's) and ``labels`` to set."""

    model: str | None = None
    agent_name: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for arg, value in (("model", self.model), ("agent_name", self.agent_name)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ArgumentError(f"{arg} must be a non-empty name, got {value!r:.60}")
        if not isinstance(self.labels, dict):
            raise ArgumentError(f"labels must be a dict of name -> value, got "
                                f"{type(self.labels).__name__}")
        for k, v in self.labels.items():
            if not isinstance(k, str) or not _LABEL_KEY.match(k):
                raise ArgumentError(f"labels: {k!r} is not a label name (letters, digits, "
                                    "'_', '.', '-')")
            if not isinstance(v, str):
                raise ArgumentError(f"labels: the value of {k!r} must be text, got {v!r:.40}")

    def __bool__(self) -> bool:
        return bool(self.model or self.agent_name or self.labels)


def apply_overrides(exp: ExperimentRecord, overrides: Overrides) -> ExperimentRecord:
    """``exp`` with the overrides applied and ``extra["overrides"]`` recording, for each
    field changed, what the source said and what the user set."""
    if not overrides:
        return exp
    record: dict[str, Any] = dict(exp.extra.get("overrides") or {})
    agent_update: dict[str, Any] = {}
    if overrides.model is not None:
        record["model"] = {"source": exp.agent.llm_model, "override": overrides.model}
        agent_update["llm_model"] = overrides.model
    if overrides.agent_name is not None:
        record["agent_name"] = {"source": exp.agent.name, "override": overrides.agent_name}
        agent_update["name"] = overrides.agent_name
    labels = dict(exp.labels)
    for k, v in overrides.labels.items():
        record.setdefault("labels", {})[k] = {"source": exp.labels.get(k), "override": v}
        labels[k] = v
    return exp.model_copy(update={
        "agent": exp.agent.model_copy(update=agent_update),
        "labels": labels, "extra": {**exp.extra, "overrides": record}})
