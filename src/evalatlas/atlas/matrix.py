"""The agent x task response matrix, sparse and long: one cell per (agent, item) observed.

Rows are agents (``agent_id``, shown by name); columns are items
``(benchmark, task_id, task_version_hash)``: a task whose config changed is a different
item (seed 002: "the records cannot be naively merged"). Cells:

- ``success``: binomial ``k`` successes of ``n`` attempts (several attempts of one task
  by one agent are k of n, not a mean); episodes with an unknown outcome are left out;
- ``reward``: ``k`` = summed reward, ``n`` = attempts, each reward in [0, 1] (the IRT
  models link its expectation with a logit; see :mod:`evalatlas.atlas.irt`). Rewards
  outside [0, 1] are refused rather than clipped.

The matrix is never materialised dense unless asked, and then only below
:data:`DENSE_LIMIT` cells: real matrices are 1-70% observed and can have 10^8 slots.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from evalatlas.atlas.errors import AtlasError, DriftError
from evalatlas.atlas.irt import Cells

CellKind = Literal["success", "reward"]
DriftMode = Literal["split", "merge", "refuse"]
DENSE_LIMIT = 5_000_000
"""Largest agents x items array :meth:`ResponseMatrix.dense` builds (40 MB of float64)."""

EPISODE_COLUMNS = ("agent_id", "agent_name", "agent_description", "benchmark", "n_tasks",
                   "task_id", "task_version_hash", "success", "reward")
"""Columns :func:`build_matrix` reads from an episodes frame (one row per episode)."""


@dataclass
class ResponseMatrix:
    """Observed cells plus the labels of their rows and columns."""

    cell: CellKind
    agent_ids: list[str]
    agent_names: list[str]
    agent_descriptions: list[str | None]
    item_benchmark: list[str]
    item_task_id: list[str]
    item_hash: list[str | None]
    cells: Cells
    coverage: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    episodes_used: int = 0
    episodes_unknown_outcome: int = 0

    @property
    def n_agents(self) -> int:
        return len(self.agent_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_task_id)

    def long_rows(self) -> Iterator[dict[str, Any]]:
        """One dict per observed cell: the long format of ``atlas matrix``."""
        c = self.cells
        for a, j, k, n in zip(c.agent.tolist(), c.item.tolist(), c.k.tolist(), c.n.tolist(),
                              strict=True):
            yield {"agent": self.agent_names[a], "agent_id": self.agent_ids[a],
                   "benchmark": self.item_benchmark[j], "task_id": self.item_task_id[j],
                   "task_version_hash": self.item_hash[j], "cell": self.cell,
                   "k": k, "n": n, "value": k / n}

    LONG_COLUMNS: ClassVar[tuple[str, ...]] = ("agent", "agent_id", "benchmark", "task_id",
                                              "task_version_hash", "cell", "k", "n",
                                              "value")

    def write(self, path: str | Path) -> int:
        """Write :meth:`long_rows` to ``path``: Parquet when it ends in ``.parquet``, else
        CSV (formulas neutralised, CR/LF quoted, credentials in names redacted). Returns
        the number of cells written (``evalatlas atlas matrix -o``)."""
        from evalatlas.records.redact import redact_text
        from evalatlas.safe_write import open_output, temp_path
        from evalatlas.text import csv_line

        path = Path(path)
        rows = list(self.long_rows())
        cols = list(self.LONG_COLUMNS)
        if path.suffix.lower() == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            with temp_path(path) as tmp:  # whole or not at all (evalatlas.safe_write)
                pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table(
                    {c: pa.array([], pa.string()) for c in cols}), tmp)
            return len(rows)
        with open_output(path, newline="") as fh:
            fh.write(csv_line(cols))
            for r in rows:
                fh.write(csv_line(redact_text(r[k]) if isinstance(r[k], str) else r[k]
                                  for k in cols))
        return len(rows)

    def dense(self, limit: int = DENSE_LIMIT) -> np.ndarray:
        """agents x items float array of k/n with NaN for unobserved; small matrices only."""
        size = self.n_agents * self.n_items
        if size > limit:
            raise AtlasError(f"a dense {self.n_agents} x {self.n_items} matrix has {size:,} "
                             f"cells, over the limit of {limit:,}; use the long format")
        out = np.full((self.n_agents, self.n_items), np.nan)
        out[self.cells.agent, self.cells.item] = self.cells.k / self.cells.n
        return out


_ALIASES = {"benchmark": "benchmark_name", "n_tasks": "subset_n_tasks",
            "agent_description": "description"}
"""Other names the same column has in store frames (``ea.open().episodes()``)."""


def _names(frame: Any) -> set[str]:
    if isinstance(frame, Mapping):
        return set(frame)
    if hasattr(frame, "column_names"):
        return set(frame.column_names)
    return set(frame.columns)


def _column(frame: Any, name: str, length: int | None = None) -> list[Any]:
    """A column as a Python list, from a dict of sequences, a pyarrow table or pandas."""
    if name not in _names(frame) and _ALIASES.get(name) in _names(frame):
        name = _ALIASES[name]
    if isinstance(frame, Mapping):
        if name not in frame:
            if length is not None:
                return [None] * length
            raise AtlasError(f"episodes frame has no column {name!r}")
        col = frame[name]
    elif hasattr(frame, "column_names"):  # pyarrow.Table
        if name not in frame.column_names:
            if length is not None:
                return [None] * length
            raise AtlasError(f"episodes frame has no column {name!r}")
        return frame.column(name).to_pylist()
    else:  # pandas.DataFrame
        if name not in frame.columns:
            if length is not None:
                return [None] * length
            raise AtlasError(f"episodes frame has no column {name!r}")
        col = frame[name]
        return [None if _is_nan(v) else v for v in col.tolist()]
    return [None if _is_nan(v) else v for v in (col.tolist() if hasattr(col, "tolist")
                                                 else list(col))]


def _is_nan(v: Any) -> bool:
    """A missing value of a frame: NaN, or pandas' ``<NA>`` (nullable and Arrow-backed
    columns of ``store.episodes()``), told apart without importing pandas."""
    return (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType"


def find_drift(
    benchmarks: Sequence[str], task_ids: Sequence[str], hashes: Sequence[str | None],
    agent_names: Sequence[str],
) -> list[dict[str, Any]]:
    """Tasks seen with more than one ``task_version_hash`` (a missing hash counts as one
    value, ``null``: it cannot be shown to be the same version), with the agents on each
    side. Rows: ``benchmark``, ``task_id``, ``hashes`` = [{``task_version_hash``,
    ``agents``}], sorted by benchmark and task."""
    seen: dict[tuple[str, str], dict[str | None, set[str]]] = {}
    for b, t, h, a in zip(benchmarks, task_ids, hashes, agent_names, strict=True):
        seen.setdefault((b, t), {}).setdefault(h, set()).add(a)
    rows = []
    for (b, t), by_hash in sorted(seen.items()):
        if len(by_hash) > 1:
            rows.append({"benchmark": b, "task_id": t, "hashes": [
                {"task_version_hash": h, "agents": sorted(agents)}
                for h, agents in sorted(by_hash.items(), key=lambda kv: (kv[0] is None,
                                                                         kv[0] or ""))]})
    return rows


def check_kinds(cell: str, drift: str) -> None:
    """An :class:`AtlasError` for an unknown cell kind or drift mode."""
    if cell not in ("success", "reward"):
        raise AtlasError(f"unknown cell kind {cell!r}; use success or reward")
    if drift not in ("split", "merge", "refuse"):
        raise AtlasError(f"unknown drift mode {drift!r}; use split, merge or refuse")


def build_matrix(
    frame: Any,
    *,
    cell: CellKind = "success",
    drift: DriftMode = "split",
    benchmark: Sequence[str] | str | None = None,
) -> ResponseMatrix:
    """Aggregate an episodes frame (columns :data:`EPISODE_COLUMNS`; ``benchmark_name``
    and ``subset_n_tasks`` are accepted for ``benchmark`` and ``n_tasks``, so the frame of
    ``ea.open(...).episodes()`` works) into cells.

    ``drift``: ``split`` (default) keeps each task version a separate item; ``merge``
    pools versions into one item per task (``task_version_hash`` null); ``refuse``
    raises :class:`DriftError` listing the drifted tasks.
    ``benchmark`` keeps only those benchmarks.
    """
    check_kinds(cell, drift)
    agent_id = [str(v) for v in _column(frame, "agent_id")]
    n = len(agent_id)
    names = _column(frame, "agent_name", n)
    descr = _column(frame, "agent_description", n)
    bench = [str(v) if v is not None else "(unknown)" for v in _column(frame, "benchmark")]
    n_tasks = _column(frame, "n_tasks", n)
    task = [str(v) for v in _column(frame, "task_id")]
    hashes = [None if v is None else str(v) for v in _column(frame, "task_version_hash", n)]
    success = _column(frame, "success", n)
    reward = _column(frame, "reward", n)
    keep = list(range(n))
    if benchmark is not None:
        wanted = {benchmark} if isinstance(benchmark, str) else set(benchmark)
        keep = [i for i in keep if bench[i] in wanted]
    unknown = 0
    rows: list[int] = []
    values: list[float] = []
    bad_reward: list[float] = []
    for i in keep:
        if cell == "success":
            v = success[i]
            if v is None:
                r = reward[i]
                v = None if r is None else r > 0
            if v is None:
                unknown += 1
                continue
            rows.append(i)
            values.append(1.0 if v else 0.0)
        else:
            r = reward[i]
            if r is None:
                unknown += 1
                continue
            r = float(r)
            if not (0.0 <= r <= 1.0):
                bad_reward.append(r)
                continue
            rows.append(i)
            values.append(r)
    if bad_reward:
        raise AtlasError(f"{len(bad_reward)} episode(s) have a reward outside [0, 1] (e.g. "
                         f"{bad_reward[0]!r}); --cell reward needs rewards in [0, 1]; "
                         "use --cell success")
    display: dict[str, str] = {}
    for i in rows:
        display.setdefault(agent_id[i], names[i] or agent_id[i][:12])
    drift_rows = find_drift([bench[i] for i in rows], [task[i] for i in rows],
                            [hashes[i] for i in rows], [display[agent_id[i]] for i in rows])
    if drift == "refuse" and drift_rows:
        raise DriftError(drift_rows)
    agents: dict[str, int] = {}
    items: dict[tuple[str, str, str | None], int] = {}
    a_idx = np.empty(len(rows), dtype=np.int64)
    i_idx = np.empty(len(rows), dtype=np.int64)
    agent_descr: dict[str, str | None] = {}
    for pos, i in enumerate(rows):
        a = agents.setdefault(agent_id[i], len(agents))
        if descr[i] and not agent_descr.get(agent_id[i]):
            agent_descr[agent_id[i]] = str(descr[i])
        key = (bench[i], task[i], None if drift == "merge" else hashes[i])
        a_idx[pos] = a
        i_idx[pos] = items.setdefault(key, len(items))
    N, M = len(agents), len(items)
    code = a_idx * max(M, 1) + i_idx
    uniq, inv = np.unique(code, return_inverse=True)
    vals = np.asarray(values, dtype=np.float64)
    k = np.bincount(inv, vals, uniq.size)
    cnt = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    cells = Cells(uniq // max(M, 1), uniq % max(M, 1), k, cnt, N, M)
    ids = list(agents)
    keys = list(items)
    return ResponseMatrix(
        cell=cell, agent_ids=ids, agent_names=[display[a] for a in ids],
        agent_descriptions=[agent_descr.get(a) for a in ids],
        item_benchmark=[k_[0] for k_ in keys], item_task_id=[k_[1] for k_ in keys],
        item_hash=[k_[2] for k_ in keys], cells=cells,
        coverage=_coverage(rows, agent_id, display, bench, task, n_tasks),
        drift=drift_rows, episodes_used=len(rows), episodes_unknown_outcome=unknown,
    )


def matrix_from_store_cells(agg: dict[str, Any], *, cell: CellKind = "success",
                            drift: DriftMode = "split") -> ResponseMatrix:
    """The :class:`ResponseMatrix` of :func:`build_matrix` from counts the store already
    aggregated (:func:`evalatlas.store.atlas.matrix_cells`): the same agents, items,
    cells, coverage and drift rows, in the same order, without a Python row per
    episode or per cell. A reward cell's ``k`` is summed in DuckDB: equal to
    build_matrix's up to float rounding in the last digits (success cells are exact).

    The store's counts are per (agent code, benchmark's task version) in no order; here
    they get their agent's and item's index (a lookup array each), are sorted by
    (agent, item) and, where versions are pooled into one item (``drift='merge'``),
    summed per cell. Coverage counts each agent's distinct tasks per benchmark."""
    if agg["bad"]:
        raise AtlasError(f"{agg['bad']} episode(s) have a reward outside [0, 1] (e.g. "
                         f"{agg['first_bad']!r}); --cell reward needs rewards in [0, 1]; "
                         "use --cell success")
    ids = [str(r["agent_id"]) for r in agg["agents"]]
    display = {str(r["agent_id"]): r["agent_name"] or str(r["agent_id"])[:12]
               for r in agg["agents"]}
    drift_rows = find_drift([r["benchmark"] for r in agg["drift_rows"]],
                            [str(r["task_id"]) for r in agg["drift_rows"]],
                            [r["task_version_hash"] for r in agg["drift_rows"]],
                            [display[str(r["agent_id"])] for r in agg["drift_rows"]])
    if drift == "refuse" and drift_rows:
        raise DriftError(drift_rows)
    n_agents, n_items = len(ids), len(agg["items"])
    cells, tasks_run = _store_cells(agg, n_agents, n_items)
    n_tasks = {(str(r["agent_id"]), r["benchmark"]): r["n_tasks"] for r in agg["n_tasks"]}
    coverage = []
    for (a, b), run in sorted(tasks_run.items(), key=lambda kv: (display[ids[kv[0][0]]],
                                                                 agg["benchmarks"][kv[0][1]])):
        agent_id, bench = ids[a], agg["benchmarks"][b]
        nt = n_tasks.get((agent_id, bench))
        nt = int(nt) if nt is not None else None
        coverage.append({"agent": display[agent_id], "agent_id": agent_id,
                         "benchmark": bench, "tasks_run": run, "n_tasks": nt,
                         "coverage": None if not nt else min(1.0, run / nt)})
    return ResponseMatrix(
        cell=cell, agent_ids=ids, agent_names=[display[a] for a in ids],
        agent_descriptions=[r["agent_description"] or None for r in agg["agents"]],
        item_benchmark=[r["benchmark"] for r in agg["items"]],
        item_task_id=[str(r["task_id"]) for r in agg["items"]],
        item_hash=[r["item_hash"] for r in agg["items"]], cells=cells,
        coverage=coverage, drift=drift_rows, episodes_used=agg["used"],
        episodes_unknown_outcome=agg["unknown"])


