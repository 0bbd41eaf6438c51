"""The CI gate: is the candidate really worse than the baseline, group by group?

Input: each side's episodes as arrays (:func:`evalatlas.store.gate.load_gate_side`, or a
user's own): ``task``, ``benchmark``, ``split``, ``success`` (0/1), ``reward`` and
``timestamp``. Only tasks both sides ran are compared (per group); per task each side's
value is its mean over its attempts (success proportion, or mean reward), and the paired
difference is ``d = candidate - baseline``.

Per group (``by``: benchmark, split, or none = one group), with ``x = d + max_drop``:

- **test** of ``H0: E[d] >= -max_drop``, one-sided at ``alpha``
  (:mod:`evalatlas.stats.noninferiority`): exact McNemar when every task has one binary
  attempt a side and ``max_drop = 0``; otherwise the sign-flip permutation test of the
  mean of ``x``; with ``sequential``, the betting e-process of
  :mod:`evalatlas.stats.sequential` over tasks in the order of the candidate's first
  episode timestamp (then task id), whose anytime-valid p-value is ``1/e``;
- **Holm** across groups (:func:`evalatlas.stats.paired.holm_adjust`); a group is a
  *regression* when ``p_holm < alpha``;
- **interval** of the mean difference: two-sided ``1 - 2 alpha`` (its upper end is the
  one-sided bound the test matches, the usual non-inferiority convention), inside
  [-1, 1] for rates (:func:`evalatlas.stats.bounded.bounded_mean_interval`), else the
  paired t interval; with ``sequential`` the confidence sequence;
- **mde**: the drop (``max_drop`` included) this group's tasks detect with ``power`` at
  ``alpha`` (:func:`evalatlas.stats.noninferiority.detectable_drop`): from the discordant
  share for the McNemar case, else from the sample variance of ``d``. It is the
  fixed-sample test's; a sequential test needs somewhat larger drops;
- **inconclusive** when the observed drop exceeds ``max_drop``, is not significant, and
  ``mde`` exceeds the observed drop (with ``sequential``: whenever a drop beyond
  ``max_drop`` is not significant, since ``mde`` understates what the sequential test
  needs);
- **flaky tasks**: shared tasks whose baseline attempts disagree (``0 < successes <
  attempts``); ``exclude_flaky`` leaves them out of the test. **Hard regressions**: shared
  tasks the baseline solved on every attempt and the candidate failed on every attempt,
  listed whatever the verdict.

The overall verdict is *regression* if any group is, else *inconclusive* if any group
is, else *pass*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from evalatlas.analysis.results import TableResult
from evalatlas.errors import ArgumentError, EvalAtlasError
from evalatlas.stats.bounded import bounded_mean_interval
from evalatlas.stats.noninferiority import (
    detectable_drop,
    mcnemar_drop_pvalue,
    sign_flip_drop_pvalue,
    tasks_for_drop,
    uniform_drop_variance,
)
from evalatlas.stats.paired import holm_adjust, paired_difference
from evalatlas.stats.sequential import sequential_drop_test

Metric = Literal["success", "reward"]
GroupBy = Literal["benchmark", "split", "none"]
Verdict = Literal["pass", "regression", "inconclusive"]

METRICS = ("success", "reward")
GROUP_BYS = ("benchmark", "split", "none")
NO_GROUP = "(none)"
"""The group name of episodes whose benchmark (or split) is not recorded."""

TEST_MCNEMAR = "McNemar exact (one-sided)"
TEST_SIGN_FLIP = "sign-flip permutation (one-sided)"
TEST_SEQUENTIAL = "betting e-process (anytime-valid)"

SideData = dict[str, np.ndarray]


class GateDataError(EvalAtlasError, ValueError):
    """The data cannot be gated (no shared task, rewards out of range for the sequential
    test); the CLI's exit code 2."""


@dataclass(frozen=True)
class _Tasks:
    """One side's per-(group, task) aggregates."""

    attempts: dict[tuple[str, str], int]
    successes: dict[tuple[str, str], int]
    value: dict[tuple[str, str], float]
    first_time: dict[tuple[str, str], float]


