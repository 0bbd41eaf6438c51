"""Resolve ``compare`` selectors to experiments and load each side's episodes (SQL only).

Selectors (first match wins, an ambiguous one is an error listing the candidates):

1. ``label:<name>=<value>``: every experiment whose label ``<name>`` is ``<value>``;
2. ``experiment:<x>`` / ``agent:<x>``: force the kind;
3. otherwise an exact experiment name or id, then an exact agent name or id, then a
   unique prefix (at least 4 characters) of an agent id or experiment id.

The statistics are in :mod:`evalatlas.analysis.compare`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalatlas.store.db import Store

_LABEL_SEL = re.compile(r"^label:([A-Za-z0-9_.\-]+)=(.+)$")
SCORE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Side:
    """A resolved selector: display name and the experiments it covers."""

    selector: str
    name: str
    experiment_ids: tuple[str, ...]


def _distinct(rows: list[dict[str, Any]], key: str) -> list[str]:
    return sorted({r[key] for r in rows})


def resolve(store: Store, selector: str) -> Side:
    """Resolve one selector to experiments (rules in the module docstring)."""
    m = _LABEL_SEL.match(selector)
    if m:
        rows = store.query(
            f"SELECT experiment_id FROM experiments "
            f"WHERE json_extract_string(labels, '$.\"{m.group(1)}\"') = ?", [m.group(2)])
        if not rows:
            raise ValueError(f"no experiment has label {m.group(1)}={m.group(2)!r}")
        return Side(selector, f"{m.group(1)}={m.group(2)}",
                    tuple(_distinct(rows, "experiment_id")))
    kind, _, value = selector.partition(":")
    if kind not in ("experiment", "agent") or not value:
        kind, value = "", selector
    if kind in ("", "experiment"):
        rows = store.query("SELECT experiment_id, experiment_name FROM experiments "
                           "WHERE experiment_id = ? OR experiment_name = ?", [value, value])
        if rows:
            names = _distinct(rows, "experiment_name")
            return Side(selector, names[0] if len(names) == 1 else value,
                        tuple(_distinct(rows, "experiment_id")))
    if kind in ("", "agent"):
        rows = store.query("SELECT experiment_id, agent_id, agent_name FROM experiments "
                           "WHERE agent_id = ? OR agent_name = ?", [value, value])
        if rows:
            agents = _distinct(rows, "agent_id")
            if len(agents) > 1:
                raise ValueError(f"{selector!r} names {len(agents)} different agents "
                                 f"({', '.join(a[:12] for a in agents)}); use an id prefix")
            return Side(selector, rows[0]["agent_name"] or value,
                        tuple(_distinct(rows, "experiment_id")))
    if len(value) >= 4:
        cands: dict[tuple[str, str], list[dict[str, Any]]] = {}
        if kind in ("", "agent"):
            for r in store.query("SELECT experiment_id, agent_id, agent_name FROM experiments "
                                 "WHERE starts_with(agent_id, ?)", [value]):
                cands.setdefault(("agent", r["agent_id"]), []).append(r)
        if kind in ("", "experiment"):
            for r in store.query("SELECT experiment_id, experiment_name FROM experiments "
                                 "WHERE starts_with(experiment_id, ?)", [value]):
                cands.setdefault(("experiment", r["experiment_id"]), []).append(r)
        if len(cands) == 1:
            (k, ident), rows = next(iter(cands.items()))
            name = rows[0].get("agent_name") if k == "agent" else rows[0]["experiment_name"]
            return Side(selector, name or ident, tuple(_distinct(rows, "experiment_id")))
        if len(cands) > 1:
            listed = ", ".join(f"{k} {i[:16]}" for k, i in sorted(cands))
            raise ValueError(f"{selector!r} is ambiguous: {listed}")
    raise ValueError(f"{selector!r} matches no agent, experiment or label "
                     "(use an agent name or id prefix, an experiment name or id, or "
                     "label:<name>=<value>)")


def load_side(store: Store, side: Side, score: str | None) -> dict[str, np.ndarray]:
    """Per-episode arrays of one side (known outcomes only): task, attempt, success, score
    (the named judge score, or reward when ``score`` is None) and cost."""
    if score is not None and not SCORE_NAME.match(score):
        raise ValueError(f"invalid score name {score!r}")
    marks = ", ".join("?" for _ in side.experiment_ids)
    score_sql = (f"TRY_CAST(e.scores->>'$.\"{score}\"' AS DOUBLE)" if score
                 else "e.reward")
    arr = store.query_arrays(
        f"SELECT e.task_id, coalesce(e.attempt, -1) AS attempt, e.seed, e.success, "
        f"{score_sql} AS score, e.cost_usd FROM episodes e "
        f"WHERE e.experiment_id IN ({marks}) "
        # an unknown outcome (null reward) is not a failure: such episodes are not paired
        f"AND e.success IS NOT NULL", list(side.experiment_ids))
    return {
        "task": np.asarray(arr["task_id"], dtype=object),
        "attempt": np.asarray(arr["attempt"], dtype=np.int64),
        # an explicit seed is what pairs attempts of two sides (None: no seed)
        "seed": _objects(arr["seed"]),
        "success": np.asarray(arr["success"], dtype=float),
        "score": np.ma.filled(np.ma.asarray(arr["score"], dtype=float), np.nan),
        "cost": np.ma.filled(np.ma.asarray(arr["cost_usd"], dtype=float), np.nan),
    }



def _objects(column: Any) -> np.ndarray:
    """A possibly masked numpy column as an object array with None where it was NULL."""
    values = np.asarray(np.ma.getdata(column), dtype=object)
    values[np.ma.getmaskarray(column)] = None
    return values


def pick_score(store: Store, sides: list[Side]) -> str | None:
    """``score`` when every side has judge scores named so, else None (reward)."""
    for s in sides:
        marks = ", ".join("?" for _ in s.experiment_ids)
        row = store.query(f"SELECT count(*) AS n FROM episodes WHERE experiment_id IN "
                          f"({marks}) AND scores->>'$.score' IS NOT NULL",
                          list(s.experiment_ids))
        if not row[0]["n"]:
            return None
    return "score"
