"""The episodes a judge has still to score (SQL only; the judging is :mod:`evalatlas.judge`)."""

from __future__ import annotations

from typing import Any

from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import id_filter


def unjudged_episodes(store: StoreConnection, experiments: list[str] | None, score: str | None,
                      limit: int | None = None) -> list[dict[str, Any]]:
    """Completed episodes without a numeric score ``score`` (None: every completed
    episode, to judge again), with their experiment's framework as ``x_framework``,
    ordered by experiment and trajectory; ``experiments``: only these ids (None: all);
    ``limit``: at most this many (None or 0: all).

    "Scored" means the score is present, so a failed judge call (no score written) is
    retried next time, and another judge model (another score name) judges again."""
    where, params = id_filter(experiments, joiner="AND")
    unscored = ""
    if score is not None:
        unscored = f"AND TRY_CAST(e.scores->>'$.\"{_json_key(score)}\"' AS DOUBLE) IS NULL"
    sql = ("SELECT e.*, x.framework_name AS x_framework FROM episodes e JOIN experiments x "
           f"USING (experiment_id) WHERE e.status = 'completed' {unscored} {where} "
           "ORDER BY e.experiment_id, e.trajectory_id")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return store.query(sql, params)


def _json_key(name: str) -> str:
    """A score name as it can sit between double quotes in a JSON path inside a SQL
    string literal (judge score names are ``[A-Za-z0-9_.-]``; anything else is refused)."""
    if not name or any(c in name for c in "'\"\\"):
        raise ValueError(f"score name {name!r} cannot be used in a JSON path")
    return name
