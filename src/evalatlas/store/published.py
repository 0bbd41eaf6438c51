"""Published metrics (the source's own reported numbers) and the episode values they cover.

Storage only: :func:`published_metrics` lists ``experiments.published_metrics`` rows;
:func:`score_values` gives, per experiment and task, the values of one quantity (reward
or a named score) over the task's attempts, ordered by attempt. The recomputation is
:func:`evalatlas.metrics.published.recompute_published`.
"""

from __future__ import annotations

import json
from typing import Any

from evalatlas.store.db import StoreConnection
from evalatlas.store.selection import id_filter


def published_metrics(store: StoreConnection, experiment: list[str] | None = None
                      ) -> list[dict[str, Any]]:
    """One dict per published metric: its fields plus experiment_id, experiment_name,
    agent_name, benchmark_name, and ``episodes`` (the experiment's stored episodes)."""
    where = "WHERE x.published_metrics IS NOT NULL"
    ids, params = id_filter(experiment, "x.experiment_id", "AND")
    where += " " + ids
    rows = store.query(f"""
        SELECT x.experiment_id, x.experiment_name, x.agent_name, x.benchmark_name,
               x.published_metrics,
               (SELECT count(*) FROM episodes e WHERE e.experiment_id = x.experiment_id)
                 AS episodes
        FROM experiments x {where} ORDER BY x.experiment_name, x.experiment_id
    """, params)
    out = []
    for r in rows:
        for m in json.loads(r["published_metrics"]):
            out.append({"experiment_id": r["experiment_id"],
                        "experiment_name": r["experiment_name"],
                        "agent_name": r["agent_name"], "benchmark_name": r["benchmark_name"],
                        "episodes": int(r["episodes"]), **m})
    return out


def score_values(store: StoreConnection, experiment_id: str, score: str
                 ) -> dict[str, list[float | None]]:
    """``{task_id: [value per attempt]}`` of ``score`` ('reward' or a named score)."""
    if score == "reward":
        expr = "reward"
        params: list[Any] = [experiment_id]
    else:
        expr = "TRY_CAST(json_extract(scores, ?) AS DOUBLE)"
        params = ['$."' + score.replace('"', '\\"') + '"', experiment_id]
    rows = store.con.execute(f"""
        SELECT task_id, {expr} AS v FROM episodes WHERE experiment_id = ?
        ORDER BY task_id, attempt, trajectory_id
    """, params).fetchall()
    out: dict[str, list[float | None]] = {}
    for task, v in rows:
        out.setdefault(task, []).append(None if v is None else float(v))
    return out


def source_notes(store: StoreConnection, experiment: list[str] | None = None) -> list[str]:
    """``"<experiment>: <note>"`` for every note an adapter attached to an experiment in
    ``extra.source_notes`` (sources that disagree about a run, e.g. two labels naming
    different models for the same SWE-Bench Pro run), so ``summary`` shows them."""
    where = "WHERE json_extract(x.extra, '$.source_notes') IS NOT NULL"
    ids, params = id_filter(experiment, "x.experiment_id", "AND")
    where += " " + ids
    rows = store.query(f"""
        SELECT x.experiment_name, json_extract(x.extra, '$.source_notes') AS notes
        FROM experiments x {where} ORDER BY x.experiment_name, x.experiment_id
    """, params)
    out = []
    for r in rows:
        notes = json.loads(r["notes"]) if isinstance(r["notes"], str) else r["notes"]
        for note in notes if isinstance(notes, list) else [notes]:
            out.append(f"{r['experiment_name']}: {note}")
    return out
