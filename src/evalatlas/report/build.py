"""Gather everything the HTML report shows, as one JSON-ready dict (no HTML here).

Every number comes from the functions the CLI uses (summary, outcome summary, paired
comparison, tiers, speedups, framework report) or from :mod:`evalatlas.metrics` /
:mod:`evalatlas.stats`; this module selects, groups and sizes. Sizes matter because the
report is one file: the agent x task heatmap is aggregated into task bins above
``max_cells`` cells, the paired matrix covers the best ``max_matrix_agents`` agents, and
the per-task drill-down covers at most ``max_drill_episodes`` episodes and
``text_budget`` characters of agent text. Each cut is said in the section's ``notes``.

Layout of the result (``schema`` ``evalatlas.report/1``)::

    {title, generated, confidence, alpha, group_by, notes, published, decision,
     sections: [{id, title, benchmark, benchmark_size, leaderboard, pairs, heatmap,
                 ability, drill, notes}],
     tiers, speedups, frameworks, failures}
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from evalatlas._version import __version__
from evalatlas.analysis.summary import SummaryResult
from evalatlas.compose.frameworks import framework_data_of
from evalatlas.compose.speedups import speedups_of
from evalatlas.compose.summary import summary_of
from evalatlas.compose.task_matrix import TaskMatrix, paired_matrix, task_matrix
from evalatlas.compose.tiers import tiers_of
from evalatlas.metrics.pareto import pareto_frontier
from evalatlas.report.decision import decision_summary
from evalatlas.report.failures import failures_data
from evalatlas.report.frameworks import framework_comparison as build_framework_report
from evalatlas.report.names import display_name, full_name, unique_labels
from evalatlas.store.catalog import experiment_catalog
from evalatlas.store.db import StoreConnection
from evalatlas.store.queries import group_expr
from evalatlas.store.task_cells import drill_episodes
from evalatlas.text import json_safe

SCHEMA = "evalatlas.report/1"


@dataclass(frozen=True)
class ReportOptions:
    """What to report and how much of it fits in one file."""

    title: str = "evalatlas report"
    by: str = "agent"
    experiment: tuple[str, ...] | None = None
    confidence: float = 0.95
    alpha: float = 0.05
    max_cells: int = 30_000
    max_heat_agents: int = 200
    max_board_rows: int = 500
    max_matrix_agents: int = 20
    max_drill_episodes: int = 30_000
    text_limit: int = 160
    text_budget: int = 120_000
    sections_per_benchmark: bool = True


def _f(x: Any) -> float | None:
    """A finite float or None (NaN, None and infinities are not plottable numbers)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# --- leaderboard ---------------------------------------------------------------------


def leaderboard_result(store: StoreConnection, by: str, ids: Sequence[str] | None,
                       confidence: float) -> SummaryResult:
    """``evalatlas summary --by BY`` for these experiments: the one composition
    (:func:`evalatlas.compose.summary.summary_of`) the CLI and ``ea.summary`` use, so the
    report's leaderboard has the summary's rows and numbers by construction (ranked by
    success rate, a row per benchmark for an agent that ran several, run status,
    published headline, cost per episode and per success with intervals)."""
    if ids is not None and not ids:
        return SummaryResult(rows=[])
    return summary_of(store, [by], experiment=list(ids) if ids is not None else None,
                      confidence=confidence)


# --- per (group, task) aggregates ----------------------------------------------------


@dataclass
class _Cells(TaskMatrix):
    """The matrix with what the page shows for its rows and columns."""

    labels: list[str] = dataclasses.field(default_factory=list)  # visible, short, unique
    task_labels: list[str] = dataclasses.field(default_factory=list)  # (names.py)


def _cells(store: StoreConnection, by: str, ids: Sequence[str] | None) -> _Cells:
    m = task_matrix(store, by, ids)
    return _Cells(**{f.name: getattr(m, f.name) for f in dataclasses.fields(TaskMatrix)},
                  labels=unique_labels(m.names, m.keys),
                  task_labels=unique_labels(m.tasks, [str(i) for i in range(len(m.tasks))]))


