"""Scenario profiles: per-question and aggregate metrics specific to a scenario (seed 003).

A profile turns one answered question into extra metrics (hop coverage, tool coverage,
agent coverage...) and a list of those into aggregates. The three upstream profiles are
implemented exactly as reference framework-comparison.md section 11 (upstream
``shared/eval/profiles.py``) defines them; ``default`` adds nothing. Profiles are
pluggable: subclass :class:`ScenarioProfile` and call :func:`register_profile`.

Shared hop logic (:func:`hop_metrics`): ``norm`` = lower-case, collapse whitespace; a hop
matches when any normalised alias in ``any_of`` is a substring of the normalised answer;
a matched hop is grounded when its ``source`` is exactly one of the sources used;
``hop_coverage = matched / len(hops)``, ``grounded_hop_coverage = grounded / len(hops)``.

Aggregates treat booleans as 0/1 and average them, so recomputing them on per-question
metrics already averaged over runs gives the mean over runs (evalatlas keeps profile
aggregates after multi-run averaging, where upstream loses them, quirk 8).

Inputs are plain mappings so that both the runner and the results adapter can call a
profile: ``metadata`` is the question's ``metadata`` from questions.yaml;
``answer_metadata`` holds what the framework reported (``tool_trace``, ``tools_used``,
``tool_calls``, ``agents_used``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

ScalarMetric = float | int | bool


@dataclass(frozen=True)
class QuestionContext:
    """What a profile sees of one answered question."""

    metadata: Mapping[str, Any] = field(default_factory=dict)
    answer: str = ""
    sources_used: Sequence[str] = ()
    answer_metadata: Mapping[str, Any] = field(default_factory=dict)


def norm_text(text: str) -> str:
    """Lower-case and collapse whitespace (upstream ``_normalize_text``)."""
    return " ".join(str(text).lower().split())


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _dedupe_ci(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def hop_metrics(hops: Sequence[Mapping[str, Any]], answer: str,
                sources_used: Sequence[str]) -> dict[str, float | int]:
    """``required_hops``, ``matched_hops``, ``hop_coverage``, ``grounded_hop_coverage``.

    Coverages are 0.0 when there are no hops (upstream ``_safe_ratio``).
    """
    text = norm_text(answer)
    used = {str(s) for s in sources_used}
    matched = grounded = 0
    for hop in hops:
        aliases = [norm_text(a) for a in (hop.get("any_of") or []) if a]
        if aliases and any(a in text for a in aliases):
            matched += 1
            src = hop.get("source")
            if src and src in used:
                grounded += 1
    n = len(hops)
    return {"required_hops": n, "matched_hops": matched,
            "hop_coverage": _ratio(matched, n), "grounded_hop_coverage": _ratio(grounded, n)}


def _hops(metadata: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    hops = metadata.get("required_hops") or []
    return [h for h in hops if isinstance(h, Mapping)] if isinstance(hops, list) else []


def _f(m: Mapping[str, Any], key: str) -> float:
    return float(m[key])


def _subset_mean(ms: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [_f(m, key) for m in ms if m.get(key) is not None]


class ScenarioProfile(ABC):
    """A pluggable scenario profile. ``capability_signals`` name the aggregates that count
    towards the scorecard's Capability (each a rate or coverage in [0, 1])."""

    name: ClassVar[str] = "default"
    description: ClassVar[str] = ""
    capability_signals: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def question_metrics(self, ctx: QuestionContext) -> dict[str, ScalarMetric]:
        """Extra metrics of one answered question."""

    def aggregate_metrics(self, question_metrics: Sequence[Mapping[str, Any]]
                          ) -> dict[str, float]:
        """Profile aggregates over questions (default: none beyond the generic ``_avg``)."""
        return {}


class DefaultProfile(ScenarioProfile):
    name = "default"
    description = "no extra metrics"

    def question_metrics(self, ctx: QuestionContext) -> dict[str, ScalarMetric]:
        return {}


class MultiHopChainProfile(ScenarioProfile):
    """``multihop_chain_qa``: hop coverage, grounded hop coverage, chain success."""

    name = "multihop_chain_qa"
    description = "hop coverage and chain success on multi-hop questions"
    capability_signals = ("multi_hop_chain_success_rate", "multi_hop_avg_grounded_hop_coverage",
                          "multi_hop_avg_hop_coverage")

    def question_metrics(self, ctx: QuestionContext) -> dict[str, ScalarMetric]:
        hops = _hops(ctx.metadata)
        is_multi = bool(ctx.metadata.get("multi_hop", False) or len(hops) > 1)
        if not hops:
            return {"is_multi_hop": is_multi}
        h = hop_metrics(hops, ctx.answer, ctx.sources_used)
        return {"is_multi_hop": is_multi, **h, "chain_success": h["hop_coverage"] >= 1.0}

    def aggregate_metrics(self, question_metrics: Sequence[Mapping[str, Any]]
                          ) -> dict[str, float]:
        multi = [m for m in question_metrics if bool(m.get("is_multi_hop", False))]
        out = {"multi_hop_questions": float(len(multi)),
               "annotated_hop_questions": float(sum(1 for m in question_metrics
                                                    if "hop_coverage" in m))}
        for key, agg in (("hop_coverage", "multi_hop_avg_hop_coverage"),
                         ("grounded_hop_coverage", "multi_hop_avg_grounded_hop_coverage"),
                         ("chain_success", "multi_hop_chain_success_rate")):
            vals = _subset_mean(multi, key)
            if vals:
                out[agg] = _mean(vals)
        return out


