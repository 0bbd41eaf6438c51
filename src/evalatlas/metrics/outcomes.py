"""Outcome metrics of ProjectScylla's formula document (seed 001), and repeated attempts.

Source: seed ``001_c2247a53c86a0242.txt`` ("Metrics Formulas Documentation"), with the
upstream drift described in ``shared/reference/scylla.md`` §3 and §10. Where the current
ProjectScylla code differs from the document, the document is the default and the code's
behaviour an option (``ddof=1``, ``scale="scylla"``).

Repeated attempts: the unbiased pass@k estimator of Chen et al. 2021 (arXiv 2107.03374) in
its numerically stable product form, pass^k of the tau-bench paper (arXiv 2406.12045), and
FC-Eval / terminal-bench's default k values and per-task averaging
(``shared/reference/fc-eval.md`` §9, ``statistics.md`` §1).

Edge cases never crash and never become a silent 0: no data gives NaN, a zero pass rate
gives an infinite cost of pass, an undefined uplift is ``None`` with a reason.
Everything here is a pure function of numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from evalatlas.metrics.missing import known, known_values

GradeScale = Literal["seed", "scylla"]

GRADE_SCALES: dict[str, tuple[tuple[str, float], ...]] = {
    # seed 001 "Letter Grade Assignment" (document and code of 2025-12-30)
    "seed": (("A", 0.95), ("B", 0.85), ("C", 0.75), ("D", 0.65)),
    # ProjectScylla since 2026-01-02 (#114/PR #120): S only at exactly 1.0
    "scylla": (("S", 1.0), ("A", 0.80), ("B", 0.60), ("C", 0.40), ("D", 0.20)),
}
"""Grade thresholds (grade, minimum score), best first; below the last one is F."""


# --------------------------------------------------------------------------- per run


def pass_rate(passed: bool | Iterable[bool | None]) -> float:
    """Pass rate: ``1.0 if passed else 0.0`` for one run (seed 001), the mean for many.

    For an iterable, ``None`` (pass/fail unknown) is excluded from the denominator; an
    empty or all-unknown iterable gives NaN (no runs: no rate), never 0.
    """
    if isinstance(passed, bool | np.bool_):
        return 1.0 if passed else 0.0
    known = [bool(p) for p in passed if p is not None]
    if not known:
        return math.nan
    return sum(known) / len(known)


def impl_rate(weighted_score: float | None, *, clamp: bool = True) -> float:
    """Implementation rate = the judge's ``weighted_score`` (seed 001), in [0, 1].

    ``clamp=True`` clips to [0, 1] as ProjectScylla's ``calculate_impl_rate`` does
    (``RunAggregator`` does not; ``clamp=False`` reproduces that). Missing gives NaN.
    """
    v = known(weighted_score)
    if v is None:
        return math.nan
    return min(1.0, max(0.0, v)) if clamp else v


CORRECTNESS_SCALE = (1.0, 5.0)
"""The judges' correctness scale (framework-comparison seed 003: 1 = wrong ... 5 = right)."""


def reward_from_correctness(correctness: float | None) -> float | None:
    """Reward in [0, 1] from a 1-5 judge correctness: ``(correctness - 1) / 4``.

    The one definition (the runner, the ``judge`` command and the framework-results
    adapter all use it). 1 maps to 0 and 5 to 1, so success (reward > 0) means
    correctness above 1, as seed 003 reads it. A value outside the 1-5 scale (upstream
    results files have carried 0 and 10) is **clamped** to [0, 1] rather than producing a
    negative reward or one above 1. None or NaN (no judge, a failed judge) gives None: an
    unknown outcome, never 0.
    """
    c = known(correctness)
    if c is None:
        return None
    low, high = CORRECTNESS_SCALE
    return min(1.0, max(0.0, (c - low) / (high - low)))


def duration(start: float | datetime | None, end: float | datetime | None) -> float:
    """Duration in seconds = ``end_time - start_time`` (seed 001).

    Timestamps as epoch seconds or datetimes (aware or naive, not mixed). Missing gives
    NaN; an end before the start is an error, not a negative duration. Note that
    ProjectScylla's run ``duration_seconds`` adds judge time to agent time
    (35.34 + 167.79 = 203.13 s in the dry run, scylla.md §3.5); compare agent time only.
    """
    if start is None or end is None:
        return math.nan
    if isinstance(start, datetime) and isinstance(end, datetime):
        seconds = (end - start).total_seconds()
    elif isinstance(start, datetime) or isinstance(end, datetime):
        raise ValueError("start and end must both be datetimes or both be numbers")
    else:
        if math.isnan(start) or math.isnan(end):
            return math.nan
        seconds = float(end) - float(start)
    if seconds < 0:
        raise ValueError(f"end is {-seconds:g} s before start")
    return seconds