def _store_cells(agg: dict[str, Any], n_agents: int, n_items: int
                 ) -> tuple[Cells, dict[tuple[int, int], int]]:
    """The cells of the store's counts (see :func:`matrix_from_store_cells`), and per
    (agent index, benchmark index) the number of distinct tasks run."""
    counts, versions = agg["counts"], agg["versions"]
    codes = np.asarray([r["a"] for r in agg["agents"]], dtype=np.int64)  # increasing
    agent = np.searchsorted(codes, np.asarray(counts["a"], dtype=np.int64))
    bv = np.asarray(versions["bv"], dtype=np.int64)
    size = int(bv.max()) + 1 if bv.size else 0
    item_of = np.full(size, -1, dtype=np.int64)
    item_of[bv] = np.asarray(versions["i"], dtype=np.int64)
    item = item_of[np.asarray(counts["bv"], dtype=np.int64)]
    m = max(n_items, 1)
    code = agent * m + item
    order = np.argsort(code, kind="stable")
    code = code[order]
    starts = _starts(code)
    # one row per (agent, version): a cell is one row unless versions are pooled
    k = np.asarray(counts["k"], dtype=np.float64)[order]
    n = np.asarray(counts["n"], dtype=np.float64)[order]
    if starts.size != code.size:
        k, n = np.add.reduceat(k, starts), np.add.reduceat(n, starts)
    cell_code = code[starts]
    cells = Cells(cell_code // m, cell_code % m, k, n, n_agents, n_items)
    # distinct tasks per (agent, benchmark): an item's benchmark and task
    bench_of = np.zeros(n_items, dtype=np.int64)
    task_of = np.zeros(n_items, dtype=np.int64)
    bench_of[np.asarray(versions["i"], dtype=np.int64)] = np.asarray(versions["b"], dtype=np.int64)
    task_of[np.asarray(versions["i"], dtype=np.int64)] = np.asarray(versions["t"], dtype=np.int64)
    n_b = len(agg["benchmarks"])
    n_t = int(task_of.max()) + 1 if task_of.size else 1
    group = cells.agent * n_b + bench_of[cells.item]
    pairs = _distinct(np.sort(group * n_t + task_of[cells.item]))
    groups = pairs // n_t  # sorted
    first = _starts(groups)
    run = np.diff(np.r_[first, groups.size])
    tasks_run = {(int(g) // n_b, int(g) % n_b): int(r)
                 for g, r in zip(groups[first].tolist(), run.tolist(), strict=True)}
    return cells, tasks_run


def _starts(sorted_codes: np.ndarray) -> np.ndarray:
    """Where each run of equal values of a sorted array starts (np.unique's hash path
    took seconds for 10^6 codes; a sorted array needs one comparison per value)."""
    if sorted_codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])