def tool_names(answer_metadata: Mapping[str, Any], *, dicts_only: bool = False) -> list[str]:
    """Tool names reported by a framework: the first truthy of ``tool_trace``,
    ``tools_used``, ``tool_calls``; strings, or dicts with ``tool`` / ``name``; deduplicated
    case-insensitively keeping order. ``dicts_only`` ignores string entries
    (multi_agent_coordination)."""
    trace = (answer_metadata.get("tool_trace") or answer_metadata.get("tools_used")
             or answer_metadata.get("tool_calls") or [])
    if not isinstance(trace, list):
        return []
    names: list[str] = []
    for item in trace:
        if isinstance(item, str) and not dicts_only:
            if item.strip():
                names.append(item.strip())
        elif isinstance(item, Mapping):
            cand = item.get("tool") or item.get("name")
            if cand and str(cand).strip():
                names.append(str(cand).strip())
    return _dedupe_ci(names)


def _tool_calls_reported(answer_metadata: Mapping[str, Any], n_tools: int) -> int:
    v = answer_metadata.get("tool_calls")
    return v if isinstance(v, int) and not isinstance(v, bool) else n_tools


def _tool_match(metadata: Mapping[str, Any], actual: Sequence[str]) -> tuple[int, int, float]:
    expected = _dedupe_ci(str(t).strip() for t in (metadata.get("required_tools") or [])
                          if str(t).strip())
    have = {t.lower() for t in actual}
    matched = sum(1 for t in expected if t.lower() in have)
    return len(expected), matched, _ratio(matched, len(expected))