def _group_labels(data: SideData, by: GroupBy) -> np.ndarray:
    n = len(data["task"])
    if by == "none":
        return np.full(n, "all", dtype=object)
    col = data.get(by)
    if col is None:
        return np.full(n, NO_GROUP, dtype=object)
    return np.array([NO_GROUP if g is None else str(g) for g in col], dtype=object)


def _tasks(data: SideData, metric: Metric, by: GroupBy) -> _Tasks:
    """Per (group, task): attempts, successes, the metric's mean over attempts where it is
    known (NaN if never), and the first timestamp (NaN if none)."""
    groups = _group_labels(data, by)
    tasks = np.asarray(data["task"], dtype=object)
    keys = list(zip(groups.tolist(), [str(t) for t in tasks.tolist()], strict=True))
    index: dict[tuple[str, str], int] = {}
    inverse = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64,
                          count=len(keys))
    m = len(index)
    attempts = np.bincount(inverse, minlength=m)
    success = np.asarray(data["success"], dtype=float)
    successes = np.bincount(inverse, weights=success, minlength=m)
    raw = success if metric == "success" else np.asarray(data["reward"], dtype=float)
    ok = ~np.isnan(raw)
    cnt = np.bincount(inverse[ok], minlength=m)
    tot = np.bincount(inverse[ok], weights=raw[ok], minlength=m)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(cnt > 0, tot / np.where(cnt > 0, cnt, 1), np.nan)
    ts = np.asarray(data.get("timestamp", np.full(len(keys), np.nan)), dtype=float)
    first = np.full(m, np.inf)
    has = ~np.isnan(ts)
    np.minimum.at(first, inverse[has], ts[has])
    first[np.isinf(first)] = np.nan
    items = list(index.items())
    return _Tasks(
        attempts={k: int(attempts[i]) for k, i in items},
        successes={k: round(float(successes[i])) for k, i in items},
        value={k: float(value[i]) for k, i in items},
        first_time={k: float(first[i]) for k, i in items})


def _order(keys: list[tuple[str, str]], cand: _Tasks) -> list[tuple[str, str]]:
    """The sequential test's order: the candidate's first episode timestamp, then task id;
    tasks without a timestamp last, by task id."""
    def key(k: tuple[str, str]) -> tuple[int, float, str]:
        t = cand.first_time[k]
        return (1, 0.0, k[1]) if math.isnan(t) else (0, t, k[1])

    return sorted(keys, key=key)


def _interval(vb: np.ndarray, vc: np.ndarray, bounded: bool, alpha: float
              ) -> tuple[float | None, float | None, str | None]:
    """The fixed-sample ``1 - 2 alpha`` interval of ``mean(vc - vb)``."""
    confidence = 1 - 2 * alpha
    d = vc - vb
    if bounded:
        iv = bounded_mean_interval(d, lower=-1.0, upper=1.0, confidence=confidence)
        return iv.low, iv.high, iv.reason
    pd = paired_difference(vc, vb, confidence=confidence, test="t")
    if math.isnan(pd.low):
        return None, None, "fewer than 2 tasks: no spread to estimate"
    return pd.low, pd.high, None


def _group_row(
    group: str, base: _Tasks, cand: _Tasks, *, metric: Metric, max_drop: float,
    alpha: float, power: float, exclude_flaky: bool, sequential: bool, n_resamples: int,
    seed: int,
) -> dict[str, Any] | None:
    bkeys = {k for k in base.attempts if k[0] == group}
    ckeys = {k for k in cand.attempts if k[0] == group}
    known = {k for k in bkeys & ckeys
             if not (math.isnan(base.value[k]) or math.isnan(cand.value[k]))}
    if not known:
        return None
    shared = sorted(known, key=lambda k: k[1])
    flaky = [{"task_id": k[1], "successes": base.successes[k], "attempts": base.attempts[k]}
             for k in shared if 0 < base.successes[k] < base.attempts[k]]
    regressed = [k[1] for k in shared
                 if base.successes[k] == base.attempts[k] and cand.successes[k] == 0]
    flaky_ids = {f["task_id"] for f in flaky}
    tested = [k for k in shared if not (exclude_flaky and k[1] in flaky_ids)]
    if sequential:
        tested = _order(tested, cand)
    vb = np.array([base.value[k] for k in tested], dtype=float)
    vc = np.array([cand.value[k] for k in tested], dtype=float)
    row: dict[str, Any] = {
        "group": group, "shared_tasks": len(shared), "tested_tasks": len(tested),
        "baseline_only_tasks": len(bkeys - ckeys), "candidate_only_tasks": len(ckeys - bkeys),
        "unknown_value_tasks": len((bkeys & ckeys) - known),
        "flaky_tasks": flaky, "excluded_flaky": len(flaky) if exclude_flaky else 0,
        "regressed_tasks": regressed,
    }
    try:
        row.update(paired_numbers(
            vb, vc, base_attempts=np.array([base.attempts[k] for k in tested]),
            cand_attempts=np.array([cand.attempts[k] for k in tested]), metric=metric,
            max_drop=max_drop, alpha=alpha, power=power, sequential=sequential,
            n_resamples=n_resamples, seed=seed))
    except GateDataError as exc:
        raise GateDataError(f"group {group!r}: {exc}") from None
    return row


