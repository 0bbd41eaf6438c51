"""The 0-100 derived scorecard of the framework comparison (seed 003, reference section 12).

Three axes per framework, each ``100 * (a combination of parts in [0, 1])``:

- **Capability** = ``100 * mean([base, *signals])`` with ``base = mean(corr/5, comp/5,
  faith/5)`` (each clamped to [0, 1]) and ``signals`` the scenario's rates and coverages
  that exist in the framework's aggregates (each clamped to [0, 1]); ``base`` weighs as
  much as one signal.
- **Efficiency** from average latency, total cost and total tokens, lower is better,
  weighted 0.4 / 0.4 / 0.2.
- **Developer Experience** = ``100 * mean(available parts)``: maintainability index
  (higher is better), average cyclomatic complexity (lower is better), the type-annotation
  ratio and the LLM review's ``avg_score / 5``; ``None`` (N/A) when no part is available.

Normalisations (``mode``):

- ``"relative"`` (default): latency, cost, tokens, MI and CC are min-max scaled across the
  compared frameworks (``(v - lo) / (hi - lo)``, reversed for lower-is-better; 1.0 when
  ``hi - lo < 1e-12``, so a lone framework gets 1.0). Upstream's two bugs are fixed:
  Efficiency's weighted terms are **summed** (``100 * (0.4 L + 0.4 C + 0.2 T)``, maximum 100,
  where upstream averages them, maximum 33.3, quirk 12), and the coordination metrics of
  ``multi_agent_coordination`` **count towards Capability** (quirk 11).
- ``"absolute"``: the same formulas, but each scaled part uses fixed anchors
  (:class:`AbsoluteAnchors`) instead of the other frameworks, so adding a framework never
  changes another's score. Latency, cost and tokens are taken per question so that
  scenarios with different question counts compare.
- ``"upstream"``: exactly upstream ``compare.py``, bugs included (Efficiency averaged,
  coordination ignored), so that published reports can be reproduced and checked.

A part whose input is missing (``None``/NaN) is left out: the weights of the remaining
Efficiency parts are renormalised, the other axes average what is there. Upstream treats
missing inputs as 0 instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from evalatlas.metrics.missing import known as _known

MODES = ("relative", "absolute", "upstream")

UPSTREAM_SIGNALS = (
    "branching_success_rate", "multi_hop_chain_success_rate",
    "branching_avg_grounded_hop_coverage", "multi_hop_avg_grounded_hop_coverage",
    "branching_avg_hop_coverage", "multi_hop_avg_hop_coverage",
)
"""Capability signals upstream ``compare.py`` looks for, in its order."""

COORDINATION_SIGNALS = (
    "coordination_success_rate", "coordination_avg_agent_coverage",
    "coordination_avg_grounded_hop_coverage", "coordination_avg_hop_coverage",
)
"""multi_agent_coordination aggregates that evalatlas adds to Capability (quirk 11 fixed)."""

SIGNALS = UPSTREAM_SIGNALS + COORDINATION_SIGNALS

EFFICIENCY_WEIGHTS = {"latency": 0.4, "cost": 0.4, "tokens": 0.2}
FLAT_EPS = 1e-12


@dataclass(frozen=True)
class AbsoluteAnchors:
    """Fixed (best, worst) anchors of the ``absolute`` normalisation; values are clamped.

    Defaults: latency 0 s .. 120 s per question (upstream's default query timeout, the
    point where a question is abandoned); cost $0 .. $0.05 per question; tokens 0 .. 50,000
    per question; maintainability index 50 .. 10 (radon's grade-B floor is 10); average
    cyclomatic complexity 1 .. 10 (radon's rank A/B boundary at 5, B/C at 10).
    """

    latency_s: tuple[float, float] = (0.0, 120.0)
    cost_usd: tuple[float, float] = (0.0, 0.05)
    tokens: tuple[float, float] = (0.0, 50_000.0)
    maintainability: tuple[float, float] = (50.0, 10.0)
    cyclomatic: tuple[float, float] = (1.0, 10.0)


DEFAULT_ANCHORS = AbsoluteAnchors()


@dataclass
class ScorecardInput:
    """What the scorecard needs of one framework (aggregates over its questions)."""

    name: str
    avg_correctness: float | None = None
    avg_completeness: float | None = None
    avg_faithfulness: float | None = None
    aggregates: Mapping[str, float] = field(default_factory=dict)
    avg_latency: float | None = None
    total_cost_usd: float | None = None
    total_tokens: float | None = None
    n_questions: int | None = None
    maintainability_index: float | None = None
    avg_cyclomatic_complexity: float | None = None
    type_annotation_ratio: float | None = None
    review_avg_score: float | None = None


def _ok(v: float | None) -> TypeGuard[float]:
    """``v`` is not missing (:func:`~evalatlas.metrics.missing.known`)."""
    return _known(v) is not None


def clamp01(v: float) -> float:
    return max(0.0, min(1.0, float(v)))


def minmax(values: Sequence[float | None], *, higher_is_better: bool) -> list[float | None]:
    """Min-max scale across frameworks (upstream ``_normalize``): 1.0 when all are equal;
    missing values stay missing and do not take part."""
    known = [float(v) for v in values if _ok(v)]
    if not known:
        return [None] * len(values)
    lo, hi = min(known), max(known)
    out: list[float | None] = []
    for v in map(_known, values):
        if v is None:
            out.append(None)
        elif hi - lo < FLAT_EPS:
            out.append(1.0)
        else:
            out.append((v - lo) / (hi - lo) if higher_is_better else (hi - v) / (hi - lo))
    return out


def anchored(value: float | None, best: float, worst: float) -> float | None:
    """Linear score in [0, 1]: 1 at ``best``, 0 at ``worst``, clamped (absolute mode)."""
    known = _known(value)
    if known is None or best == worst:
        return None
    return clamp01((known - worst) / (best - worst))


def capability(inp: ScorecardInput, signals: Sequence[str]) -> float | None:
    """``100 * mean([base, *signals present])``; None without judge scores."""
    judge = [inp.avg_correctness, inp.avg_completeness, inp.avg_faithfulness]
    parts = [clamp01(float(v) / 5.0) for v in judge if _ok(v)]
    if not parts:
        return None
    values = [sum(parts) / len(parts)]
    values += [clamp01(v) for k in signals if _ok(v := inp.aggregates.get(k))]
    return 100.0 * sum(values) / len(values)


def efficiency(parts: Mapping[str, float | None], *, averaged: bool) -> float | None:
    """``100 * sum(w * part) / sum(w)`` over available parts (fixed), or upstream's
    ``100 * mean(w * part)`` when ``averaged`` (maximum 33.3 with all three parts)."""
    terms = [(EFFICIENCY_WEIGHTS[k], v) for k, p in parts.items() if (v := _known(p)) is not None]
    if not terms:
        return None
    if averaged:
        return 100.0 * sum(w * v for w, v in terms) / len(terms)
    return 100.0 * sum(w * v for w, v in terms) / sum(w for w, _ in terms)


def developer_experience(parts: Sequence[float | None]) -> float | None:
    known = [float(p) for p in parts if _ok(p)]
    return 100.0 * sum(known) / len(known) if known else None


def _per_question(total: float | None, n: int | None) -> float | None:
    known = _known(total)
    if known is None or not n:
        return None
    return known / n


def scorecard(
    inputs: Sequence[ScorecardInput],
    mode: str = "relative",
    *,
    signals: Sequence[str] | None = None,
    anchors: AbsoluteAnchors = DEFAULT_ANCHORS,
) -> list[dict[str, object]]:
    """Capability, Efficiency and Developer Experience (0-100 or None) per framework.

    Each row also carries the scaled ``parts`` so a report can show how a score was made.
    """
    if mode not in MODES:
        raise ValueError(f"unknown scorecard mode {mode!r}; use one of {', '.join(MODES)}")
    if signals is None:
        signals = UPSTREAM_SIGNALS if mode == "upstream" else SIGNALS
    if mode == "absolute":
        lat = [anchored(i.avg_latency, *anchors.latency_s) for i in inputs]
        cost = [anchored(_per_question(i.total_cost_usd, i.n_questions), *anchors.cost_usd)
                for i in inputs]
        tok = [anchored(_per_question(i.total_tokens, i.n_questions), *anchors.tokens)
               for i in inputs]
        mi = [anchored(i.maintainability_index, *anchors.maintainability) for i in inputs]
        cc = [anchored(i.avg_cyclomatic_complexity, *anchors.cyclomatic) for i in inputs]
    else:
        # upstream reads a missing latency, cost or token total as 0 (``.get(key, 0)``)
        zero = 0.0 if mode == "upstream" else None
        lat = minmax([i.avg_latency if _ok(i.avg_latency) else zero for i in inputs],
                     higher_is_better=False)
        cost = minmax([i.total_cost_usd if _ok(i.total_cost_usd) else zero for i in inputs],
                      higher_is_better=False)
        tok = minmax([i.total_tokens if _ok(i.total_tokens) else zero for i in inputs],
                     higher_is_better=False)
        mi = minmax([i.maintainability_index for i in inputs], higher_is_better=True)
        cc = minmax([i.avg_cyclomatic_complexity for i in inputs], higher_is_better=False)
    rows: list[dict[str, object]] = []
    for k, inp in enumerate(inputs):
        eff_parts = {"latency": lat[k], "cost": cost[k], "tokens": tok[k]}
        review_score = _known(inp.review_avg_score)
        review = review_score / 5.0 if review_score is not None else None
        ratio = _known(inp.type_annotation_ratio)
        dx_parts = {"maintainability": mi[k], "complexity": cc[k],
                    "type_annotations": ratio, "review": review}
        rows.append({
            "framework": inp.name,
            "capability": capability(inp, signals),
            "efficiency": efficiency(eff_parts, averaged=mode == "upstream"),
            "developer_experience": developer_experience(list(dx_parts.values())),
            "parts": {**{f"efficiency_{a}": b for a, b in eff_parts.items()},
                      **{f"dx_{a}": b for a, b in dx_parts.items()},
                      "capability_signals": [s for s in signals
                                             if _ok(inp.aggregates.get(s))]},
            "mode": mode,
        })
    return rows