def _int_field(metadata: Mapping[str, Any], key: str) -> int:
    """An integer metadata field; absent or unparseable counts 0, as upstream's
    ``int(md.get(key, 0) or 0)`` inside its error handling."""
    try:
        return int(metadata.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0


def _avg_tool_coverage(subset: Sequence[Mapping[str, Any]], count_key: str) -> list[float]:
    """Tool coverages of the questions that require tools (``count_key`` > 0)."""
    return [_f(m, "tool_coverage") for m in subset
            if float(m.get(count_key) or 0) > 0 and m.get("tool_coverage") is not None]


def _easy_and_trace(out: dict[str, float], easy: Sequence[Mapping[str, Any]],
                    question_metrics: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The aggregates both tool profiles share: easy questions' hop coverage, trace rate."""
    e_cov = _subset_mean(easy, "hop_coverage")
    if e_cov:
        out["easy_avg_hop_coverage"] = _mean(e_cov)
    if question_metrics:
        out["tool_trace_rate"] = _mean([float(m.get("has_tool_trace") or 0.0)
                                        for m in question_metrics])
    return out


class ToolBranchingProfile(ScenarioProfile):
    """``tool_branching_qa``: branching vs easy questions, tool coverage, tool trace rate."""

    name = "tool_branching_qa"
    description = "branching vs easy questions, tool coverage, tool trace rate"
    capability_signals = ("branching_success_rate", "branching_avg_grounded_hop_coverage",
                          "branching_avg_hop_coverage")

    def question_metrics(self, ctx: QuestionContext) -> dict[str, ScalarMetric]:
        md = ctx.metadata
        hops = _hops(md)
        points = _int_field(md, "branching_points")
        branching = bool(md.get("branching", False) or points > 0 or len(hops) > 1)
        h = hop_metrics(hops, ctx.answer, ctx.sources_used)
        actual = tool_names(ctx.answer_metadata)
        n_req, matched, cov = _tool_match(md, actual)
        return {
            "is_branching": branching, "is_easy": not branching, **h,
            "branching_success": bool(branching and hops and h["hop_coverage"] >= 1.0),
            "required_tools": n_req, "matched_tools": matched, "tool_coverage": cov,
            "has_tool_trace": bool(actual),
            "tool_calls_reported": _tool_calls_reported(ctx.answer_metadata, len(actual)),
        }

    def aggregate_metrics(self, question_metrics: Sequence[Mapping[str, Any]]
                          ) -> dict[str, float]:
        br = [m for m in question_metrics if bool(m.get("is_branching", False))]
        easy = [m for m in question_metrics if bool(m.get("is_easy", False))]
        out = {"branching_questions": float(len(br)), "easy_questions": float(len(easy))}
        if br:
            for key, agg in (("hop_coverage", "branching_avg_hop_coverage"),
                             ("grounded_hop_coverage", "branching_avg_grounded_hop_coverage")):
                vals = _subset_mean(br, key)
                if vals:
                    out[agg] = _mean(vals)
            out["branching_success_rate"] = _mean(
                [float(m.get("branching_success") or 0.0) for m in br])
            tc = _avg_tool_coverage(br, "required_tools")
            if tc:
                out["branching_avg_tool_coverage"] = _mean(tc)
        return _easy_and_trace(out, easy, question_metrics)


COORDINATION_DIFFICULTIES = frozenset({"coordination", "hard_coordination"})


def agents_used(answer_metadata: Mapping[str, Any]) -> list[str]:
    """``agents_used``, else the ``domain`` values of the tool-trace dicts (deduplicated)."""
    agents = answer_metadata.get("agents_used")
    if isinstance(agents, list) and agents:
        return _dedupe_ci(str(a).strip() for a in agents if str(a).strip())
    trace = answer_metadata.get("tool_trace")
    if not isinstance(trace, list):
        return []
    return _dedupe_ci(str(t["domain"]).strip() for t in trace
                      if isinstance(t, Mapping) and t.get("domain") and str(t["domain"]).strip())


class MultiAgentCoordinationProfile(ScenarioProfile):
    """``multi_agent_coordination``: agent coverage, coordination success (agent coverage
    1.0 and hop coverage >= 0.8, on coordination questions only), tool coverage."""

    name = "multi_agent_coordination"
    description = "agent coverage, coordination success, tool coverage"
    capability_signals = ("coordination_success_rate", "coordination_avg_agent_coverage",
                          "coordination_avg_grounded_hop_coverage", "coordination_avg_hop_coverage")
    hop_threshold: ClassVar[float] = 0.8

    def question_metrics(self, ctx: QuestionContext) -> dict[str, ScalarMetric]:
        md = ctx.metadata
        is_coord = str(md.get("difficulty", "")) in COORDINATION_DIFFICULTIES
        required = {str(a).strip().lower() for a in (md.get("required_agents") or [])
                    if str(a).strip()}
        actual = agents_used(ctx.answer_metadata)
        agent_cov = _ratio(len(required & {a.lower() for a in actual}), len(required))
        h = hop_metrics(_hops(md), ctx.answer, ctx.sources_used)
        tools = tool_names(ctx.answer_metadata, dicts_only=True)
        n_req, matched, cov = _tool_match(md, tools)
        points = _int_field(md, "coordination_points")
        return {
            "is_coordination": is_coord, "is_easy": not is_coord,
            "coordination_points": points,
            "required_agents": len(required), "actual_agents": len(actual),
            "agent_coverage": agent_cov, **h,
            "coordination_success": bool(is_coord and agent_cov >= 1.0
                                         and h["hop_coverage"] >= self.hop_threshold),
            "required_tools_count": n_req, "matched_tools": matched, "tool_coverage": cov,
            "has_tool_trace": bool(tools),
            "tool_calls_reported": _tool_calls_reported(ctx.answer_metadata, len(tools)),
        }

    def aggregate_metrics(self, question_metrics: Sequence[Mapping[str, Any]]
                          ) -> dict[str, float]:
        co = [m for m in question_metrics if bool(m.get("is_coordination", False))]
        easy = [m for m in question_metrics if bool(m.get("is_easy", False))]
        out = {"coordination_questions": float(len(co)), "easy_questions": float(len(easy))}
        if co:
            for key in ("agent_coverage", "hop_coverage", "grounded_hop_coverage"):
                vals = _subset_mean(co, key)
                if vals:
                    out[f"coordination_avg_{key}"] = _mean(vals)
            tc = _avg_tool_coverage(co, "required_tools_count")
            if tc:
                out["coordination_avg_tool_coverage"] = _mean(tc)
            out["coordination_success_rate"] = _mean(
                [float(m.get("coordination_success") or 0.0) for m in co])
        return _easy_and_trace(out, easy, question_metrics)


_REGISTRY: dict[str, ScenarioProfile] = {}


def register_profile(profile: ScenarioProfile, *, replace: bool = False) -> ScenarioProfile:
    """Make ``profile`` available under ``profile.name``; refuses silent overrides."""
    if not profile.name:
        raise ValueError("a scenario profile needs a non-empty name")
    if profile.name in _REGISTRY and not replace:
        raise ValueError(f"scenario profile {profile.name!r} is already registered; "
                         "pass replace=True to override it")
    _REGISTRY[profile.name] = profile
    return profile


def get_profile(name: str | None) -> ScenarioProfile:
    """The registered profile ``name``; ``None``/empty gives ``default``.

    Unknown names raise ``KeyError`` listing the registered ones (upstream silently falls
    back to ``default``, which hides a typo in ``spec.yaml``).
    """
    if not name:
        return _REGISTRY["default"]
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown scenario profile {name!r}; registered: "
                       f"{', '.join(sorted(_REGISTRY))}") from None


def registered_profiles() -> list[str]:
    return sorted(_REGISTRY)


for _p in (DefaultProfile(), MultiHopChainProfile(), ToolBranchingProfile(),
           MultiAgentCoordinationProfile()):
    register_profile(_p)