def paired_numbers(
    vb: np.ndarray, vc: np.ndarray, *, base_attempts: np.ndarray, cand_attempts: np.ndarray,
    metric: Metric = "success", max_drop: float = 0.0, alpha: float = 0.05,
    power: float = 0.8, sequential: bool = False, n_resamples: int = 9_999, seed: int = 0,
) -> dict[str, Any]:
    """The numbers of one group from its per-task values (``vb[i]``, ``vc[i]``: task ``i``'s
    baseline and candidate means over ``base_attempts[i]``/``cand_attempts[i]`` attempts;
    in time order for ``sequential``): rates, ``diff``, interval, ``test``, ``p_value``,
    ``mde`` (module docstring). Holm and the verdict come after (:func:`decide`)."""
    d = vc - vb
    n = int(d.size)
    bounded = metric == "success" or bool(
        n and vb.min() >= 0 and vc.min() >= 0 and vb.max() <= 1 and vc.max() <= 1)
    row: dict[str, Any] = {
        "baseline_rate": float(vb.mean()) if n else None,
        "candidate_rate": float(vc.mean()) if n else None,
        "diff": float(d.mean()) if n else None, "max_drop": max_drop,
        "e_value": None, "interval_note": None,
    }
    if n == 0:
        row.update(p_value=None, test=None, diff_ci_low=None, diff_ci_high=None, mde=None,
                   interval_note="no task left to test")
        return row
    single = bool(np.all(base_attempts == 1) and np.all(cand_attempts == 1))
    mcnemar = metric == "success" and single and max_drop == 0
    if mcnemar:
        b = int(np.sum((vb == 1) & (vc == 0)))
        c = int(np.sum((vb == 0) & (vc == 1)))
        row["discordant_baseline_only"], row["discordant_candidate_only"] = b, c
        row["mde"] = detectable_drop(n, alpha=alpha, power=power, discordance=(b + c) / n,
                                     baseline_rate=float(vb.mean()))
    elif n >= 2:
        row["mde"] = detectable_drop(
            n, alpha=alpha, power=power, variance=float(d.var(ddof=1)),
            attempts=float(1 / np.mean(1 / np.asarray(cand_attempts, dtype=float))),
            margin=max_drop, limit=1.0 if bounded else None,
            baseline_rate=float(vb.mean()) if metric == "success" else None)
    else:
        row["mde"] = None
    if sequential:
        if not bounded:
            raise GateDataError(
                f"the sequential test needs values in [0, 1]; rewards range over "
                f"[{min(vb.min(), vc.min()):g}, {max(vb.max(), vc.max()):g}] "
                "(use metric='success')")
        seq = sequential_drop_test(d, margin=max_drop, alpha=alpha)
        row.update(test=TEST_SEQUENTIAL, p_value=seq.p_value, e_value=seq.e_value,
                   diff_ci_low=seq.low, diff_ci_high=seq.high, rejected_at=seq.rejected_at)
        return row
    lo, hi, note = _interval(vb, vc, bounded, alpha)
    row.update(diff_ci_low=lo, diff_ci_high=hi, interval_note=note)
    if mcnemar:
        row.update(test=TEST_MCNEMAR, p_value=mcnemar_drop_pvalue(
            row["discordant_baseline_only"], row["discordant_candidate_only"]))
    else:
        row.update(test=TEST_SIGN_FLIP, p_value=sign_flip_drop_pvalue(
            d, margin=max_drop, n_resamples=n_resamples, seed=seed))
    return row