# --- paired comparisons --------------------------------------------------------------


def _pairs(cells: _Cells, order: list[int], opts: ReportOptions) -> dict[str, Any]:
    """Paired comparison (A - B on shared tasks, Holm-adjusted) among the top agents:
    :func:`evalatlas.compose.task_matrix.paired_matrix`, ``evalatlas compare``'s pair
    rule and Holm adjustment on the per-task success rates."""
    limit = opts.max_matrix_agents
    chosen = order[:limit]
    notes = []
    if len(order) > len(chosen):
        notes.append(f"paired comparisons cover the {len(chosen)} agents with the highest "
                     f"success rate (of {len(order)})")
    label = dict(zip(cells.keys, cells.labels, strict=True))
    rows = [{"a": label[r["a_key"]], "b": label[r["b_key"]], **r}
            for r in paired_matrix(cells, chosen, confidence=opts.confidence,
                                   alpha=opts.alpha)]
    return {"agents": [cells.labels[g] for g in chosen], "rows": rows, "notes": notes}


# --- ordering: ATLAS fit when available, else success rates --------------------------


def _atlas_fit(store: StoreConnection, cells: _Cells, by: str, benchmark: str | None
               ) -> dict[str, Any] | None:
    """Abilities (with intervals), difficulties and drifted tasks of the latest stored
    ATLAS fit (``evalatlas atlas fit`` stores one) for this benchmark, else of the whole
    store; None when there is none or rows are not agents.

    Tasks under several versions (drift) are several items: their mean difficulty orders
    the column and the task is marked as drifted.
    """
    if by != "agent":
        return None
    try:
        from evalatlas.atlas import stored_fit

        fit = (stored_fit(store, benchmark=[benchmark]) if benchmark else None) \
            or stored_fit(store)
    except Exception:  # an unreadable or absent fit must not cost the whole report
        return None
    if fit is None:
        return None
    by_agent = {r.get("agent_id"): r for r in fit.agent_rows}
    diffs: dict[str, list[float]] = {}
    for r in fit.item_rows:
        if (benchmark is None or r.get("benchmark") == benchmark) and \
                r.get("difficulty") is not None:
            diffs.setdefault(str(r["task_id"]), []).append(float(r["difficulty"]))
    if not any(k in by_agent for k in cells.keys):
        return None
    nan = math.nan

    def agent_value(k: str, field: str) -> float:
        v = by_agent.get(k, {}).get(field)
        return nan if v is None else float(v)

    return {
        "fit_id": fit.fit_id,
        "ability": [agent_value(k, "ability") for k in cells.keys],
        "ability_ci_low": [agent_value(k, "ability_ci_low") for k in cells.keys],
        "ability_ci_high": [agent_value(k, "ability_ci_high") for k in cells.keys],
        "difficulty": [float(np.mean(diffs[t])) if t in diffs else nan for t in cells.tasks],
        "drifted_tasks": sorted({str(r.get("task_id")) for r in fit.drift_rows
                                 if benchmark is None or r.get("benchmark") == benchmark}),
    }


def _rates(succ: np.ndarray, known: np.ndarray, axis: int) -> np.ndarray:
    k = known.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, succ.sum(axis=axis) / np.maximum(k, 1), np.nan)


