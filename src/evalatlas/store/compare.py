"""Paired comparison of agents, experiments or label values on shared tasks (``compare``).

Selectors (first match wins, an ambiguous one is an error listing the candidates):

1. ``label:<name>=<value>``: every experiment whose label ``<name>`` is ``<value>``;
2. ``experiment:<x>`` / ``agent:<x>``: force the kind;
3. otherwise an exact experiment name or id, then an exact agent name or id, then a
   unique prefix (at least 4 characters) of an agent id or experiment id.

Pairing (``pair_by``):

- ``task`` (default): a task's value for a side is the mean over that side's attempts
  (success rate, mean score); pairs are the tasks both sides ran. With one attempt per
  task on both sides the values are 0/1 and McNemar's exact test applies; otherwise the
  per-task differences are tested with the Wilcoxon signed-rank test. Safe whatever the
  attempt counts, and it treats the task as the unit, as Miller (2024) recommends.
- ``attempt``: pairs are (task, attempt index) keys both sides have, each 0/1 (McNemar).
  Only meaningful when attempts are aligned (attempt i of A and of B are comparable,
  e.g. the same seed); ProjectScylla runs of one task are the typical use.

The difference is ``A - B`` with the paired interval of :func:`paired_difference` (t on
the per-pair differences). When the test is not significant at ``alpha`` the sentence
gives the number of tasks needed to detect ``detect`` (default 5 points) with 80% power
from the observed variance of the paired difference (:func:`tasks_needed`); with no
spread observed, the variance is bounded by ``pa(1 - pa) + pb(1 - pb)`` (independent
outcomes), which is conservative for positively correlated agents.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

import numpy as np

from evalatlas.stats.paired import holm_adjust, mcnemar_test, paired_difference
from evalatlas.stats.power import tasks_needed
from evalatlas.store.db import Store

PairBy = Literal["task", "attempt"]
_LABEL_SEL = re.compile(r"^label:([A-Za-z0-9_.\-]+)=(.+)$")
_SCORE = re.compile(r"^[A-Za-z0-9_.\-]+$")


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


def _load(store: Store, side: Side, score: str | None) -> dict[str, np.ndarray]:
    marks = ", ".join("?" for _ in side.experiment_ids)
    score_sql = (f"TRY_CAST(e.scores->>'$.\"{score}\"' AS DOUBLE)" if score
                 else "e.reward")
    arr = store.query_arrays(
        f"SELECT e.task_id, coalesce(e.attempt, -1) AS attempt, e.success, "
        f"{score_sql} AS score, e.cost_usd FROM episodes e "
        f"WHERE e.experiment_id IN ({marks}) "
        # an unknown outcome (null reward) is not a failure: such episodes are not paired
        f"AND e.success IS NOT NULL", list(side.experiment_ids))
    return {
        "task": np.asarray(arr["task_id"], dtype=object),
        "attempt": np.asarray(arr["attempt"], dtype=np.int64),
        "success": np.asarray(arr["success"], dtype=float),
        "score": np.ma.filled(np.ma.asarray(arr["score"], dtype=float), np.nan),
        "cost": np.ma.filled(np.ma.asarray(arr["cost_usd"], dtype=float), np.nan),
    }


def _grouped(data: dict[str, np.ndarray], pair_by: PairBy) -> dict[Any, tuple[float, ...]]:
    """key -> (success mean, score mean (NaN-aware), cost mean (NaN-aware), n attempts)."""
    if pair_by == "attempt":
        keys = list(zip(data["task"].tolist(), data["attempt"].tolist(), strict=True))
    else:
        keys = data["task"].tolist()
    groups: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    out = {}
    for k, idx in groups.items():
        ii = np.asarray(idx)
        sc, co = data["score"][ii], data["cost"][ii]
        out[k] = (float(data["success"][ii].mean()),
                  float(np.nanmean(sc)) if np.any(~np.isnan(sc)) else math.nan,
                  float(np.nanmean(co)) if np.any(~np.isnan(co)) else math.nan,
                  float(ii.size))
    return out


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


def _mean_or_none(values: np.ndarray) -> float | None:
    v = values[~np.isnan(values)]
    return float(v.mean()) if v.size else None


def compare_pair(
    a_data: dict[str, np.ndarray], b_data: dict[str, np.ndarray], *,
    pair_by: PairBy = "task", confidence: float = 0.95, detect: float = 0.05,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Numbers for one pair A vs B (no names, no sentence): see the module docstring."""
    ga, gb = _grouped(a_data, pair_by), _grouped(b_data, pair_by)
    shared = sorted(set(ga) & set(gb), key=str)
    n_tasks = len({k[0] if pair_by == "attempt" else k for k in shared})
    sa = np.array([ga[k][0] for k in shared])
    sb = np.array([gb[k][0] for k in shared])
    qa = np.array([ga[k][1] for k in shared])
    qb = np.array([gb[k][1] for k in shared])
    ca = np.array([ga[k][2] for k in shared])
    cb = np.array([gb[k][2] for k in shared])
    pd = paired_difference(sa, sb, confidence=confidence)
    binary = bool(shared) and np.all(np.isin(sa, (0.0, 1.0))) and np.all(np.isin(sb, (0, 1)))
    if binary:
        mc = mcnemar_test(sa.astype(bool), sb.astype(bool))
        test, p = "McNemar", mc.pvalue
        discordant = (mc.a_only, mc.b_only)
    else:
        test, p, discordant = "Wilcoxon", pd.pvalue, None
    score_pd = paired_difference(qa, qb, confidence=confidence) if shared else None
    var = pd.diff_variance
    if not (var > 0):
        pa, pb = (float(sa.mean()), float(sb.mean())) if shared else (0.5, 0.5)
        var = pa * (1 - pa) + pb * (1 - pb)
    needed = tasks_needed(var, detect, alpha=alpha) if var > 0 else None
    return {
        "pair_by": pair_by, "shared_tasks": n_tasks, "pairs": len(shared),
        "tasks_only_a": len({k[0] if pair_by == "attempt" else k for k in set(ga) - set(gb)}),
        "tasks_only_b": len({k[0] if pair_by == "attempt" else k for k in set(gb) - set(ga)}),
        "success_a": pd.mean_a if shared else None, "success_b": pd.mean_b if shared else None,
        "diff": pd.diff if shared else None,
        "diff_ci_low": None if math.isnan(pd.low) else pd.low,
        "diff_ci_high": None if math.isnan(pd.high) else pd.high,
        "test": test, "p": None if math.isnan(p) else p,
        "discordant_a_only": discordant[0] if discordant else None,
        "discordant_b_only": discordant[1] if discordant else None,
        "score_a": _mean_or_none(qa), "score_b": _mean_or_none(qb),
        "score_diff": (score_pd.diff if score_pd and not math.isnan(score_pd.diff) else None),
        "score_diff_ci_low": (score_pd.low if score_pd and not math.isnan(score_pd.low)
                              else None),
        "score_diff_ci_high": (score_pd.high if score_pd and not math.isnan(score_pd.high)
                               else None),
        "score_p": (score_pd.pvalue if score_pd and not math.isnan(score_pd.pvalue)
                    else None),
        "cost_a": _mean_or_none(ca), "cost_b": _mean_or_none(cb),
        "tasks_needed": needed, "detect": detect,
    }


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


