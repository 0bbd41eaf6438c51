"""Framework-comparison data from records: the input of ``compare-frameworks`` and its report.

Groups records following the framework-comparison convention (labels ``framework``,
``scenario``, ``mode``, ``profile``; ``attempt`` = run index) into one
:class:`FrameworkData` per framework x scenario x mode, and turns each episode into a
:class:`~evalatlas.metrics.framework_aggregate.QuestionResult` for the metrics:

- judge scores, retrieval precision/recall from ``scores``; every other named score, and
  every boolean in ``extra`` but bookkeeping flags (``reward_missing``, ``judge_cached``),
  is a per-question extra metric (profile metrics such as ``hop_coverage``,
  ``chain_success``);
- latency = ``wall_time_s``, tokens and cost from ``usage`` (``None`` stays ``None``);
- when a scenario is given and an episode has the inputs (answer, retrieved sources, and
  ``extra["tool_trace"]`` / ``extra["agents_used"]`` where the profile needs them),
  retrieval and profile metrics are recomputed with the metric functions instead of
  being taken as stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalatlas.metrics.framework_aggregate import QuestionResult
from evalatlas.metrics.profiles import QuestionContext, get_profile
from evalatlas.metrics.retrieval import retrieval_precision, retrieval_recall
from evalatlas.records.models import EpisodeRecord, ExperimentRecord

STANDARD_SCORES = frozenset({"correctness", "completeness", "faithfulness",
                             "retrieval_precision", "retrieval_recall"})
ANSWER_METADATA_KEYS = ("tool_trace", "tools_used", "tool_calls", "agents_used")
NON_METRIC_FLAGS = frozenset({"reward_missing", "judge_cached"})
"""Boolean ``extra`` entries that are bookkeeping, not per-question metrics."""


class ScenarioView(Protocol):
    """What grouping needs of a scenario
    (:class:`evalatlas.adapters.frameworks.Scenario` has it): its profile name and its
    questions by id (objects with ``expected_sources``, ``metadata`` and ``text``)."""

    profile: str

    def question(self, question_id: str) -> Any: ...


@dataclass(repr=False)
class FrameworkData:
    """All runs of one framework on one scenario in one mode."""

    framework: str
    scenario: str
    mode: str
    display_name: str
    profile: str = "default"
    scenario_type: str | None = None
    runs: dict[int, list[QuestionResult]] = field(default_factory=dict)
    code_quality: dict[str, Any] | None = None
    code_review: dict[str, Any] | None = None
    experiment_ids: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    upstream_aggregates: dict[str, Any] | None = None
    averaged_input: bool = False

    @property
    def run_count(self) -> int:
        if self.averaged_input and self.upstream_aggregates:
            return int(self.upstream_aggregates.get("run_count") or 1)
        return len(self.runs)

    def __repr__(self) -> str:
        questions = len({q.question_id for qs in self.runs.values() for q in qs})
        return (f"<FrameworkData {self.framework[:40]!r} on {self.scenario[:40]!r} "
                f"({self.mode[:20]}): {self.run_count} runs, {questions} questions>")

    def _repr_html_(self) -> str:
        import html

        return f"<code>{html.escape(repr(self))}</code>"


def flat_code_quality(cq: dict[str, Any]) -> dict[str, Any]:
    """One flat metrics dict: an upstream ``static_metrics``-style dict as is, or the
    ``totals`` of an :meth:`evalatlas.codequality.CodeQualityResult.as_dict` attachment."""
    totals = cq.get("totals")
    if isinstance(totals, dict):
        return {"source_file": cq.get("root"), **totals}
    return cq


def question_from_episode(ep: EpisodeRecord, scenario: ScenarioView | None = None
                          ) -> QuestionResult:
    """One episode -> one QuestionResult (recomputing metrics from a scenario if given)."""
    scores = dict(ep.scores)
    extra_metrics: dict[str, Any] = {k: v for k, v in scores.items()
                                     if k not in STANDARD_SCORES}
    # the runner keeps boolean profile metrics (chain_success, is_multi_hop...) in extra
    extra_metrics.update({k: v for k, v in ep.extra.items()
                          if isinstance(v, bool) and k not in NON_METRIC_FLAGS
                          and k not in extra_metrics})
    precision = scores.get("retrieval_precision")
    recall = scores.get("retrieval_recall")
    question = scenario.question(ep.task_id) if scenario is not None else None
    expected_sources = list(ep.expected_sources or [])
    if scenario is not None and question is not None:
        expected_sources = list(question.expected_sources)
        if ep.retrieved_sources is not None:
            precision = retrieval_precision(ep.retrieved_sources, expected_sources)
            recall = retrieval_recall(ep.retrieved_sources, expected_sources)
        answer_md = {k: ep.extra[k] for k in ANSWER_METADATA_KEYS if k in ep.extra}
        profile = get_profile(scenario.profile)
        needs_trace = profile.name in {"tool_branching_qa", "multi_agent_coordination"}
        if ep.output_text is not None and ep.retrieved_sources is not None and (
                answer_md or not needs_trace) and ep.status == "completed":
            recomputed = profile.question_metrics(QuestionContext(
                metadata=question.metadata, answer=ep.output_text,
                sources_used=ep.retrieved_sources, answer_metadata=answer_md))
            extra_metrics.update(recomputed)
    u = ep.usage
    return QuestionResult(
        question_id=ep.task_id,
        question_text=ep.input_text or (question.text if question is not None else ""),
        expected_answer=ep.expected_text,
        answer=ep.output_text,
        sources_expected=expected_sources,
        sources_retrieved=list(ep.retrieved_sources or []),
        latency_s=ep.wall_time_s,
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        total_tokens=u.total_tokens,
        cost_usd=u.total_cost_usd,
        model_name=u.model,
        correctness=scores.get("correctness"),
        completeness=scores.get("completeness"),
        faithfulness=scores.get("faithfulness"),
        judge_reasoning=ep.extra.get("judge_reasoning"),
        retrieval_precision=precision,
        retrieval_recall=recall,
        extra_metrics=extra_metrics,
        status=ep.status,
        run=ep.attempt if ep.attempt is not None else 0,
    )


def group_records(
    experiments: Iterable[ExperimentRecord],
    episodes: Iterable[EpisodeRecord],
    *,
    scenario: str | None = None,
    mode: str | None = None,
    scenario_def: ScenarioView | None = None,
) -> list[FrameworkData]:
    """Group framework-comparison records into FrameworkData, in first-seen order.

    Experiments without a ``framework`` label are ignored. Two experiments with the same
    framework/scenario/mode are merged (their runs are attempts of one comparison); a run
    index present in both keeps the first.
    """
    by_exp: dict[str, FrameworkData] = {}
    groups: dict[tuple[str, str, str], FrameworkData] = {}
    for x in experiments:
        fw = x.labels.get("framework")
        if not fw:
            continue
        sc = x.labels.get("scenario") or x.benchmark_name
        md = x.labels.get("mode") or "baseline"
        if (scenario and sc != scenario) or (mode and md != mode):
            continue
        key = (fw, sc, md)
        data = groups.get(key)
        if data is None:
            data = groups[key] = FrameworkData(
                framework=fw, scenario=sc, mode=md,
                display_name=str(x.extra.get("framework_display_name") or x.agent.name or fw),
                profile=x.labels.get("profile") or "default",
                scenario_type=x.extra.get("scenario_type"),
            )
        data.experiment_ids.append(x.experiment_id)
        if data.code_quality is None and isinstance(x.extra.get("code_quality"), dict):
            data.code_quality = flat_code_quality(x.extra["code_quality"])
        if data.code_review is None and isinstance(x.extra.get("code_review"), dict):
            data.code_review = x.extra["code_review"]
        if data.upstream_aggregates is None and isinstance(x.extra.get("upstream_aggregates"),
                                                           dict):
            data.upstream_aggregates = x.extra["upstream_aggregates"]
            data.averaged_input = data.upstream_aggregates.get("run_id") == -1
        if x.agent.llm_model and x.agent.llm_model not in data.models:
            data.models.append(x.agent.llm_model)
        by_exp[x.experiment_id] = data
    seen: dict[tuple[int, int], set[str]] = {}
    for ep in episodes:
        data = by_exp.get(ep.experiment_id)
        if data is None:
            continue
        run = ep.attempt if ep.attempt is not None else 0
        ids = seen.setdefault((id(data), run), set())
        if ep.task_id in ids:
            continue
        ids.add(ep.task_id)
        data.runs.setdefault(run, []).append(question_from_episode(ep, scenario_def))
    return list(groups.values())
