"""FC-Eval performance metrics: speedups, benchmark names, levels, advantage, fallback.

Source: the FC-Eval metrics guide (seed ``000_4831be6494944efa``) and the upstream code it
describes (``fc_eval-0.1.0`` parser and harness, datasmith adapter ``parser.py``), as
summarised in ``shared/reference/fc-eval.md`` sections 3-7. Pure functions: samples and
speedups in, numbers out. The seed's / fceval's behaviour is the default; the adapter
variants (name parsing that needs a letter in the class, gmean whose denominator counts
non-positive values) are options.

Definitions (per benchmark *i*, medians are ``numpy.nanmedian``):

- ``agent/nop = median(nop_i) / median(agent_i)``, ``oracle/nop = median(nop_i) /
  median(oracle_i)``, ``advantage_i = agent/nop - oracle/nop``;
- a benchmark is *valid* when nop, oracle and agent samples are all present and
  non-empty, each median is finite and non-zero, and both speedups are finite;
- ``gmean`` keeps values that are finite and > 0 and is ``None`` when none is left;
- level advantage (1 = module, 2 = class, 3 = function, 4 = overall) = arithmetic mean
  over groups of ``gmean(agent speedups) - gmean(oracle speedups)``; groups where either
  gmean is None are skipped; 0.0 when there is no group;
- task speedup = gmean of the valid agent speedups, 1.0 when there is none.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

SpeedupValues = Sequence[float | None] | np.ndarray
"""Per-benchmark speedups: a sequence (None or a non-number is missing) or a float array."""

LEVELS: tuple[int, ...] = (1, 2, 3, 4)
"""1 = module, 2 = (module, class), 3 = (module, class, function), 4 = overall."""

LEVEL_NAMES: dict[int, str] = {1: "module", 2: "class", 3: "function", 4: "overall"}


# --------------------------------------------------------------------------- speedups


def median_time(samples: Sequence[float] | np.ndarray | None) -> float | None:
    """``numpy.nanmedian`` of timing samples; ``None`` for missing, empty or all-NaN."""
    if samples is None:
        return None
    arr = np.asarray(samples, dtype=float)
    if arr.size == 0 or np.all(np.isnan(arr)):
        return None
    return float(np.nanmedian(arr))


@dataclass(frozen=True)
class BenchmarkSpeedup:
    """Speedups of one benchmark; ``reason`` says why it is invalid (None when valid)."""

    baseline_time: float | None
    oracle_time: float | None
    agent_time: float | None
    speedup_agent: float | None
    speedup_oracle: float | None
    advantage: float | None
    valid: bool
    reason: str | None = None


def _usable(m: float | None) -> bool:
    return m is not None and math.isfinite(m) and m != 0


def benchmark_speedup(
    nop: Sequence[float] | np.ndarray | None,
    oracle: Sequence[float] | np.ndarray | None,
    agent: Sequence[float] | np.ndarray | None,
) -> BenchmarkSpeedup:
    """Per-benchmark speedups and validity from raw samples (reference 3.3).

    ``agent/nop = median(nop) / median(agent)``; ``oracle/nop`` likewise; ``advantage``
    is their difference. Invalid benchmarks keep whatever medians could be computed,
    and ``speedup_*``/``advantage`` are None so they never enter an aggregate.
    """
    meds = {k: median_time(v) for k, v in (("nop", nop), ("oracle", oracle), ("agent", agent))}
    reason = None
    for k, v in (("nop", nop), ("oracle", oracle), ("agent", agent)):
        if v is None or len(v) == 0:
            reason = f"no {k} samples"
            break
        if not _usable(meds[k]):
            reason = f"{k} median is {meds[k]!r} (must be finite and non-zero)"
            break
    sa = so = adv = None
    m_nop, m_oracle, m_agent = meds["nop"], meds["oracle"], meds["agent"]
    if reason is None and m_nop is not None and m_oracle is not None and m_agent is not None:
        sa = m_nop / m_agent
        so = m_nop / m_oracle
        if not (math.isfinite(sa) and math.isfinite(so)):
            reason, sa, so = "speedup is not finite", None, None
        else:
            adv = sa - so
    return BenchmarkSpeedup(meds["nop"], meds["oracle"], meds["agent"], sa, so, adv,
                            reason is None, reason)


def speedups_from_sample_matrix(
    nop: np.ndarray, oracle: np.ndarray, agent: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised :func:`benchmark_speedup` for ``(..., n_benchmarks, n_samples)`` arrays.

    Leading dimensions (e.g. tasks) are allowed; rows padded with NaN are allowed
    (``nanmedian``). Returns ``(agent/nop, oracle/nop,
    valid)``; speedups of invalid rows are NaN. Same formula and validity rules.
    """
    with np.errstate(all="ignore"):
        mn, mo, ma = (_row_medians(np.asarray(x, dtype=float)) for x in (nop, oracle, agent))
        sa = mn / ma
        so = mn / mo
    ok = np.ones(mn.shape, dtype=bool)
    for m in (mn, mo, ma):
        ok &= np.isfinite(m) & (m != 0)
    ok &= np.isfinite(sa) & np.isfinite(so)
    return np.where(ok, sa, np.nan), np.where(ok, so, np.nan), ok


