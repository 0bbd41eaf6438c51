"""Storage for the atlas: the episodes frame it fits on, and stored fits. No statistics.

Tables (created on first write, so older stores need no migration):

- ``atlas_fits``: one row per fit (``fit_id``, ``created_at``, settings and diagnostics
  as JSON, notes);
- ``atlas_abilities``: one row per agent per fit (the JSON agent row's fields);
- ``atlas_items``: one row per item per fit;
- ``atlas_coverage``: one row per (agent, benchmark) per fit.

Rows are stored as the result's own dicts (``row`` JSON) beside a few key columns, so a
fit reads back exactly as it was printed. Writing a fit with an existing ``fit_id``
(same data and settings) replaces it.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

import pyarrow as pa

from evalatlas.store.db import StoreConnection
from evalatlas.store.frames import arrow_in_order
from evalatlas.text import json_safe

DDL = """
CREATE TABLE IF NOT EXISTS atlas_fits (
    fit_id VARCHAR, created_at TIMESTAMP, model VARCHAR, cell VARCHAR,
    benchmark VARCHAR, settings JSON, diagnostics JSON, drift JSON, notes JSON);
CREATE TABLE IF NOT EXISTS atlas_abilities (
    fit_id VARCHAR, agent_id VARCHAR, agent VARCHAR, ability DOUBLE, ability_se DOUBLE,
    row JSON);
CREATE TABLE IF NOT EXISTS atlas_items (
    fit_id VARCHAR, benchmark VARCHAR, task_id VARCHAR, task_version_hash VARCHAR,
    difficulty DOUBLE, discrimination DOUBLE, row JSON);
CREATE TABLE IF NOT EXISTS atlas_coverage (
    fit_id VARCHAR, agent_id VARCHAR, benchmark VARCHAR, row JSON);