def decide(p_holm: float | None, diff: float | None, mde: float | None, *,
           max_drop: float, alpha: float, sequential: bool = False) -> Verdict:
    """*regression* when ``p_holm < alpha``; *inconclusive* when the observed drop
    ``-diff`` exceeds ``max_drop`` and ``mde`` exceeds it (or is unknown, or the test is
    sequential), or when no task was left to test; else *pass*."""
    if p_holm is not None and p_holm < alpha:
        return "regression"
    if diff is None:  # nothing left to test (every shared task excluded as flaky)
        return "inconclusive"
    drop = -diff
    if drop > max_drop + 1e-12 and (sequential or mde is None or mde > drop):
        return "inconclusive"
    return "pass"


def _points(x: float, metric: Metric) -> str:
    if metric == "success":
        return f"{round(100 * x, 1) + 0.0:.1f} points"
    return f"{x + 0.0:.3g}"


def _p_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def sentence(row: dict[str, Any], *, metric: Metric = "success", n_groups: int = 1) -> str:
    """One plain sentence per group: the verdict, the change with its p-value (Holm when
    there are several groups), and what the suite can detect."""
    group = row["group"]
    if row["diff"] is None or row["p_value"] is None:
        return f"{group}: no tested task ({row.get('interval_note') or 'nothing to test'})"
    diff = row["diff"]
    unit = "points " if metric == "success" else ""
    if diff < 0:
        change = f"candidate is {_points(-diff, metric)} worse on {group}"
    elif diff > 0:
        change = f"candidate is {_points(diff, metric)} better on {group}"
    else:
        change = f"candidate scores the same as the baseline on {group}"
    p = row["p_holm"] if n_groups > 1 else row["p_value"]
    kind = "anytime-valid p" if row["test"] == TEST_SEQUENTIAL else "p"
    holm = ", Holm" if n_groups > 1 else ""
    text = f"{change} ({kind} = {_p_text(p)}{holm})"
    if row["max_drop"] > 0:
        text += f", allowed drop {_points(row['max_drop'], metric)}"
    mde = row["mde"]
    if row["verdict"] == "inconclusive":
        detail = (f"this suite only detects drops of {_points(mde, metric)}" if mde
                  else "this suite cannot say whether the drop is real")
        text = f"inconclusive: {text}; {detail}"
    else:
        text = f"{row['verdict'].upper() if row['verdict'] == 'regression' else 'pass'}: {text}"
        if mde is not None:
            text += f"; this suite detects drops of {_points(mde, metric)}"
        elif row["tested_tasks"] > 0:
            text += f"; no drop {unit}up to the maximum is detectable with these tasks"
    if row["regressed_tasks"]:
        text += f"; {len(row['regressed_tasks'])} hard regression(s)"
    return text


@dataclass
class GateResult(TableResult):
    """The gate's verdict. ``rows``: one per group (keys in the module docstring and
    ``docs/ci-gate.md``: ``group, baseline, candidate, shared_tasks, baseline_rate,
    candidate_rate, diff, diff_ci_low, diff_ci_high, p_value, p_holm, test, max_drop, mde,
    verdict, flaky_tasks, regressed_tasks, sentence`` ...); ``meta``: ``verdict`` and the
    parameters."""

    SCHEMA: ClassVar[str] = "evalatlas.gate/1"

    @property
    def verdict(self) -> Verdict:
        return self.meta["verdict"]

    @property
    def sentences(self) -> list[str]:
        return [r["sentence"] for r in self.rows]

    def exit_code(self, fail_inconclusive: bool = False) -> int:
        """0 pass, 1 regression, 3 inconclusive when ``fail_inconclusive`` (else 0)."""
        if self.verdict == "regression":
            return 1
        if self.verdict == "inconclusive" and fail_inconclusive:
            return 3
        return 0


