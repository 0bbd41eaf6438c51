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
    description, ``a`` its code; in agent_id order, the codes increasing), ``items``
    (benchmark, task_id, task_version_hash, or None under ``drift='merge'``; in order of
    first appearance), ``versions`` (arrays: ``bv`` a benchmark's task version, ``i``
    its item, ``b`` its benchmark's index in ``benchmarks``, ``t`` its task's code),
    ``counts`` (arrays ``a``, ``bv``, ``k``, ``n``: one row per agent and task version
    with a used episode, in no particular order), ``benchmarks``, ``n_tasks`` rows
    (agent_id, benchmark, the largest ``subset_n_tasks`` of its experiments with a used
    episode there), ``drift_rows`` (benchmark, task_id, task_version_hash, agent_id of
    every task seen under several hashes), ``used``, ``unknown``, ``bad`` (rewards
    outside [0, 1]) and ``first_bad``.

    How (the cost is two scans of the episodes, whatever else is stored): the first
    collects the experiments and the (task, version) pairs the episodes name, a few
    thousand of each; they are numbered (agents in agent_id order, benchmarks, versions)
    and the second scan counts each episode into one integer key per (agent, benchmark,
    task version), the agent x task cell before versions are merged or split: 10M keys
    at 100M episodes, where grouping by the three text columns spilled out of the memory
    limit (112 CPU s for that one query). Everything after works on those counts and on
    the small tables. An agent with experiments of different names or descriptions is
    named after the experiment of its first used episode, found by a third scan of only
    those experiments' episodes."""
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
    tables = ("d", "x", "ag", "bn", "vd", "xk", "vc", "ex", "ax", "xf", "v", "items", "vi",
              "agents")
    try:
        # scan 1: the experiments and the task versions the episodes name
        con.execute(f"""
            CREATE TEMP TABLE {tag}_d AS
            SELECT experiment_id, task_id, task_version_hash,
                   grouping(experiment_id) AS versions, count(*) FILTER (WHERE {kept}) AS n
            FROM episodes e
            GROUP BY GROUPING SETS ((experiment_id), (task_id, task_version_hash))""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_x AS
            SELECT u.experiment_id, coalesce(x.agent_id, '?' || u.experiment_id) AS agent_id,
                   coalesce(x.agent_name, '(no experiment record)') AS agent_name,
                   json_extract_string(x.agent, '$.description') AS agent_description,
                   coalesce(x.benchmark_name, '(unknown)') AS benchmark,
                   x.subset_n_tasks AS n_tasks, u.n
            FROM (SELECT experiment_id, n FROM {tag}_d WHERE versions = 0) u
            LEFT JOIN experiments x USING (experiment_id)
            {where}""", params)
        con.execute(f"CREATE TEMP TABLE {tag}_ag AS SELECT agent_id, "
                    f"(row_number() OVER (ORDER BY agent_id) - 1)::BIGINT AS a "
                    f"FROM (SELECT DISTINCT agent_id FROM {tag}_x)")
        con.execute(f"CREATE TEMP TABLE {tag}_bn AS SELECT benchmark, "
                    f"(row_number() OVER (ORDER BY benchmark) - 1)::BIGINT AS b "
                    f"FROM (SELECT DISTINCT benchmark FROM {tag}_x)")
        con.execute(f"CREATE TEMP TABLE {tag}_vd AS SELECT task_id, task_version_hash, "
                    f"(row_number() OVER (ORDER BY task_id, task_version_hash) - 1)::BIGINT "
                    f"AS v, dense_rank() OVER (ORDER BY task_id) AS t "
                    f"FROM {tag}_d WHERE versions = 1")
        n_b = max(1, store.count(f"{tag}_bn"))
        n_v = max(1, store.count(f"{tag}_vd"))
        n_bv = n_b * n_v
        # key = a * n_bv + b * n_v + v: the (agent, benchmark, task version) of an
        # episode; key % n_bv numbers a benchmark's task version, key // n_bv its agent
        con.execute(f"""
            CREATE TEMP TABLE {tag}_xk AS
            SELECT x.experiment_id, ag.a * {n_bv} + bn.b * {n_v} AS base
            FROM {tag}_x x JOIN {tag}_ag ag USING (agent_id) JOIN {tag}_bn bn USING (benchmark)
            """)
        # scan 2: the counts per key
        con.execute(f"""
            CREATE TEMP TABLE {tag}_vc AS
            SELECT xk.base + vd.v AS key,
                   count(*) FILTER (WHERE {kept}) AS n,
                   sum({value}) FILTER (WHERE {kept}) AS k,
                   count(*) FILTER (WHERE {unknown}) AS unknown,
                   count(*) FILTER (WHERE NOT ({kept}) AND NOT ({unknown})) AS bad
            FROM episodes e JOIN {tag}_xk xk USING (experiment_id)
            JOIN {tag}_vd vd ON vd.task_id IS NOT DISTINCT FROM e.task_id
                 AND vd.task_version_hash IS NOT DISTINCT FROM e.task_version_hash
            GROUP BY key""")
        totals = store.query(f"SELECT coalesce(sum(n), 0) AS used, "
                             f"coalesce(sum(unknown), 0) AS unknown, "
                             f"coalesce(sum(bad), 0) AS bad FROM {tag}_vc")[0]
        # the experiments with a used episode; agents whose name or description differs
        # between them get the sort key of each one's first used episode (scan 3, of
        # their episodes only)
        con.execute(f"""
            CREATE TEMP TABLE {tag}_ex AS
            SELECT * FROM {tag}_x WHERE n > 0""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_ax AS
            SELECT experiment_id FROM {tag}_ex WHERE agent_id IN (
                SELECT agent_id FROM {tag}_ex GROUP BY agent_id
                HAVING count(DISTINCT agent_name) > 1
                    OR count(DISTINCT nullif(agent_description, '')) > 1)""")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_xf AS
            SELECT e.experiment_id,
                   min({{'t0': e.task_id IS NULL, 't': e.task_id,
                        'h0': e.task_version_hash IS NULL, 'h': e.task_version_hash,
                        'f0': e.trajectory_id IS NULL, 'f': e.trajectory_id}}) AS first_key
            FROM episodes e SEMI JOIN {tag}_ax USING (experiment_id)
            WHERE {kept} GROUP BY e.experiment_id""")
        order = "ex.benchmark, xf.first_key"
        con.execute(f"""
            CREATE TEMP TABLE {tag}_agents AS
            SELECT ex.agent_id, first(ex.agent_name ORDER BY {order}) AS agent_name,
                   first(ex.agent_description ORDER BY {order})
                     FILTER (WHERE ex.agent_description <> '') AS agent_description,
                   any_value(ag.a) AS a,
                   row_number() OVER (ORDER BY ex.agent_id) AS agent
            FROM {tag}_ex ex JOIN {tag}_ag ag USING (agent_id)
            LEFT JOIN {tag}_xf xf USING (experiment_id)
            GROUP BY ex.agent_id""")
        agents = store.query(f"SELECT agent_id, agent_name, agent_description, a "
                             f"FROM {tag}_agents ORDER BY agent")
        # the task versions used, by benchmark; items in order of first appearance in
        # (agent_id, benchmark, task, version) order, versions pooled under merge
        con.execute(f"""
            CREATE TEMP TABLE {tag}_v AS
            SELECT key % {n_bv} // {n_v} AS b, key % {n_v} AS v, min(key // {n_bv}) AS first_a
            FROM {tag}_vc WHERE n > 0 GROUP BY ALL""")
        item_hash = "NULL::VARCHAR" if drift == "merge" else "vd.task_version_hash"
        con.execute(f"""
            CREATE TEMP TABLE {tag}_items AS
            SELECT bn.benchmark, vd.task_id, {item_hash} AS item_hash,
                   (row_number() OVER (ORDER BY min(v.first_a), bn.benchmark, vd.task_id,
                                       {item_hash}) - 1)::INTEGER AS i
            FROM {tag}_v v JOIN {tag}_bn bn USING (b) JOIN {tag}_vd vd USING (v)
            GROUP BY 1, 2, 3""")
        items = store.query(f"SELECT benchmark, task_id, item_hash FROM {tag}_items "
                            "ORDER BY i")
        same_item = ("" if drift == "merge" else
                     " AND it.item_hash IS NOT DISTINCT FROM vd.task_version_hash")
        con.execute(f"""
            CREATE TEMP TABLE {tag}_vi AS
            SELECT v.b * {n_v} + v.v AS bv, v.b, vd.t, it.i
            FROM {tag}_v v JOIN {tag}_bn bn USING (b) JOIN {tag}_vd vd USING (v)
            JOIN {tag}_items it ON it.benchmark = bn.benchmark
                 AND it.task_id IS NOT DISTINCT FROM vd.task_id{same_item}""")
        versions = con.execute(f"SELECT bv, i, b, t FROM {tag}_vi").fetchnumpy()
        # the counts as they are (no join, no sort: numbered and ordered in numpy by
        # atlas.matrix.matrix_from_store_cells)
        counts = con.execute(f"SELECT key // {n_bv} AS a, key % {n_bv} AS bv, k, "
                             f"n::DOUBLE AS n FROM {tag}_vc WHERE n > 0").fetchnumpy()
        benchmarks = [r["benchmark"] for r in store.query(
            f"SELECT benchmark FROM {tag}_bn ORDER BY b")]
        n_tasks = store.query(f"SELECT agent_id, benchmark, max(n_tasks) AS n_tasks "
                              f"FROM {tag}_ex GROUP BY ALL")
        drifted = (f"SELECT bv, b FROM {tag}_vi WHERE (b, t) IN (SELECT (b, t) FROM "
                   f"{tag}_vi GROUP BY b, t HAVING count(*) > 1)")
        drift_rows = [] if not store.query(f"SELECT 1 AS x FROM ({drifted}) LIMIT 1") else \
            store.query(f"""
            SELECT DISTINCT bn.benchmark, vd.task_id, vd.task_version_hash, ag.agent_id
            FROM {tag}_vc vc
            JOIN ({drifted}) d ON d.bv = vc.key % {n_bv}
            JOIN {tag}_vd vd ON vd.v = vc.key % {n_v}
            JOIN {tag}_bn bn ON bn.b = d.b
            JOIN {tag}_agents ag ON ag.a = vc.key // {n_bv}
            WHERE vc.n > 0""")
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
        for t in tables:
            con.execute(f"DROP TABLE IF EXISTS {tag}_{t}")
    return {"agents": agents, "items": items, "versions": versions, "counts": counts,
            "benchmarks": benchmarks, "n_tasks": n_tasks, "drift_rows": drift_rows,
            "used": int(totals["used"]), "unknown": int(totals["unknown"]),
            "bad": int(totals["bad"]), "first_bad": first_bad}


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