def cost_of_pass(cost: float | None, pass_rate: float | None) -> float:
    """Cost of pass = ``cost_usd / pass_rate``; infinity when the pass rate is <= 0.

    Seed 001 ("CoP = infinity means never passes"); Erol et al. 2025 (arXiv 2504.13359)
    define it as expected cost per attempt over success probability, so ``cost`` should be
    the mean cost per run when ``pass_rate`` is a fraction over runs. A missing cost or
    pass rate gives NaN (unknown), not infinity and not 0.
    """
    c, p = known(cost), known(pass_rate)
    if c is None or p is None:
        return math.nan
    if p <= 0:
        return math.inf
    return c / p


def composite_score(
    pass_rate: float | None,
    impl_rate: float | None,
    weights: tuple[float, float] = (0.5, 0.5),
) -> float:
    """Composite = ``(pass_rate*wp + impl_rate*wi) / (wp + wi)`` (seed 001; default 0.5/0.5).

    A missing component gives NaN. Weights must be non-negative with a positive sum
    (upstream silently returns 0.0 for a zero total weight; here that is an error).
    """
    wp, wi = weights
    if wp < 0 or wi < 0 or wp + wi <= 0:
        raise ValueError(f"composite weights must be >= 0 with a positive sum, got {weights}")
    p, i = known(pass_rate), known(impl_rate)
    if p is None or i is None:
        return math.nan
    return (p * wp + i * wi) / (wp + wi)


# --------------------------------------------------------------------------- aggregates


@dataclass(frozen=True)
class Statistics:
    """Seed 001's aggregate record, plus what it leaves out: NaNs dropped and why std is NaN.

    ``count`` counts the values used (NaN excluded); ``n_nan`` the NaN values excluded.
    With no values every field is NaN (not 0 as upstream). With an infinite value the
    median, min and max stay exact, the mean is +/-infinity and ``std_dev`` is NaN with
    ``std_dev_note`` saying why.
    """

    median: float
    mean: float
    mode: float
    min: float
    max: float
    std_dev: float
    count: int
    n_nan: int = 0
    ddof: int = 0
    std_dev_note: str | None = None


def _mode_smallest(values: Sequence[float], decimals: int | None) -> float:
    keyed = [round(v, decimals) if decimals is not None and math.isfinite(v) else v
             for v in values]
    counts = Counter(keyed)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def compute_statistics(
    values: Iterable[float | None], ddof: int = 0, *, mode_decimals: int | None = 6
) -> Statistics:
    """Median, mean, mode, min, max, standard deviation and count (seed 001).

    - median: middle value, mean of the two middle values for even counts;
    - mode: most frequent value, the **smallest** on ties; values are grouped after
      rounding to ``mode_decimals`` places (ProjectScylla rounds to 6) so that float noise
      does not split a mode; ``None`` compares exactly;
    - std_dev: ``sqrt(sum((v - mean)^2) / (n - ddof))``: ``ddof=0`` is the document's
      population deviation ("we have all 10 runs"), ``ddof=1`` ProjectScylla's code since
      2026-03-25. Fewer than ``ddof + 1`` values give NaN.

    ``None`` and NaN values are excluded and counted in ``n_nan``.
    """
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    raw = [None if v is None else float(v) for v in values]
    vals = [v for v in raw if v is not None and not math.isnan(v)]
    n_nan = len(raw) - len(vals)
    n = len(vals)
    if n == 0:
        nan = math.nan
        return Statistics(nan, nan, nan, nan, nan, nan, 0, n_nan, ddof, "no values")
    s = sorted(vals)
    mid = n // 2
    median = s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
    if n % 2 == 0 and math.isinf(s[mid - 1]) and math.isinf(s[mid]) and s[mid - 1] != s[mid]:
        median = math.nan  # (-inf + inf) / 2: no meaningful middle
    note = None
    if any(math.isinf(v) for v in vals):
        has_pos = any(v == math.inf for v in vals)
        has_neg = any(v == -math.inf for v in vals)
        mean = math.nan if has_pos and has_neg else (math.inf if has_pos else -math.inf)
        std = math.nan
        note = "undefined: infinite values"
    else:
        mean = math.fsum(vals) / n
        if n - ddof <= 0:
            std = math.nan
            note = f"undefined: needs at least {ddof + 1} values with ddof={ddof}"
        else:
            std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - ddof))
    return Statistics(
        median=median, mean=mean, mode=_mode_smallest(vals, mode_decimals),
        min=s[0], max=s[-1], std_dev=std, count=n, n_nan=n_nan, ddof=ddof, std_dev_note=note,
    )