def check_gate_arguments(*, metric: str, max_drop: float, alpha: float, by: str,
                         power: float) -> None:
    """:class:`ArgumentError` naming the argument (API words) and what it accepts."""
    if metric not in METRICS:
        raise ArgumentError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    if by not in GROUP_BYS:
        raise ArgumentError(f"by must be one of {', '.join(GROUP_BYS)}; got {by!r}")
    if not isinstance(max_drop, int | float) or not 0 <= max_drop < 1:
        raise ArgumentError(f"max_drop must be a fraction in [0, 1), e.g. 0.02 for 2 points; "
                         f"got {max_drop!r}")
    for name, v in (("alpha", alpha), ("power", power)):
        if not isinstance(v, int | float) or not 0 < v < 1:
            raise ArgumentError(f"{name} must be a fraction in (0, 1); got {v!r}")
    if not alpha < 0.5:
        raise ArgumentError(f"alpha must be below 0.5 for a one-sided test; got {alpha!r}")


def gate_sides(
    baseline: SideData, candidate: SideData, *, baseline_name: str = "baseline",
    candidate_name: str = "candidate", metric: Metric = "success", max_drop: float = 0.0,
    alpha: float = 0.05, by: GroupBy = "benchmark", exclude_flaky: bool = False,
    sequential: bool = False, power: float = 0.8, n_resamples: int = 9_999, seed: int = 0,
) -> GateResult:
    """The gate over two sides' episodes (see the module docstring). Raises
    :class:`GateDataError` when the sides share no task."""
    check_gate_arguments(metric=metric, max_drop=max_drop, alpha=alpha, by=by, power=power)
    base, cand = _tasks(baseline, metric, by), _tasks(candidate, metric, by)
    groups = sorted({k[0] for k in base.attempts} | {k[0] for k in cand.attempts})
    rows, notes, unshared = [], [], []
    for g in groups:
        row = _group_row(g, base, cand, metric=metric, max_drop=max_drop, alpha=alpha,
                         power=power, exclude_flaky=exclude_flaky, sequential=sequential,
                         n_resamples=n_resamples, seed=seed)
        if row is None:
            unshared.append(g)
            continue
        rows.append({"baseline": baseline_name, "candidate": candidate_name, **row})
    if not rows:
        raise GateDataError(
            f"{baseline_name} and {candidate_name} share no task with a known "
            f"{'outcome' if metric == 'success' else 'reward'} "
            f"({len(base.attempts)} baseline and {len(cand.attempts)} candidate tasks)")
    adjusted = holm_adjust([r["p_value"] if r["p_value"] is not None else math.nan
                            for r in rows])
    for r, p in zip(rows, adjusted, strict=True):
        r["p_holm"] = None if math.isnan(p) else p
        r["verdict"] = decide(r["p_holm"], r["diff"], r["mde"], max_drop=max_drop,
                              alpha=alpha, sequential=sequential)
        r["sentence"] = sentence(r, metric=metric, n_groups=len(rows))
    verdicts = {r["verdict"] for r in rows}
    verdict: Verdict = ("regression" if "regression" in verdicts else
                        "inconclusive" if "inconclusive" in verdicts else "pass")
    if unshared:
        notes.append("not compared (no task both sides ran with a known value): "
                     + ", ".join(unshared))
    left = [(r["group"], r["baseline_only_tasks"], r["candidate_only_tasks"]) for r in rows
            if r["baseline_only_tasks"] or r["candidate_only_tasks"]]
    for g, b, c in left:
        notes.append(f"{g}: left out {b} task(s) only the baseline ran and {c} only the "
                     "candidate ran")
    if exclude_flaky:
        n_flaky = sum(r["excluded_flaky"] for r in rows)
        notes.append(f"{n_flaky} flaky task(s) (baseline attempts disagree) left out of "
                     "the test (exclude_flaky)")
    if len(rows) > 1:
        notes.append(f"p-values are Holm-adjusted across {len(rows)} groups")
    if sequential:
        notes.append("sequential: anytime-valid test (Waudby-Smith & Ramdas 2023 betting "
                     "e-process); interval is the confidence sequence; mde is the "
                     "fixed-sample test's (the sequential test needs larger drops)")
    return GateResult(rows=rows, notes=notes, meta={
        "verdict": verdict, "baseline": baseline_name, "candidate": candidate_name,
        "metric": metric, "max_drop": max_drop, "alpha": alpha, "power": power, "by": by,
        "sequential": sequential, "exclude_flaky": exclude_flaky,
        "interval": f"{round(100 * (1 - 2 * alpha))}% two-sided" + (
            " confidence sequence (anytime-valid)" if sequential else ""),
        "groups_not_compared": unshared})