"""

TABLES = ("atlas_fits", "atlas_abilities", "atlas_items", "atlas_coverage")


def matrix_episodes(store: StoreConnection, benchmark: list[str] | None = None) -> pa.Table:
    """One row per episode with the columns the atlas matrix needs, sorted by agent_id,
    benchmark, task_id, task_version_hash and trajectory_id (NULLs last), the order
    :func:`evalatlas.atlas.matrix.build_matrix` numbers agents and items in and takes an
    agent's name from (its first episode). One sort, DuckDB's, read back in its order
    (:func:`~evalatlas.store.frames.arrow_in_order`).

    Episodes whose experiment record was never ingested are kept under the agent
    ``?<experiment_id>`` (as in ``summary``) and benchmark ``(unknown)``.
    """
    where, params = "", []
    if benchmark:
        where = ("WHERE coalesce(x.benchmark_name, '(unknown)') IN ("
                 + ", ".join("?" for _ in benchmark) + ")")
        params = list(benchmark)
    sql = f"""
        SELECT coalesce(x.agent_id, '?' || e.experiment_id) AS agent_id,
               coalesce(x.agent_name, '(no experiment record)') AS agent_name,
               json_extract_string(x.agent, '$.description') AS agent_description,
               coalesce(x.benchmark_name, '(unknown)') AS benchmark,
               x.subset_n_tasks AS n_tasks,
               e.task_id, e.task_version_hash, e.trajectory_id, e.success, e.reward
        FROM episodes e LEFT JOIN experiments x USING (experiment_id)
        {where}
        ORDER BY agent_id, benchmark, e.task_id, e.task_version_hash, e.trajectory_id
    """
    return arrow_in_order(store, sql, params)


_KEPT = {
    # cell kind: (the episode's value, the episode is used, its outcome is unknown)
    "success": ("coalesce(e.success, e.reward > 0)::DOUBLE",
                "coalesce(e.success, e.reward > 0) IS NOT NULL",
                "coalesce(e.success, e.reward > 0) IS NULL"),
    "reward": ("e.reward", "e.reward >= 0 AND e.reward <= 1", "e.reward IS NULL"),
}
"""Per cell kind, the SQL of :func:`evalatlas.atlas.matrix.build_matrix`'s rules: a
success cell reads ``success``, else ``reward > 0``; a reward cell reads rewards in
[0, 1] (others are refused by the caller, never clipped)."""

_counter = iter(range(1 << 62))


def matrix_cells(store: StoreConnection, benchmark: list[str] | None, cell: str,
                 drift: str) -> dict[str, Any]:
    """The response matrix's cells aggregated in DuckDB, for
    :func:`evalatlas.atlas.matrix.matrix_from_store_cells`: the same cells, labels and order as
    :func:`~evalatlas.atlas.matrix.build_matrix` over :func:`matrix_episodes`, without
    one Python row per episode (100M episodes are 10M agent x task cells; issue 23).

    Returns ``agents`` (agent_id, agent_name of its first used episode, first non-empty
    description; in agent_id order), ``items`` (benchmark, task_id, task_version_hash,
    or None under ``drift='merge'``; in order of first appearance), arrays ``agent``,
    ``item``, ``k``, ``n`` (sorted by agent, item), ``coverage`` rows (agent_id,
    benchmark, tasks_run, n_tasks), ``drift_rows`` (benchmark, task_id,
    task_version_hash, agent_id of every task seen under several hashes), ``used``,
    ``unknown``, ``bad`` (rewards outside [0, 1]) and ``first_bad``."""
    value, kept, unknown = _KEPT[cell]
    where, params = "", []
    if benchmark is not None and not benchmark:
        where = "WHERE false"
    elif benchmark:
        where = ("WHERE coalesce(x.benchmark_name, '(unknown)') IN ("
                 + ", ".join("?" for _ in benchmark) + ")")
        params = list(benchmark)
    tag = f"_ea_matrix{next(_counter)}"
    con = store.con
    item_hash = "NULL::VARCHAR" if drift == "merge" else "task_version_hash"
    same_item = ("" if drift == "merge" else
                 " AND it.item_hash IS NOT DISTINCT FROM v.task_version_hash")
    # the sort key of an episode within its experiment (NULLs last, as ORDER BY has them)
    first_key = ("{'t0': task_id IS NULL, 't': task_id, 'h0': task_version_hash IS NULL, "
                 "'h': task_version_hash, 'f0': first_traj IS NULL, 'f': first_traj}")
    try:
        # the one pass over the episodes: per (experiment, task, version)
        con.execute(f"""
            CREATE TEMP TABLE {tag}_c1 AS
            SELECT e.experiment_id, e.task_id, e.task_version_hash,
                   count(*) FILTER (WHERE {kept}) AS n,
                   sum({value}) FILTER (WHERE {kept}) AS k,
                   count(*) FILTER (WHERE {unknown}) AS unknown,
                   count(*) FILTER (WHERE NOT ({kept}) AND NOT ({unknown})) AS bad,
                   min(e.trajectory_id) FILTER (WHERE {kept}) AS first_traj
            FROM episodes e
            {"" if not where else "LEFT JOIN experiments x USING (experiment_id) " + where}
            GROUP BY ALL""", params)
        totals = store.query(f"SELECT coalesce(sum(n), 0) AS used, "
                             f"coalesce(sum(unknown), 0) AS unknown, "
                             f"coalesce(sum(bad), 0) AS bad FROM {tag}_c1")[0]
        # everything else is keyed by small tables: the experiments with a used episode
        # (with the key of their first one), their agents (numbered in agent_id order),
        # the task versions seen and the items; the (experiment, task, version) groups
        # are read twice more, joined to those only
        con.execute(f"""
            CREATE TEMP TABLE {tag}_ex AS
            SELECT u.experiment_id, coalesce(x.agent_id, '?' || u.experiment_id) AS agent_id,
                   coalesce(x.agent_name, '(no experiment record)') AS agent_name,
                   json_extract_string(x.agent, '$.description') AS agent_description,
                   coalesce(x.benchmark_name, '(unknown)') AS benchmark,
                   x.subset_n_tasks AS n_tasks, u.first_key
            FROM (SELECT experiment_id, min({first_key}) AS first_key FROM {tag}_c1
                  WHERE n > 0 GROUP BY experiment_id) u
            LEFT JOIN experiments x USING (experiment_id)""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_agents AS
            SELECT agent_id, (row_number() OVER (ORDER BY agent_id) - 1)::INTEGER AS a
            FROM (SELECT DISTINCT agent_id FROM {tag}_ex)""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_exa AS
            SELECT experiment_id, agent_id, benchmark, a
            FROM {tag}_ex JOIN {tag}_agents USING (agent_id)""")
        order = "benchmark, first_key"
        agents = store.query(f"""
            SELECT agent_id, first(agent_name ORDER BY {order}) AS agent_name,
                   first(agent_description ORDER BY {order})
                     FILTER (WHERE agent_description <> '') AS agent_description,
                   any_value(a) AS a
            FROM {tag}_ex JOIN {tag}_agents USING (agent_id)
            GROUP BY agent_id ORDER BY agent_id""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_v AS
            SELECT xa.benchmark, c.task_id, c.task_version_hash, min(xa.a) AS first_a
            FROM {tag}_c1 c JOIN {tag}_exa xa USING (experiment_id)
            WHERE c.n > 0 GROUP BY ALL""")
        # items in order of first appearance in (agent_id, benchmark, task, version)
        # order; t numbers the tasks (a task's versions are one task for coverage)
        con.execute(f"""
            CREATE TEMP TABLE {tag}_items AS
            SELECT benchmark, task_id, {item_hash} AS item_hash,
                   (row_number() OVER (ORDER BY min(first_a), benchmark, task_id,
                                       {item_hash}) - 1)::INTEGER AS i,
                   dense_rank() OVER (ORDER BY benchmark, task_id) AS t
            FROM {tag}_v GROUP BY 1, 2, 3""")
        items = store.query(f"SELECT benchmark, task_id, item_hash FROM {tag}_items "
                            "ORDER BY i")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_vi AS
            SELECT v.benchmark, v.task_id, v.task_version_hash, it.i
            FROM {tag}_v v JOIN {tag}_items it ON it.benchmark = v.benchmark
                 AND it.task_id = v.task_id{same_item}""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_cells AS
            SELECT xa.a AS agent, vi.i AS item, sum(c.k) AS k, sum(c.n)::DOUBLE AS n
            FROM {tag}_c1 c JOIN {tag}_exa xa USING (experiment_id)
            JOIN {tag}_vi vi ON vi.benchmark = xa.benchmark AND vi.task_id = c.task_id
                 AND vi.task_version_hash IS NOT DISTINCT FROM c.task_version_hash
            WHERE c.n > 0 GROUP BY ALL""")
        cells = con.execute(f"SELECT agent, item, k, n FROM {tag}_cells "
                            "ORDER BY agent, item").fetchnumpy()
        coverage = store.query(f"""
            SELECT ag.agent_id, r.benchmark, r.tasks_run, nt.n_tasks
            FROM (SELECT c.agent, it.benchmark, count(DISTINCT it.t) AS tasks_run
                  FROM {tag}_cells c JOIN {tag}_items it ON it.i = c.item
                  GROUP BY ALL) r
            JOIN {tag}_agents ag ON ag.a = r.agent
            JOIN (SELECT agent_id, benchmark, max(n_tasks) AS n_tasks FROM {tag}_ex
                  GROUP BY ALL) nt ON nt.agent_id = ag.agent_id AND nt.benchmark = r.benchmark
            ORDER BY ag.agent_id, r.benchmark""")
        drift_rows = store.query(f"""
            SELECT DISTINCT xa.benchmark, c.task_id, c.task_version_hash, xa.agent_id
            FROM {tag}_c1 c JOIN {tag}_exa xa USING (experiment_id)
            JOIN (SELECT benchmark, task_id FROM {tag}_v GROUP BY ALL
                  HAVING count(DISTINCT coalesce(task_version_hash, chr(0))) > 1) d
                 ON d.benchmark = xa.benchmark AND d.task_id = c.task_id
            WHERE c.n > 0""")
        first_bad = None
        if totals["bad"]:
            first_bad = con.execute(f"""
                SELECT e.reward FROM episodes e LEFT JOIN experiments x USING (experiment_id)
                {where} {"AND" if where else "WHERE"} NOT ({kept}) AND NOT ({unknown})
                ORDER BY coalesce(x.agent_id, '?' || e.experiment_id),
                         coalesce(x.benchmark_name, '(unknown)'), e.task_id,
                         e.task_version_hash, e.trajectory_id LIMIT 1""",
                params).fetchall()[0][0]
    finally:
        for t in ("c1", "ex", "agents", "exa", "v", "items", "vi", "cells"):
            con.execute(f"DROP TABLE IF EXISTS {tag}_{t}")
    return {"agents": agents, "items": items, "agent": cells["agent"],
            "item": cells["item"], "k": cells["k"], "n": cells["n"],
            "coverage": coverage, "drift_rows": drift_rows, "used": int(totals["used"]),
            "unknown": int(totals["unknown"]), "bad": int(totals["bad"]),
            "first_bad": first_bad}