def _distinct(sorted_codes: np.ndarray) -> np.ndarray:
    return sorted_codes[_starts(sorted_codes)]


def _coverage(rows: list[int], agent_id: list[str], display: dict[str, str],
              bench: list[str], task: list[str], n_tasks: list[Any]) -> list[dict[str, Any]]:
    """Per (agent, benchmark): distinct tasks run vs the benchmark's ``n_tasks`` (the
    largest ``benchmark_subset.n_tasks`` among the agent's experiments on it)."""
    tasks: dict[tuple[str, str], set[str]] = {}
    denom: dict[tuple[str, str], int | None] = {}
    for i in rows:
        key = (agent_id[i], bench[i])
        tasks.setdefault(key, set()).add(task[i])
        nt = n_tasks[i]
        if nt is not None:
            denom[key] = max(int(nt), denom.get(key) or 0)
        else:
            denom.setdefault(key, None)
    out = []
    for (a, b), ts in sorted(tasks.items(), key=lambda kv: (display[kv[0][0]], kv[0][1])):
        nt = denom.get((a, b))
        out.append({"agent": display[a], "agent_id": a, "benchmark": b,
                    "tasks_run": len(ts), "n_tasks": nt,
                    "coverage": None if not nt else min(1.0, len(ts) / nt)})
    return out


def matrix_from_cells(cells: Cells, *, cell: CellKind = "success",
                      benchmark: str = "synthetic") -> ResponseMatrix:
    """Wrap bare cells (simulations, published matrices) with generated labels."""
    return ResponseMatrix(
        cell=cell, agent_ids=[f"agent-{i}" for i in range(cells.n_agents)],
        agent_names=[f"agent-{i}" for i in range(cells.n_agents)],
        agent_descriptions=[None] * cells.n_agents,
        item_benchmark=[benchmark] * cells.n_items,
        item_task_id=[f"task-{j}" for j in range(cells.n_items)],
        item_hash=[None] * cells.n_items, cells=cells,
        episodes_used=int(cells.n.sum()))
