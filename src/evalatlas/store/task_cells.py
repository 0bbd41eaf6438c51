"""The group x task cells and the per-episode drill-down of the report (SQL only).

Both group episodes by one ``by`` key (:func:`evalatlas.store.queries.group_expr`) over
``episodes e LEFT JOIN experiments x`` and keep the experiments whose ids are given
(:func:`evalatlas.store.selection.id_filter`; None: all). The report
(:mod:`evalatlas.report.build`) shapes them into the heatmap, the paired matrix's
per-task rates and the drill-down; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import group_expr
from evalatlas.store.selection import id_filter


def task_cells(store: StoreConnection, by: str, ids: Sequence[str] | None
               ) -> tuple[dict[str, Any], dict[Any, Any]]:
    """Per (group, task): ``k`` (group key), ``task``, ``n_all`` (episodes), ``n``
    (episodes with a known outcome), ``c`` (successes), ``rs``/``rn`` (reward sum and
    count), ``cs``/``cn`` (cost sum and count), as numpy columns; and each group key's
    display name."""
    _, key, disp = group_expr(by)
    where, params = id_filter(None if ids is None else list(ids))
    arr = store.query_arrays(f"""
        SELECT {key} AS k, e.task_id AS task, count(*) AS n_all, count(e.success) AS n,
               sum(CASE WHEN e.success THEN 1 ELSE 0 END) AS c,
               coalesce(sum(e.reward), 0) AS rs, count(e.reward) AS rn,
               coalesce(sum(e.cost_usd), 0) AS cs, count(e.cost_usd) AS cn
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where} GROUP BY k, task
    """, params)
    labels = {r["k"]: r["label"] for r in store.query(f"""
        SELECT {key} AS k, {disp} AS label FROM episodes e
        LEFT JOIN experiments x USING (experiment_id) {where} GROUP BY k""", params)}
    return arr, labels


def drill_episodes(store: StoreConnection, by: str, ids: Sequence[str] | None, tasks: list[str],
                   text_limit: int) -> dict[str, Any]:
    """The episodes of ``tasks`` as numpy columns, ordered by the task's position in
    ``tasks`` (``t``), group key (``k``), attempt and trajectory: attempt, success,
    reward, ``err`` (error type, else a status other than completed), ``txt`` (output,
    else error message), ``inp`` (input), ``tgt`` (expected), the first ``text_limit``
    characters of each, tokens, cost, wall time and ``source`` (the episode's file,
    else its experiment's)."""
    _, key, _ = group_expr(by)
    where, params = id_filter(None if ids is None else list(ids))
    # an Arrow table as a view: executemany inserts are slow in DuckDB
    store.con.register("_report_tasks", pa.table({"task_id": tasks,
                                                  "i": list(range(len(tasks)))}))
    limit = int(text_limit)
    try:
        return store.query_arrays(f"""
            SELECT {key} AS k, rt.i AS t, e.attempt, e.success, e.reward,
                   coalesce(e.error_type, CASE WHEN e.status <> 'completed' THEN e.status END)
                       AS err,
                   coalesce(substr(e.output_text, 1, {limit}),
                            substr(e.error_message, 1, {limit})) AS txt,
                   substr(e.input_text, 1, {limit}) AS inp,
                   substr(e.expected_text, 1, {limit}) AS tgt,
                   e.total_tokens, e.cost_usd, e.wall_time_s,
                   coalesce(e.source_file, x.source_file) AS source
            FROM episodes e LEFT JOIN experiments x USING (experiment_id)
            JOIN _report_tasks rt ON rt.task_id = e.task_id
            {where}
            ORDER BY rt.i, k, e.attempt NULLS LAST, e.trajectory_id
        """, params)
    finally:
        store.con.unregister("_report_tasks")