# --- heatmap -------------------------------------------------------------------------

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _heatmap(cells: _Cells, a_order: list[int], t_order: list[int],
             opts: ReportOptions, ordered_by: str, drift: set[str]) -> dict[str, Any]:
    """Cells as a compact string, or bins when there are more than ``max_cells`` cells.

    Unbinned: two base-36 characters per cell (successes, attempts with a known outcome),
    ``--`` for a missing cell (never ran, or every outcome unknown) - missing is not a
    failure. Binned: mean success of the bin's known cells in whole percent, -1 missing.
    Rows are binned too (consecutive agents in rank order) above ``max_heat_agents``
    agents: ten thousand rows cannot be drawn or read (issue #28).
    """
    n_a, n_t = len(a_order), len(t_order)
    known = cells.known[np.ix_(a_order, t_order)] if n_a and n_t else np.zeros((n_a, n_t),
                                                                                 dtype=int)
    succ = cells.succ[np.ix_(a_order, t_order)] if n_a and n_t else known
    out: dict[str, Any] = {
        "agents": [cells.labels[i] for i in a_order], "ordered_by": ordered_by,
        "n_tasks": n_t, "n_agents": n_a, "binned": False, "agents_binned": False,
        "notes": [],
    }
    if n_a <= opts.max_heat_agents and n_a * n_t <= opts.max_cells \
            and known.max(initial=0) <= 35:
        out["tasks"] = [cells.task_labels[j] for j in t_order]
        out["drift"] = [cells.tasks[j] in drift for j in t_order]
        codes = []
        for i in range(n_a):
            codes.append("".join("--" if known[i, j] == 0 else
                                 _B36[succ[i, j]] + _B36[known[i, j]] for j in range(n_t)))
        out["codes"] = codes
        return out
    rows = min(n_a, opts.max_heat_agents)
    cols = max(1, min(n_t, opts.max_cells // max(rows, 1)))
    r_edges = np.linspace(0, n_a, rows + 1).round().astype(int)
    c_edges = np.linspace(0, n_t, cols + 1).round().astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(known > 0, succ / np.maximum(known, 1), np.nan)
    has = ~np.isnan(rate)
    filled = np.where(has, rate, 0.0)
    # sums over blocks of consecutive rows and columns (reduceat: no Python loop per cell)
    r_lo = r_edges[:-1][r_edges[1:] > r_edges[:-1]]
    c_lo = c_edges[:-1][c_edges[1:] > c_edges[:-1]]
    total = np.add.reduceat(np.add.reduceat(filled, r_lo, axis=0), c_lo, axis=1) \
        if n_a and n_t else np.zeros((len(r_lo), len(c_lo)))
    count = np.add.reduceat(np.add.reduceat(has.astype(np.int64), r_lo, axis=0), c_lo,
                            axis=1) if n_a and n_t else np.zeros_like(total)
    with np.errstate(invalid="ignore", divide="ignore"):
        mat = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    r_hi = np.append(r_lo[1:], n_a)
    c_hi = np.append(c_lo[1:], n_t)
    labels = [f"{cells.task_labels[t_order[lo]]} .. {cells.task_labels[t_order[hi - 1]]} "
              f"({hi - lo} tasks)" if hi - lo > 1 else cells.task_labels[t_order[lo]]
              for lo, hi in zip(c_lo.tolist(), c_hi.tolist(), strict=True)]
    agents = out["agents"]
    if rows < n_a:
        agents = [f"ranks {lo + 1}-{hi}: {cells.labels[a_order[lo]]} .."
                  if hi - lo > 1 else f"rank {lo + 1}: {cells.labels[a_order[lo]]}"
                  for lo, hi in zip(r_lo.tolist(), r_hi.tolist(), strict=True)]
        out["agents_binned"] = True
    out.update({
        "agents": agents,
        "binned": True, "tasks": labels, "drift": [False] * len(labels),
        "percent": [[-1 if math.isnan(v) else round(100 * v) for v in row] for row in mat],
    })
    what = []
    if rows < n_a:
        what.append(f"agents into {len(agents)} bins of about {n_a // len(agents)} "
                    f"consecutive agents (in {ordered_by} order)")
    if len(labels) < n_t:
        what.append(f"tasks into {len(labels)} bins of about {n_t // max(len(labels), 1)} "
                    f"consecutive tasks (in {ordered_by} order)")
    out["notes"].append(
        f"{n_a:,} x {n_t:,} = {n_a * n_t:,} cells are more than drawn: "
        + " and ".join(what or ["cells"]) + " are grouped, each cell the mean success of "
        "its bin's known cells")
    return out


# --- drill-down ----------------------------------------------------------------------


def _trunc(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _drill(store: StoreConnection, by: str, ids: Sequence[str] | None, cells: _Cells,
           t_order: list[int], opts: ReportOptions) -> dict[str, Any]:
    """Per-episode rows for the drill-down, for as many tasks as fit the budget.

    Tasks are taken most discriminating first (largest spread of success across groups)
    when not all fit; the page says how many are covered.
    """
    if not t_order:
        return {"tasks": [], "groups": cells.labels, "errors": [], "sources": [],
                "texts": [], "text_limit": opts.text_limit, "offsets": [0],
                "episodes": {c: [] for c in _DRILL_COLUMNS}, "notes": [],
                "inputs": [], "targets": []}
    n_eps = cells.episodes.sum(axis=0)
    notes: list[str] = []
    if n_eps.sum() <= opts.max_drill_episodes:
        chosen = list(t_order)
    else:
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN task: no spread
            rate = cells.rates()
            spread = np.nan_to_num(np.nanstd(rate, axis=0), nan=-1.0) if rate.size else []
        by_spread = sorted(range(len(cells.tasks)), key=lambda j: (-spread[j], cells.tasks[j]))
        chosen, total = [], 0
        for j in by_spread:
            if total + n_eps[j] > opts.max_drill_episodes:
                continue
            chosen.append(j)
            total += int(n_eps[j])
        pos = {j: p for p, j in enumerate(t_order)}
        chosen.sort(key=lambda j: pos[j])
        notes.append(f"the drill-down covers {len(chosen):,} of {len(cells.tasks):,} tasks "
                     f"({total:,} of {int(n_eps.sum()):,} episodes): the tasks whose "
                     "success varies most across agents")
    tasks = [cells.tasks[j] for j in chosen]
    shown_tasks = [cells.task_labels[j] for j in chosen]
    cols: dict[str, list[Any]] = {c: [] for c in _DRILL_COLUMNS}
    out = {"tasks": shown_tasks, "groups": cells.labels, "errors": [], "sources": [],
           "texts": [],
           "text_limit": opts.text_limit, "offsets": [0] * (len(tasks) + 1),
           "episodes": cols, "notes": notes, "inputs": [], "targets": []}
    if not tasks:
        return out
    # one character more than shown: _trunc then marks the cut with an ellipsis
    arr = drill_episodes(store, by, ids, tasks, opts.text_limit + 1)
    ki = {k: i for i, k in enumerate(cells.keys)}
    # rows come sorted by task: task j's episodes are offsets[j]:offsets[j + 1]
    t_idx = np.asarray(arr["t"], dtype=np.int64)
    out["offsets"] = np.searchsorted(t_idx, np.arange(len(tasks) + 1)).tolist()
    cols["a"] = [ki[str(k)] for k in arr["k"]]
    cols["n"] = _ints(arr["attempt"])
    success = _objects(arr["success"])
    cols["o"] = [2 if v is None else int(bool(v)) for v in success]  # 2: unknown
    cols["r"] = [_round(v) for v in _objects(arr["reward"])]
    cols["k"] = _ints(arr["total_tokens"])
    cols["c"] = [_round(v) for v in _objects(arr["cost_usd"])]
    cols["w"] = [_round(v) for v in _objects(arr["wall_time_s"])]
    cols["e"], out["errors"] = _codes(_objects(arr["err"]))
    cols["s"], out["sources"] = _codes(_objects(arr["source"]))
    budget, cut_text = opts.text_budget, 0
    # output/error first: it says why a sample failed; then what it was asked and expected
    for col, key, field in (("x", "texts", "txt"), ("p", "inputs", "inp"),
                            ("g", "targets", "tgt")):
        texts = [_trunc(v, opts.text_limit) for v in _objects(arr[field])]
        seen: set[str] = set()
        for i, text in enumerate(texts):
            if text is None or text in seen:
                continue
            if len(text) > budget:
                cut_text += 1
                texts[i] = None
                continue
            budget -= len(text)
            seen.add(text)
        cols[col], out[key] = _codes(texts)
    if cut_text:
        notes.append(f"text (output, input or target) is left out for {cut_text:,} "
                     f"episodes: the report keeps at most {opts.text_budget:,} characters "
                     "of it")
    return out


_DRILL_COLUMNS = "anoerkcwsxpg"
"""Per-episode columns of the drill-down: agent, attempt, outcome, error, reward, tokens,
cost, wall time, source, output/error text, input (prompt), target (expected)."""


def _objects(col: Any) -> list[Any]:
    """A fetched column as Python values, masked (NULL) entries as None."""
    if isinstance(col, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(col)
        return [None if m else v for v, m in zip(col.data.tolist(), mask.tolist(),
                                                  strict=True)]
    return [None if isinstance(v, float) and math.isnan(v) else v
            for v in np.asarray(col).tolist()]


def _ints(col: Any) -> list[int | None]:
    return [None if v is None else int(v) for v in _objects(col)]


def _codes(values: list[Any]) -> tuple[list[int], list[str]]:
    """Dictionary-encode strings: 0 for None or "", else 1 + the index in the dictionary
    (one character per episode where "null" would take four)."""
    d: dict[str, int] = {}
    codes: list[int] = []
    for v in values:
        if v is None or v == "":
            codes.append(0)
            continue
        code = d.get(v)
        if code is None:
            code = d[v] = len(d) + 1
        codes.append(code)
    return codes, list(d)


def _round(x: Any, digits: int = 6) -> float | None:
    v = _f(x)
    if v is None:
        return None
    if v.is_integer() and abs(v) < 2**53:
        return int(v)  # "1" not "1.0": a large report is mostly such numbers
    return float(f"{v:.{digits}g}")


# --- one section ---------------------------------------------------------------------


def _section(store: StoreConnection, sid: str, title: str, benchmark: str | None,
             ids: Sequence[str] | None, size: int | None, opts: ReportOptions,
             *, tasks_views: bool = True, result: SummaryResult | None = None
             ) -> dict[str, Any]:
    """One block of the page. ``tasks_views`` False (the all-benchmarks block when each
    benchmark has its own) leaves out the heatmap and drill-down: those are per
    benchmark, and repeating them would double the file."""
    by = opts.by
    if result is None:
        result = leaderboard_result(store, by, ids, opts.confidence)
    rows = result.to_dict()["rows"]
    cells = _cells(store, by, ids)
    notes: list[str] = [n for n in result.notes if n.startswith(_SECTION_NOTES)]
    fit = _atlas_fit(store, cells, by, benchmark) if cells.keys and cells.tasks else None
    agent_rate = _rates(cells.succ, cells.known, axis=1)
    task_rate = _rates(cells.succ, cells.known, axis=0)
    if fit is not None:
        ability = np.asarray(fit["ability"], dtype=float)
        difficulty = np.asarray(fit["difficulty"], dtype=float)
        a_order = sorted(range(len(cells.keys)),
                         key=lambda i: (-np.nan_to_num(ability[i], nan=-np.inf),
                                        cells.labels[i]))
        t_order = sorted(range(len(cells.tasks)),
                         key=lambda j: (np.nan_to_num(difficulty[j], nan=np.inf),
                                        cells.tasks[j]))
        ordered_by = "ATLAS ability and difficulty"
        notes.append(f"ATLAS fit {fit['fit_id']}: heatmap rows by ability, columns by "
                     "difficulty (easiest first)")
        drift = set(fit.get("drifted_tasks") or [])
    else:
        a_order = sorted(range(len(cells.keys)),
                         key=lambda i: (-np.nan_to_num(agent_rate[i], nan=-1.0),
                                        cells.labels[i]))
        t_order = sorted(range(len(cells.tasks)),
                         key=lambda j: (-np.nan_to_num(task_rate[j], nan=-1.0),
                                        cells.tasks[j]))
        ordered_by = "success rate"
        drift = set()
    # paired tests are per benchmark: the pooled block (tasks_views False) has none
    pairs = _pairs(cells, a_order, opts) if tasks_views else {"agents": [], "rows": [],
                                                               "notes": []}
    board = []
    label_of = dict(zip(cells.keys, cells.labels, strict=True))
    for r in rows:
        k = r.get("agent_id") if by == "agent" else r.get(by)
        shown = label_of.get(str(k)) or display_name(r[by])
        full = full_name(r[by])
        pair_key = str(k)  # the key the paired comparisons use
        if r.get("benchmark") is not None and by != "benchmark":
            # an agent with a row per benchmark (the summary never pools them)
            shown = f"{shown} · {display_name(r['benchmark'], 40)}"
            k = f"{k}@{r['benchmark']}"
        cps = r.get("cost_per_success")
        board.append({
            "name": shown, "key": str(k), "pair_key": pair_key, "summary": r,
            "full_name": full if full != shown else None,
            "coverage": _coverage(r, size),
            "cost_per_episode": r.get("cost_per_episode"),
            "cost_ci_low": r.get("cost_per_episode_ci_low"),
            "cost_ci_high": r.get("cost_per_episode_ci_high"),
            "cost_per_success": cps if cps != "inf" else None,
            "cost_per_success_ci_low": r.get("cost_per_success_ci_low"),
            "cost_per_success_ci_high": r.get("cost_per_success_ci_high"),
            "cost_per_success_inf": cps == "inf",
        })
    if tasks_views:
        _mark_ties(board, pairs)
    else:  # agents of different benchmarks share no task: no rank across them
        for b in board:
            b["rank"], b["tied_with"], b["tied"], b["tied_count"] = None, [], False, 0
            b["better_than"], b["better_than_count"] = [], 0
        notes.append("ranks and ties are given per benchmark, in the sections below: "
                     "agents of different benchmarks are not compared")
    on = pareto_frontier([b["cost_per_episode"] for b in board],
                         [_f(b["summary"]["success_rate"]) for b in board])
    for b, f in zip(board, on, strict=True):
        b["pareto"] = f
    if not any(b["cost_per_episode"] is not None for b in board):
        notes.append("no cost is known: the cost-accuracy view is empty")
    heat = _heatmap(cells, a_order, t_order if tasks_views else [], opts, ordered_by,
                    drift)
    if fit is None and tasks_views:
        heat["notes"].insert(0, "no ATLAS fit: rows and columns are ordered by success rate")
    ability_rows = None
    if fit is not None and fit.get("ability_ci_low") is not None:
        ability_rows = [{"name": cells.labels[i], "ability": _f(fit["ability"][i]),
                         "low": _f(fit["ability_ci_low"][i]),
                         "high": _f(fit["ability_ci_high"][i])} for i in a_order]
    return {
        "id": sid, "title": title, "benchmark": benchmark, "benchmark_size": size,
        "group_by": by, "leaderboard": board, "pairs": pairs, "heatmap": heat,
        "ability": ability_rows,
        "drill": _drill(store, by, ids, cells, t_order if tasks_views else [], opts),
        "notes": notes,
    }


_SECTION_NOTES = ("agents that ran several benchmarks", "cost unknown")
"""Notes of the summary that belong to a section (the rest are the page's)."""


def _coverage(row: dict[str, Any], size: int | None) -> float | None:
    """Share of the planned work that ran: samples observed / planned (a crashed run
    that planned 2 epochs x 40 samples and ran 56 covers 70%, not 100%), and tasks
    reported / the benchmark's ``size``; the smaller of the two known ones."""
    shares = []
    if row.get("planned_samples"):
        shares.append(min(1.0, row["episodes"] / row["planned_samples"]))
    if size:
        shares.append(row["tasks"] / size)
    return min(shares) if shares else None


TIED_NAMES = 8
"""Names listed in a row's ``tied_with`` (the count says how many there are in all)."""


def _mark_ties(board: list[dict[str, Any]], pairs: dict[str, Any]) -> None:
    """Rank = 1 + the number of agents shown to be better; ``tied_with`` = the others
    it is not separated from (the first :data:`TIED_NAMES` by success; ``tied_count``
    all of them).

    Separated means: the Holm-adjusted paired test is significant when the pair was
    compared, else the two success intervals do not overlap. Counted with sorted
    interval ends, and per row with array comparisons, not a Python loop over all pairs
    (10,000 agents made that loop 10^8 calls; issue #28).
    """
    n = len(board)
    nan = math.nan
    def column(field: str) -> np.ndarray:
        vals = [_f(b["summary"][field]) for b in board]
        return np.array([nan if v is None else v for v in vals], dtype=float)

    rate = column("success_rate")
    lo, hi = column("success_rate_ci_low"), column("success_rate_ci_high")
    index = {b.get("pair_key", b["key"]): i for i, b in enumerate(board)}
    # better[x, y] for the compared pairs only: +1 x better, -1 y better, 0 not separated
    compared: dict[int, dict[int, int]] = {}
    for p in pairs["rows"]:
        if p["p_holm"] is None or p["a_key"] not in index or p["b_key"] not in index:
            continue
        s = 1 if p["significant"] and p["diff"] > 0 else (-1 if p["significant"] else 0)
        ia, ib = index[p["a_key"]], index[p["b_key"]]
        compared.setdefault(ia, {})[ib] = s
        compared.setdefault(ib, {})[ia] = -s
    lo_known = np.where(np.isnan(lo), -np.inf, lo)  # no interval: never separated
    hi_known = np.where(np.isnan(hi), np.inf, hi)
    by_rate = np.argsort(np.where(np.isnan(rate), np.inf, -rate), kind="stable")
    has_rate = ~np.isnan(rate)
    for i, b in enumerate(board):
        above = lo_known > hi_known[i]   # others whose interval lies above i's
        below = hi_known < lo_known[i]   # others whose interval lies below i's
        above[i] = below[i] = False
        for j, sgn in compared.get(i, {}).items():
            above[j], below[j] = sgn < 0, sgn > 0
        tied = ~above & ~below & has_rate
        tied[i] = False
        b["rank"] = 1 + int(above.sum())
        b["tied_count"] = int(tied.sum())
        names = [board[j]["name"] for j in by_rate[tied[by_rate]][:TIED_NAMES].tolist()]
        b["tied_with"] = names
        b["tied"] = b["tied_count"] > 0
        b["better_than_count"] = int(below.sum())
        b["better_than"] = [board[j]["name"]
                            for j in by_rate[below[by_rate]][:TIED_NAMES].tolist()]
    if n and not has_rate.any():
        for b in board:
            b["tied"] = False


# --- benchmark-specific views --------------------------------------------------------


def _tiers(store: StoreConnection, experiment: Sequence[str] | None) -> dict[str, Any] | None:
    try:
        rep = tiers_of(store, experiment=list(experiment) if experiment else None)
    except ValueError:
        return None
    if not rep.rows:
        return None
    d = rep.to_dict()
    return {"rows": d["rows"], "meta": {k: v for k, v in d.items()
                                        if k not in ("rows", "notes", "schema")},
            "notes": d.get("notes", [])}


def _speedups(store: StoreConnection, experiment: Sequence[str] | None,
              confidence: float) -> dict[str, Any] | None:
    res = speedups_of(store, experiment=list(experiment) if experiment else None,
                      confidence=confidence, resamples=1000)
    if not res.rows:
        return None
    rows = res.to_dict()["rows"]
    levels = [{"agent": r["agent"], "level": lv,
               "advantage": _f(r.get(f"agent_advantage_level{lv}"))}
              for r in rows for lv in (1, 2, 3, 4)]
    return {"rows": rows, "levels": levels}


def _frameworks(store: StoreConnection, confidence: float) -> list[dict[str, Any]] | None:
    data = framework_data_of(store)
    if not data:
        return None
    out = []
    groups: dict[tuple[str, str], list[Any]] = {}
    for d in data:
        groups.setdefault((d.scenario, d.mode), []).append(d)
    for (scenario, mode), ds in sorted(groups.items()):
        rep = build_framework_report(ds, confidence=confidence)
        out.append({"scenario": scenario, "mode": mode, "frameworks": [
            {"name": f["name"], **{k: f["scorecard"].get(k) for k in
                                   ("capability", "efficiency", "developer_experience")},
             "latency_p50": f["latency"]["p50"], "latency_p95": f["latency"]["p95"],
             "avg_correctness": f["summary"]["avg_correctness"],
             "correctness_ci_low": (f["correctness_interval"] or {}).get("low"),
             "correctness_ci_high": (f["correctness_interval"] or {}).get("high"),
             "n_questions": f["summary"]["n_questions"],
             "total_cost_usd": f["summary"]["total_cost_usd"]}
            for f in rep["frameworks"]], "notes": rep["notes"]})
    return out


# --- entry point ---------------------------------------------------------------------


def build_report_data(store: StoreConnection, opts: ReportOptions | None = None) -> dict[str, Any]:
    """Everything the report shows, JSON-ready (see the module docstring)."""
    opts = opts or ReportOptions()
    group_expr(opts.by)  # validates --by before any work
    exps = experiment_catalog(store)
    if opts.experiment:
        wanted = set(opts.experiment)
        exps = [e for e in exps if e["experiment_id"] in wanted]
    notes: list[str] = []
    if opts.experiment and not exps:
        raise ValueError("no experiment matches " + ", ".join(opts.experiment))
    ids = [e["experiment_id"] for e in exps] if opts.experiment else None
    benches: dict[str, list[dict[str, Any]]] = {}
    for e in exps:
        benches.setdefault(e["benchmark"], []).append(e)

    def size(es: list[dict[str, Any]]) -> int | None:
        ns = [int(e["planned_tasks"]) for e in es if e["planned_tasks"]]
        return max(ns) if ns else None

    page = leaderboard_result(store, opts.by, ids, opts.confidence)
    notes += [n for n in page.notes if not n.startswith(_SECTION_NOTES)]
    sections = []
    if len(benches) == 1:
        name, es = next(iter(benches.items()))
        sections.append(_section(store, "s0", display_name(name), name, ids, size(es), opts,
                                 result=page))
    else:
        sections.append(_section(store, "s0", "All benchmarks", None, ids, None, opts,
                                 tasks_views=not opts.sections_per_benchmark, result=page))
        if opts.sections_per_benchmark:
            for n, (name, es) in enumerate(sorted(benches.items()), start=1):
                sections.append(_section(store, f"s{n}", display_name(name), name,
                                         [e["experiment_id"] for e in es], size(es), opts))
    if not exps:
        notes.append("the store has no episodes; run `evalatlas ingest PATH` first")
    data = {
        "schema": SCHEMA, "title": opts.title, "evalatlas_version": __version__,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "confidence": opts.confidence, "alpha": opts.alpha, "group_by": opts.by,
        "notes": notes, "sections": sections,
        "published": page.meta.get("published") or [],
        "tiers": _tiers(store, opts.experiment),
        "speedups": _speedups(store, opts.experiment, opts.confidence),
        "frameworks": _frameworks(store, opts.confidence),
        "failures": failures_data(store, opts.experiment, opts.confidence),
    }
    if getattr(store, "lake", None) is not None:  # the snapshot read (issue 23)
        data["lake"] = {"location": store.lake.display, "snapshot": store.snapshot}
    data["decision"] = decision_summary(data)
    # json_safe walks everything but the drill-down columns, which are built finite
    drills = [s.pop("drill") for s in sections]
    data = json_safe(data)
    for s, d in zip(data["sections"], drills, strict=True):
        s["drill"] = d
    return data