def _row_medians(x: np.ndarray) -> np.ndarray:
    """``nanmedian`` along the last axis; the plain (faster) median when there is no NaN."""
    if x.ndim < 2:
        raise ValueError(f"expected a (..., benchmarks, samples) array, got shape {x.shape}")
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], np.nan)
    medians: np.ndarray
    if not np.isnan(x).any():
        medians = np.median(x, axis=-1)
        return medians
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN
        medians = np.nanmedian(x, axis=-1)
    return medians


# --------------------------------------------------------------------------- names


def deconstruct_benchmark(
    name: str, *, variant: Literal["fceval", "adapter"] = "fceval"
) -> tuple[str | None, str | None, str | None, str | None]:
    """Benchmark name -> ``(module, class, function, params)`` (reference section 4).

    1. strip; if the name contains ``(`` and ends with ``)``, the part from the first
       ``(`` is the parameter list (returned without the outer parentheses);
    2. split the rest on ``.`` and drop empty parts: 0 parts -> all None; 1 part ->
       function only; >= 3 parts with ``parts[-2]`` starting with an uppercase letter ->
       ``(join(parts[:-2]) or None, parts[-2], parts[-1])``; otherwise
       ``(join(parts[:-1]), None, parts[-1])``.

    ``variant="adapter"`` is the datasmith ``parser.py`` rule, which also requires the
    class candidate to contain a letter. fceval returns no params; evalatlas returns them
    as a fourth element in both variants (it does not change the grouping).
    """
    return _deconstruct(name, variant)


@lru_cache(maxsize=1 << 16)
def _deconstruct(
    name: str, variant: str
) -> tuple[str | None, str | None, str | None, str | None]:
    s = name.strip()
    params: str | None = None
    if "(" in s and s.endswith(")"):
        cut = s.index("(")
        params = s[cut + 1 : -1]
        s = s[:cut]
    parts = [p for p in s.split(".") if p]
    if not parts:
        return None, None, None, params
    if len(parts) == 1:
        return None, None, parts[0], params
    cls = parts[-2]
    is_class = len(parts) >= 3 and cls[0].isupper()
    if variant == "adapter":
        is_class = is_class and any(c.isalpha() for c in cls)
    if is_class:
        return ".".join(parts[:-2]) or None, cls, parts[-1], params
    return ".".join(parts[:-1]), None, parts[-1], params


def group_key(
    level: int, module: str | None, class_name: str | None, function: str | None
) -> tuple[str | None, ...]:
    """The grouping key of a benchmark at ``level`` (L3 pools all param variants)."""
    if level == 1:
        return (module,)
    if level == 2:
        return (module, class_name)
    if level == 3:
        return (module, class_name, function)
    if level == 4:
        return ()
    raise ValueError(f"level must be 1, 2, 3 or 4, got {level!r}")


# --------------------------------------------------------------------------- means


def gmean(
    values: Iterable[float | None], *, variant: Literal["fceval", "adapter"] = "fceval"
) -> float | None:
    """Geometric mean as FC-Eval computes it (reference section 5).

    ``fceval`` (default, ``_safe_gmean``): keep finite values > 0, ``exp(mean(log))``,
    None when nothing is left. ``adapter`` (datasmith ``gmean``):
    ``exp(sum(log x for x > 0) / len(data))`` - the denominator also counts the
    non-positive values (upstream quirk 4), None for empty input.
    """
    if isinstance(values, np.ndarray):
        values = values.tolist()
    vals = [v for v in values if v is not None]
    if variant == "adapter":
        if not vals:
            return None
        return math.exp(sum(math.log(v) for v in vals if v > 0) / len(vals))
    arr = _speedup_array(vals)
    with np.errstate(invalid="ignore"):
        kept = arr[np.isfinite(arr) & (arr > 0)]
    if kept.size == 0:
        return None
    return float(np.exp(np.log(kept).mean()))


