"""Resolve ``compare`` selectors to experiments and load each side's episodes (SQL only).

Selectors (first match wins, an ambiguous one is an error listing the candidates):

1. ``label:<name>=<value>``: every experiment whose label ``<name>`` is ``<value>``;
2. ``experiment:<x>`` / ``agent:<x>``: force the kind;
3. otherwise an experiment or agent name or id as :func:`evalatlas.selectors.resolve`
   matches names people type (exact, then case- and separator-insensitive, then a
   unique prefix or substring of a name or prefix of an id); at the exact tiers an
   experiment's name wins over an agent's; an agent wins over its own experiments at
   the fuzzy ones.

The statistics are in :mod:`evalatlas.analysis.compare`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalatlas.errors import ArgumentError
from evalatlas.selectors import resolve as resolve_name
from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import agent_candidates, experiment_candidates, id_filter

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


def resolve(store: StoreConnection, selector: str) -> Side:
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
    cands = ((experiment_candidates(store) if kind in ("", "experiment") else [])
             + (agent_candidates(store) if kind in ("", "agent") else []))
    what = kind or "agent, experiment or label (label:<name>=<value>)"
    hits = resolve_name(value, cands, argument="selector", what=what)
    exps = [h for h in hits if h.kind == "experiment"]
    if exps:  # an experiment's own name first (a run of an agent, not the agent)
        names = sorted({h.names[0] for h in exps if h.names[0]})
        return Side(selector, names[0] if len(names) == 1 else value,
                    tuple(sorted(h.key for h in exps)))
    if len(hits) > 1:
        raise ArgumentError(f"selector: {selector!r} names {len(hits)} different agents "
                            f"({', '.join(h.key[:12] for h in hits)}); use an id prefix")
    (agent,) = hits
    return Side(selector, agent.names[0] if agent.names else value,
                tuple(sorted(agent.members())))


def side_episodes(store: StoreConnection, side: Side, score: str | None = None) -> dict[str, Any]:
    """The episodes of one side with a known outcome, as numpy columns (masked where
    NULL): ``task_id``, ``attempt`` (-1 when unrecorded), ``seed``, ``success``,
    ``score`` (the named judge score, or the reward when ``score`` is None), ``reward``,
    ``cost_usd``, ``split``, ``timestamp`` and the experiment's ``benchmark_name``.

    The one query behind both ``compare``'s sides (:func:`load_side`) and the gate's
    (:func:`evalatlas.store.gate.load_gate_side`). An unknown outcome (null reward) is
    not a failure, so such episodes are neither paired nor gated."""
    if score is not None and not SCORE_NAME.match(score):
        raise ValueError(f"invalid score name {score!r}")
    where, params = id_filter(list(side.experiment_ids))
    score_sql = (f"TRY_CAST(e.scores->>'$.\"{score}\"' AS DOUBLE)" if score
                 else "e.reward")
    return store.query_arrays(
        f"SELECT e.task_id, coalesce(e.attempt, -1) AS attempt, e.seed, e.success, "
        f"{score_sql} AS score, e.reward, e.cost_usd, e.split, e.timestamp, "
        f"x.benchmark_name FROM episodes e LEFT JOIN experiments x USING (experiment_id) "
        f"{where} AND e.success IS NOT NULL", params)


def load_side(store: StoreConnection, side: Side, score: str | None) -> dict[str, np.ndarray]:
    """Per-episode arrays of one side (known outcomes only): task, attempt, seed,
    success, score (the named judge score, or reward when ``score`` is None) and cost."""
    arr = side_episodes(store, side, score)
    return {
        "task": np.asarray(arr["task_id"], dtype=object),
        "attempt": np.asarray(arr["attempt"], dtype=np.int64),
        # an explicit seed is what pairs attempts of two sides (None: no seed)
        "seed": object_column(arr["seed"]),
        "success": np.asarray(arr["success"], dtype=float),
        "score": float_column(arr["score"]),
        "cost": float_column(arr["cost_usd"]),
    }


def float_column(column: Any) -> np.ndarray:
    """A possibly masked numpy column as floats with NaN where it was NULL."""
    return np.ma.filled(np.ma.asarray(column, dtype=float), np.nan)


def object_column(column: Any) -> np.ndarray:
    """A possibly masked numpy column (``StoreConnection.query_arrays``) as an object array with
    None where it was NULL (the sides of ``compare`` and of the gate)."""
    values = np.asarray(np.ma.getdata(column), dtype=object)
    values[np.ma.getmaskarray(column)] = None
    return values


def pick_score(store: StoreConnection, sides: list[Side]) -> str | None:
    """``score`` when every side has judge scores named so, else None (reward)."""
    for s in sides:
        where, params = id_filter(list(s.experiment_ids), "experiment_id")
        row = store.query(f"SELECT count(*) AS n FROM episodes {where} "
                          "AND (scores->>'$.score') IS NOT NULL", params)
        if not row[0]["n"]:
            return None
    return "score"