def agent_descriptions(store: StoreConnection) -> list[dict[str, Any]]:
    """Every agent with its name and description (for cold start by description)."""
    return store.query("""
        SELECT agent_id, any_value(agent_name) AS agent_name,
               max(json_extract_string(agent, '$.description')) AS description
        FROM experiments GROUP BY agent_id ORDER BY agent_id""")


def _ensure(store: StoreConnection) -> None:
    store.con.execute(DDL)


def _exists(store: StoreConnection) -> bool:
    rows = store.query("SELECT count(*) AS n FROM information_schema.tables "
                       "WHERE table_name = 'atlas_fits'")
    return bool(rows and rows[0]["n"])


def _dump(value: Any) -> str:
    return json.dumps(json_safe(value), allow_nan=False, ensure_ascii=False)


def save_fit(store: StoreConnection, fit: dict[str, Any]) -> None:
    """Store a fit given as its ``to_dict()`` envelope, in one transaction."""
    _ensure(store)
    fid = fit["fit_id"]
    rows = ("agents", "items", "diagnostics", "coverage", "drifted_tasks", "notes")
    settings = {k: v for k, v in fit.items() if k not in rows}
    bench = settings.get("benchmark")
    bench_key = ",".join(sorted(bench)) if bench else None
    now = _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
    con = store.con
    con.execute("BEGIN TRANSACTION")
    try:
        for t in TABLES:
            con.execute(f"DELETE FROM {t} WHERE fit_id = ?", [fid])
        con.execute("INSERT INTO atlas_fits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [
            fid, now, settings.get("model"), settings.get("cell"), bench_key,
            _dump(settings), _dump(fit.get("diagnostics", {})), _dump(fit.get("drifted_tasks", [])),
            _dump(fit.get("notes", []))])
        _insert(store, "atlas_abilities", [
            (fid, r["agent_id"], r["agent"], r["ability"], r["ability_se"], _dump(r))
            for r in fit.get("agents", [])])
        _insert(store, "atlas_items", [
            (fid, r["benchmark"], r["task_id"], r["task_version_hash"], r["difficulty"],
             r["discrimination"], _dump(r)) for r in fit.get("items", [])])
        _insert(store, "atlas_coverage", [
            (fid, r["agent_id"], r["benchmark"], _dump(r)) for r in fit.get("coverage", [])])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def _insert(store: StoreConnection, table: str, rows: list[tuple]) -> None:
    if not rows:
        return
    cols = [r[0] for r in store.con.execute(f"DESCRIBE {table}").fetchall()]
    data = {c: [r[i] for r in rows] for i, c in enumerate(cols)}
    tbl = pa.table(data)
    name = f"_evalatlas_{table}_batch"
    store.con.register(name, tbl)
    try:
        store.con.execute(f"INSERT INTO {table} SELECT {', '.join(cols)} FROM {name}")
    finally:
        store.con.unregister(name)