def level_advantages(
    names: Sequence[tuple[str | None, str | None, str | None]],
    agent_speedups: SpeedupValues,
    oracle_speedups: SpeedupValues,
) -> dict[int, float]:
    """Advantage at levels 1-4 from per-benchmark speedups (reference section 5).

    ``names`` are ``(module, class, function)`` triples (from
    :func:`deconstruct_benchmark`). A benchmark is dropped when either speedup is
    missing, <= 0 or non-finite; per group ``gmean(agent) - gmean(oracle)``; the level
    value is the arithmetic mean over groups, 0.0 when there is none.
    """
    if not (len(names) == len(agent_speedups) == len(oracle_speedups)):
        raise ValueError("names, agent_speedups and oracle_speedups must have equal length")
    return _levels(_level_codes(tuple(names)), agent_speedups, oracle_speedups)


def level_advantages_for_names(
    benchmarks: Sequence[str],
    agent_speedups: SpeedupValues,
    oracle_speedups: SpeedupValues,
) -> dict[int, float]:
    """:func:`level_advantages` from benchmark names (parsed by
    :func:`deconstruct_benchmark`)."""
    if not (len(benchmarks) == len(agent_speedups) == len(oracle_speedups)):
        raise ValueError("benchmarks, agent_speedups and oracle_speedups must have equal length")
    return _levels(_name_codes(tuple(benchmarks)), agent_speedups, oracle_speedups)


def _levels(codes_by_level: tuple[np.ndarray, ...], agent_speedups: SpeedupValues,
            oracle_speedups: SpeedupValues) -> dict[int, float]:
    a = _speedup_array(agent_speedups)
    o = _speedup_array(oracle_speedups)
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(a) & (a > 0) & np.isfinite(o) & (o > 0)
    if not keep.any():
        return {level: 0.0 for level in LEVELS}
    la, lo = np.log(a[keep]), np.log(o[keep])
    out: dict[int, float] = {}
    for level, codes in zip(LEVELS, codes_by_level, strict=True):
        idx = codes[keep]
        n = np.bincount(idx)
        used = n > 0
        ga = np.exp(np.bincount(idx, weights=la)[used] / n[used])
        go = np.exp(np.bincount(idx, weights=lo)[used] / n[used])
        out[level] = float(np.mean(ga - go))
    return out


def _as_speedup(v: object) -> float:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    return math.nan