def sentence(a: str, b: str, row: dict[str, Any], *, alpha: float = 0.05,
             confidence: float = 0.95) -> str:
    """The plain-language verdict (the issue's wording)."""
    n = row["shared_tasks"]
    if row["diff"] is None or row["pairs"] < 2 or row["p"] is None:
        return (f"{a} and {b} cannot be compared: {n} shared task(s) "
                f"({row['pairs']} pair(s)); at least 2 are needed")
    p = row.get("p_holm", row["p"])
    p_name = f"{row['test']} p" + (" (Holm)" if "p_holm" in row else "")
    diff, lo, hi = row["diff"], row["diff_ci_low"], row["diff_ci_high"]
    pct = f"{round(100 * confidence)}% CI"
    p_text = f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"
    unit = "shared tasks" if row["pair_by"] == "task" else f"pairs over {n} shared tasks"
    count = row["pairs"] if row["pair_by"] == "attempt" else n
    if p < alpha and diff != 0:
        if diff < 0:
            a, b, diff, lo, hi = b, a, -diff, -hi, -lo
        return (f"{a} passes {_pts(diff)} points more often than {b} ({pct} {_pts(lo)} to "
                f"{_pts(hi)}, {p_name} = {p_text}, {count} {unit})")
    need = row["tasks_needed"]
    tail = (f"; about {need:,} tasks would be needed to detect {_pts(row['detect'])} points"
            if need else "")
    return (f"no detectable difference between {a} and {b} (difference {_pts(diff)} points, "
            f"{pct} {_pts(lo) if lo is not None else '-'} to "
            f"{_pts(hi) if hi is not None else '-'}, {p_name} = {p_text}, {count} {unit})"
            f"{tail}")


def compare(
    store: Store, selectors: list[str], *, pair_by: PairBy = "task",
    score: str | None = None, confidence: float = 0.95, detect: float = 0.05,
    alpha: float = 0.05,
) -> tuple[list[dict[str, Any]], str | None]:
    """All pairs of ``selectors``; Holm-adjusted p-values when there are more than two.

    Returns (rows, score name used). Each row has ``a``, ``b``, the numbers of
    :func:`compare_pair` and ``sentence``.
    """
    if len(selectors) < 2:
        raise ValueError("compare needs at least two agents, experiments or label values")
    if score is not None and not _SCORE.match(score):
        raise ValueError(f"invalid score name {score!r}")
    sides = [resolve(store, s) for s in selectors]
    names = [s.name for s in sides]
    if len(set(names)) < len(names):
        names = [f"{s.name} [{s.selector}]" for s in sides]
    used = score if score is not None else pick_score(store, sides)
    data = [_load(store, s, used) for s in sides]
    rows = []
    for i, j in combinations(range(len(sides)), 2):
        row = {"a": names[i], "b": names[j],
               **compare_pair(data[i], data[j], pair_by=pair_by, confidence=confidence,
                              detect=detect, alpha=alpha)}
        rows.append(row)
    if len(rows) > 1:
        adjusted = holm_adjust([r["p"] if r["p"] is not None else math.nan for r in rows])
        for r, p in zip(rows, adjusted, strict=True):
            r["p_holm"] = None if math.isnan(p) else p
    for r in rows:
        if r.get("p_holm", 0) is None:
            r.pop("p_holm")
        r["sentence"] = sentence(r["a"], r["b"], r, alpha=alpha, confidence=confidence)
    return rows, used