def latest_fit_id(store: StoreConnection, *, benchmark: list[str] | None = None,
                  model: str | None = None, cell: str | None = None) -> str | None:
    """The most recent fit with exactly this benchmark filter (and model/cell if given)."""
    if not _exists(store):
        return None
    bench_key = ",".join(sorted(benchmark)) if benchmark else None
    sql = "SELECT fit_id FROM atlas_fits WHERE benchmark IS NOT DISTINCT FROM ?"
    params: list[Any] = [bench_key]
    if model:
        sql += " AND model = ?"
        params.append(model)
    if cell:
        sql += " AND cell = ?"
        params.append(cell)
    rows = store.query(sql + " ORDER BY created_at DESC, fit_id LIMIT 1", params)
    return rows[0]["fit_id"] if rows else None


def load_fit(store: StoreConnection, fit_id: str) -> dict[str, Any] | None:
    """A stored fit as its ``to_dict()`` envelope, or None."""
    if not _exists(store):
        return None
    head = store.query("SELECT * FROM atlas_fits WHERE fit_id = ?", [fit_id])
    if not head:
        return None
    h = head[0]
    out: dict[str, Any] = {**json.loads(h["settings"])}
    out["agents"] = [json.loads(r["row"]) for r in store.query(
        "SELECT row FROM atlas_abilities WHERE fit_id = ? ORDER BY ability DESC, agent",
        [fit_id])]
    out["items"] = [json.loads(r["row"]) for r in store.query(
        "SELECT row FROM atlas_items WHERE fit_id = ? "
        "ORDER BY benchmark, difficulty, task_id", [fit_id])]
    out["diagnostics"] = json.loads(h["diagnostics"])
    out["coverage"] = [json.loads(r["row"]) for r in store.query(
        "SELECT row FROM atlas_coverage WHERE fit_id = ? ORDER BY agent_id, benchmark",
        [fit_id])]
    out["drifted_tasks"] = json.loads(h["drift"])
    notes = json.loads(h["notes"]) if h["notes"] else []
    if notes:
        out["notes"] = notes
    out["created_at"] = h["created_at"].isoformat() if h["created_at"] else None
    return out