def letter_grade(score: float | None, scale: GradeScale = "seed") -> str | None:
    """Letter grade of a score in [0, 1], normally the median composite of a tier.

    ``scale="seed"``: A >= 0.95, B >= 0.85, C >= 0.75, D >= 0.65, else F (seed 001).
    ``scale="scylla"``: S only at exactly 1.0, A >= 0.80, B >= 0.60, C >= 0.40,
    D >= 0.20, else F (ProjectScylla since 2026-01-02).
    A missing (None/NaN) score has no grade: ``None``. Outside [0, 1] is an error, as
    upstream.
    """
    if scale not in GRADE_SCALES:
        raise ValueError(f"unknown grade scale {scale!r}; use one of {sorted(GRADE_SCALES)}")
    v = known(score)
    if v is None:
        return None
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"grade needs a score in [0, 1], got {v}")
    for grade, threshold in GRADE_SCALES[scale]:
        if v >= threshold:
            return grade
    return "F"


# --------------------------------------------------------------------------- cross tier


@dataclass(frozen=True)
class Uplift:
    """Relative improvement over the baseline; ``value`` None with a ``reason`` when undefined.

    ``absolute`` is ``tier_score - t0_score`` (what ProjectScylla's fig11 plots), defined
    whenever both scores are.
    """

    value: float | None
    reason: str | None = None
    absolute: float | None = None


def tier_uplift(tier_score: float | None, t0_score: float | None) -> Uplift:
    """Tier uplift = ``(tier_score - t0_score) / t0_score`` (seed 001), e.g. 0.75 -> 0.90: 0.20.

    Undefined (``value=None`` plus a reason) when either score is missing or the baseline
    is <= 0: a relative change from zero is infinite or meaningless, and the four upstream
    implementations disagree (they return 0). The absolute difference is still given.
    """
    t, b = known(tier_score), known(t0_score)
    if t is None or b is None:
        return Uplift(None, "missing score")
    if b == 0:
        return Uplift(None, "baseline score is 0: relative uplift undefined", t - b)
    if b < 0:
        return Uplift(None, "baseline score is negative: relative uplift undefined", t - b)
    return Uplift((t - b) / b, None, t - b)


def _finite_variance(values: Iterable[float | None], ddof: int) -> float:
    vals = known_values(values)
    if len(vals) - ddof <= 0 or any(math.isinf(v) for v in vals):
        return math.nan
    mean = math.fsum(vals) / len(vals)
    return math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - ddof)


def pass_rate_variance(tier_pass_rates: Iterable[float | None], ddof: int = 0) -> float:
    """Variance of the tiers' (median) pass rates: ``sum((x - mean)^2) / n`` (seed 001).

    ``ddof=1`` gives ProjectScylla's current sample variance. Missing tiers are skipped;
    too few values or an infinite value give NaN.
    """
    return _finite_variance(tier_pass_rates, ddof)


def cost_variance(tier_costs: Iterable[float | None], ddof: int = 0) -> float:
    """Variance of the tiers' (median) costs, population by default (seed 001)."""
    return _finite_variance(tier_costs, ddof)


def cost_delta(tier_costs: Iterable[float | None]) -> float:
    """Cost delta = ``max(costs) - min(costs)`` across tiers (seed 001); NaN with no costs."""
    vals = known_values(tier_costs)
    if not vals:
        return math.nan
    return max(vals) - min(vals)


# --------------------------------------------------------------------------- attempts


def accuracy(resolved: Iterable[bool | None]) -> float:
    """Accuracy = resolved trials / all trials; ``None`` counts as unresolved (FC-Eval §9).

    Unlike :func:`pass_rate`, an unknown outcome is a failure here, as in FC-Eval and
    terminal-bench. No trials gives NaN (FC-Eval returns 0.0).
    """
    vals = list(resolved)
    if not vals:
        return math.nan
    return sum(1 for r in vals if r) / len(vals)


def _check_nck(n: int, c: int, k: int) -> None:
    if n < 0 or c < 0 or c > n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021).

    Stable product form: 1 if ``n - c < k``, else ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``.
    ``n`` attempts, ``c`` of them correct. Fewer attempts than ``k`` gives NaN (as Inspect
    AI); :func:`pass_at_k_over_tasks` skips such tasks (as terminal-bench / FC-Eval).
    """
    _check_nck(n, c, k)
    if n < k:
        return math.nan
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: ``C(c, k) / C(n, k)``, the chance that k draws all succeed.

    tau-bench (arXiv 2406.12045); Inspect AI's ``pass_k`` reducer. Computed as
    ``prod_{i=0}^{k-1} (c - i) / (n - i)``. Fewer attempts than ``k`` gives NaN.
    """
    _check_nck(n, c, k)
    if n < k:
        return math.nan
    if c < k:
        return 0.0
    prod = 1.0
    for i in range(k):
        prod *= (c - i) / (n - i)
    return prod