def _speedup_array(values: SpeedupValues) -> np.ndarray:
    """Floats with non-numeric entries (None, bools, strings) as NaN."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        return values.astype(float, copy=False)
    return np.array([v if type(v) is float else _as_speedup(v) for v in values], dtype=float)


@lru_cache(maxsize=1024)
def _level_codes(names: tuple[tuple[str | None, ...], ...]) -> tuple[np.ndarray, ...]:
    """Integer group ids of every benchmark at levels 1-4 (cached: the same benchmark
    list recurs for every agent and attempt of a task)."""
    out = []
    for level in LEVELS:
        seen: dict[tuple[str | None, ...], int] = {}
        out.append(np.fromiter((seen.setdefault(group_key(level, *n[:3]), len(seen))
                                for n in names), dtype=np.int64, count=len(names)))
    return tuple(out)


@lru_cache(maxsize=1024)
def _name_codes(benchmarks: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    return _level_codes(tuple(deconstruct_benchmark(b)[:3] for b in benchmarks))


def task_speedup(agent_speedups: Iterable[float | None]) -> float:
    """Task speedup = gmean of the valid agent speedups, 1.0 when there is none."""
    g = gmean(agent_speedups)
    return 1.0 if g is None else g


# --------------------------------------------------------------------------- failures


def pytest_block_failed(tests: object) -> bool:
    """Parser-path pytest failure (reference 6): no dict, ``error`` key missing or equal
    to 1 (``tests.get("error", 1) == 1``: a summary without ``error`` fails, including
    the "tests skipped" payload), or ``failed + error > 0``."""
    if not isinstance(tests, dict):
        return True
    if tests.get("error", 1) == 1:
        return True
    return _num(tests.get("failed")) + _num(tests.get("error")) > 0


def snapshot_block_failed(snapshot: object) -> bool:
    """Parser-path snapshot failure (reference 6): no dict, an ``error`` key, or
    ``pass-to-fail > 0``. A ``failed`` count alone does not fail."""
    if not isinstance(snapshot, dict):
        return True
    if "error" in snapshot:
        return True
    return _num(snapshot.get("pass-to-fail", snapshot.get("pass_to_fail"))) > 0


def merge_pytest_failed(failures: int, oracle_failures: int | None) -> bool:
    """Multi-agent merge rule: failures (``failed + error``) exceed the oracle's when an
    oracle ran, otherwise any failure fails (seed, Failure Conditions)."""
    if oracle_failures is not None:
        return failures > oracle_failures
    return failures > 0


def merge_snapshot_failed(status: str | None, pass_to_fail: int | float | None) -> bool:
    """Multi-agent merge rule: status is not ``passed`` (missing counts as failed) or
    ``pass_to_fail > 0``."""
    return (status or "failed").lower() != "passed" or _num(pass_to_fail) > 0


def _num(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return 0.0
    return float(v)


def fallback_speedups(
    oracle_speedups: Sequence[float | None],
) -> tuple[list[float], list[float], list[float]]:
    """Revert-to-baseline for a failed agent: ``agent/nop = 1.0``, ``oracle/nop`` kept
    (1.0 when missing or non-finite, as upstream), ``advantage = 1 - oracle/nop``."""
    so = [o if o is not None and math.isfinite(o) else 1.0 for o in oracle_speedups]
    return [1.0] * len(so), so, [1.0 - o for o in so]


# --------------------------------------------------------------------------- payload


@dataclass(frozen=True)
class TaskMetrics:
    """The per-agent task payload (seed: ``agent_metrics_by_agent[agent:model]``)."""

    per_benchmark_speedups: dict[str, dict[str, float | bool]]
    pytest_summary: dict[str, object] | None
    snapshot_summary: dict[str, object] | None
    pytest_failed: bool
    snapshot_failed: bool
    success: bool
    fallback_to_baseline: bool
    agent_advantage: float
    agent_advantage_level1: float
    agent_advantage_level2: float
    agent_advantage_level3: float
    agent_advantage_level4: float
    num_benchmarks: int
    num_valid_benchmarks: int
    task_speedup: float
    task_cost_usd: float | None
    trajectory_length: int | None

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def task_metrics(
    benchmarks: Sequence[str],
    agent_speedups: SpeedupValues,
    oracle_speedups: SpeedupValues,
    *,
    pytest_failed: bool,
    snapshot_failed: bool,
    is_nop: bool = False,
    num_benchmarks: int | None = None,
    pytest_summary: dict[str, object] | None = None,
    snapshot_summary: dict[str, object] | None = None,
    task_cost_usd: float | None = None,
    trajectory_length: int | None = None,
) -> TaskMetrics:
    """Build the per-agent task payload, applying the fallback to a failed non-nop agent.

    ``agent_speedups``/``oracle_speedups`` are the benchmarks' speedups; None or a
    non-finite value marks an invalid benchmark, which is excluded. A failed non-nop agent gets
    :func:`fallback_speedups` on its valid benchmarks and everything is recomputed.
    ``num_benchmarks`` defaults to ``len(benchmarks)``.
    """
    if not (len(benchmarks) == len(agent_speedups) == len(oracle_speedups)):
        raise ValueError("benchmarks, agent_speedups and oracle_speedups must have equal length")
    a = _speedup_array(agent_speedups)
    o = _speedup_array(oracle_speedups)
    ok = np.isfinite(a) & np.isfinite(o)
    n_valid = int(ok.sum())
    failed = pytest_failed or snapshot_failed
    fallback = failed and not is_nop and n_valid > 0
    if fallback:
        a = np.where(ok, 1.0, np.nan)
    a = np.where(ok, a, np.nan)
    o = np.where(ok, o, np.nan)
    adv = a - o
    if n_valid == len(benchmarks):
        names = list(benchmarks)
        sa, so, ad = a.tolist(), o.tolist(), adv.tolist()
    else:
        idx = np.flatnonzero(ok)
        names = [benchmarks[i] for i in idx.tolist()]
        sa, so, ad = a[idx].tolist(), o[idx].tolist(), adv[idx].tolist()
    if fallback:
        per = {n: {"agent/nop": x, "oracle/nop": y, "advantage": z, "fallback_to_baseline": True}
               for n, x, y, z in zip(names, sa, so, ad, strict=True)}
    else:
        per = {n: {"agent/nop": x, "oracle/nop": y, "advantage": z}
               for n, x, y, z in zip(names, sa, so, ad, strict=True)}
    lv = level_advantages_for_names(benchmarks, a, o)
    return TaskMetrics(
        per_benchmark_speedups=per,
        pytest_summary=pytest_summary,
        snapshot_summary=snapshot_summary,
        pytest_failed=pytest_failed,
        snapshot_failed=snapshot_failed,
        success=not failed,
        fallback_to_baseline=fallback,
        agent_advantage=lv[4],
        agent_advantage_level1=lv[1],
        agent_advantage_level2=lv[2],
        agent_advantage_level3=lv[3],
        agent_advantage_level4=lv[4],
        num_benchmarks=len(benchmarks) if num_benchmarks is None else num_benchmarks,
        num_valid_benchmarks=n_valid,
        task_speedup=task_speedup(a),
        task_cost_usd=task_cost_usd,
        trajectory_length=trajectory_length,
    )