@dataclass
class GatePlanResult(TableResult):
    """How many tasks a suite needs to detect a drop. ``meta``: ``tasks_needed`` and
    ``attempts_per_task`` (the chosen design), ``drop``, ``power``, ``alpha``,
    ``effective_drop`` (smaller than ``drop`` when some tasks cannot fall that far),
    ``baseline_tasks``; ``rows``: ``attempts_per_task``, ``tasks_needed``, ``episodes``
    for other attempt counts."""

    SCHEMA: ClassVar[str] = "evalatlas.gate_plan/1"


def plan_sides(
    baseline: SideData, *, baseline_name: str = "baseline", drop: float = 0.03,
    power: float = 0.8, alpha: float = 0.05, attempts: int | None = None,
) -> GatePlanResult:
    """Tasks (and attempts per task) needed to detect a uniform ``drop`` of every task's
    success probability with ``power`` at one-sided ``alpha``, from the baseline's own
    per-task success rates (:func:`evalatlas.stats.noninferiority.uniform_drop_variance`
    and :func:`~evalatlas.stats.noninferiority.tasks_for_drop`). ``attempts``: the design
    to answer for (default: the baseline's median attempts per task)."""
    check_gate_arguments(metric="success", max_drop=0.0, alpha=alpha, by="none", power=power)
    if not isinstance(drop, int | float) or not 0 < drop < 1:
        raise ArgumentError(f"drop must be a fraction in (0, 1), e.g. 0.03 for 3 points; "
                         f"got {drop!r}")
    if attempts is not None and (not isinstance(attempts, int) or attempts < 1):
        raise ArgumentError(f"attempts must be a whole number >= 1; got {attempts!r}")
    tasks = _tasks(baseline, "success", "none")
    if not tasks.attempts:
        raise GateDataError(f"{baseline_name} has no episode with a known outcome")
    keys = sorted(tasks.attempts)
    n_obs = np.array([tasks.attempts[k] for k in keys], dtype=float)
    rates = np.array([tasks.successes[k] for k in keys], dtype=float) / n_obs
    chosen = attempts or max(1, int(np.median(n_obs)))
    rows: list[dict[str, Any]] = []
    for k in sorted({1, 2, 3, 5, 10, chosen}):
        var, eff = uniform_drop_variance(rates, n_obs, drop, k)
        if eff <= 0:
            need = None
        elif k == 1:  # the gate's test is then exact McNemar; psi = E[d^2] = Var + drop^2
            need = tasks_for_drop(eff, alpha=alpha, power=power, discordance=min(
                1.0, var + eff * eff))
        else:
            need = tasks_for_drop(eff, alpha=alpha, power=power, variance=var, attempts=k)
        rows.append({"attempts_per_task": k, "tasks_needed": need,
                     "episodes": None if need is None else 2 * k * need,
                     "variance": var, "effective_drop": eff})
    pick = next(r for r in rows if r["attempts_per_task"] == chosen)
    notes = []
    if pick["effective_drop"] < drop - 1e-12:
        notes.append(f"some tasks cannot drop by {100 * drop:.1f} points (their baseline rate "
                     f"is lower); the mean drop is {100 * pick['effective_drop']:.1f} points")
    if np.any(n_obs < 2):
        notes.append("tasks the baseline ran once share their pooled rate (variance "
                     "from the homogeneous case, an upper bound)")
    return GatePlanResult(rows=rows, notes=notes, meta={
        "tasks_needed": pick["tasks_needed"], "attempts_per_task": chosen, "drop": drop,
        "power": power, "alpha": alpha, "effective_drop": pick["effective_drop"],
        "baseline": baseline_name, "baseline_tasks": len(keys)})