def _task_counts(
    successes_by_task: Mapping[str, Sequence[bool | None]] | Iterable[Sequence[bool | None]],
) -> list[tuple[int, int]]:
    groups = successes_by_task.values() if isinstance(successes_by_task, Mapping) \
        else successes_by_task
    return [(len(g), sum(1 for s in g if s)) for g in groups]


def pass_at_k_over_tasks(
    successes_by_task: Mapping[str, Sequence[bool | None]] | Iterable[Sequence[bool | None]],
    k: int,
) -> float:
    """pass@k per task, then the unweighted mean over tasks with at least ``k`` attempts.

    As terminal-bench and FC-Eval (``fc-eval.md`` §9): ``None`` outcomes count as
    failures; tasks with fewer than ``k`` attempts are skipped; no eligible task: NaN.
    Example: tasks 0/5, 5/5, 2/5 give pass@2 = (0 + 1 + 0.7) / 3.
    """
    vals = [pass_at_k(n, c, k) for n, c in _task_counts(successes_by_task) if n >= k]
    return math.fsum(vals) / len(vals) if vals else math.nan


def pass_hat_k_over_tasks(
    successes_by_task: Mapping[str, Sequence[bool | None]] | Iterable[Sequence[bool | None]],
    k: int,
) -> float:
    """pass^k per task, averaged over tasks with at least ``k`` attempts (NaN if none)."""
    vals = [pass_hat_k(n, c, k) for n, c in _task_counts(successes_by_task) if n >= k]
    return math.fsum(vals) / len(vals) if vals else math.nan


def _checked_counts(n: np.ndarray, c: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-task attempts and successes as int arrays, validated for the pass@k/pass^k family."""
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if n.shape != c.shape:
        raise ValueError(f"n and c differ in shape: {n.shape} vs {c.shape}")
    if np.any((c < 0) | (c > n)):
        raise ValueError("need 0 <= c <= n for every task")
    return n, c


def pass_at_k_counts(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Vectorised :func:`pass_at_k` over arrays of per-task attempts ``n`` and successes ``c``.

    Same estimator via ``prod_{i=a+1}^{b}(1 - k/i) = exp(L[b] - L[a])`` with ``L`` the
    cumulative sum of ``log(1 - k/i)`` for ``i > k``; NaN where ``n < k``. For large
    stores (one call per group instead of one per task).
    """
    n, c = _checked_counts(n, c, k)
    out = np.full(n.shape, np.nan)
    if n.size == 0:
        return out
    top = int(n.max())
    i = np.arange(top + 1, dtype=np.float64)
    logs = np.zeros(top + 1)
    mask = i > k
    logs[mask] = np.log1p(-k / i[mask])
    cum = np.cumsum(logs)
    ok = n >= k
    all_pass = ok & (n - c < k)
    out[all_pass] = 1.0
    rest = ok & ~all_pass
    out[rest] = 0.0 - np.expm1(cum[n[rest]] - cum[n[rest] - c[rest]])
    return out


def pass_hat_k_counts(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Vectorised :func:`pass_hat_k`: ``C(c, k) / C(n, k)`` per task (tau-bench pass^k).

    ``log C(c,k) - log C(n,k) = (L[c] - L[c-k]) - (L[n] - L[n-k])`` with ``L[x] =
    log x!`` (a cumulative sum of logs); 0 where ``c < k``, NaN where ``n < k``.
    """
    n, c = _checked_counts(n, c, k)
    out = np.full(n.shape, np.nan)
    if n.size == 0:
        return out
    logfact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, int(n.max()) + 1)))))
    ok = n >= k
    out[ok] = 0.0
    some = ok & (c >= k)
    ns, cs = n[some], c[some]
    out[some] = np.exp((logfact[cs] - logfact[cs - k]) - (logfact[ns] - logfact[ns - k]))
    return out


def attempt_k_values(min_attempts: int) -> list[int]:
    """Every k from 1 to the fewest attempts of a task (issue 10: pass@k and pass^k are
    reported for each k the data supports); ``[]`` when no task has an attempt."""
    return list(range(1, max(0, int(min_attempts)) + 1))


def default_k_values(min_attempts: int) -> list[int]:
    """The k values FC-Eval / terminal-bench report for ``m`` = the fewest attempts of a task.

    ``{2^i : 1 <= i <= floor(log2 m)}``, plus 5 if ``m >= 5`` and 10 if ``m >= 10``;
    so 1 attempt gives ``[]``, 3 give ``[2]``, 5 give ``[2, 4, 5]``.
    """
    m = int(min_attempts)
    ks: set[int] = set()
    p = 2
    while p <= m:
        ks.add(p)
        p *= 2
    if m >= 5:
        ks.add(5)
    if m >= 10:
        ks.add(10)
    return sorted(ks)
