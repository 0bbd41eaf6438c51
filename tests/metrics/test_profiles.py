"""Scenario profiles: one test per edge case of reference section 11, plus the registry."""

from __future__ import annotations

import pytest

from evalatlas.metrics.profiles import (
    MultiAgentCoordinationProfile,
    MultiHopChainProfile,
    QuestionContext,
    ScenarioProfile,
    ToolBranchingProfile,
    agents_used,
    get_profile,
    hop_metrics,
    register_profile,
    registered_profiles,
    tool_names,
)

HOPS = [
    {"id": "aurora_server", "any_of": ["prod-api-03"], "source": "server_registry.md"},
    {"id": "rack_to_dc", "any_of": ["PDX-1", "Portland  datacenter"],
     "source": "datacenter_locations.md"},
]


def test_hop_match_is_normalised_substring_and_grounding_exact():
    h = hop_metrics(HOPS, "Aurora runs on PROD-API-03 in the portland \n datacenter",
                    ["server_registry.md"])
    assert h == {"required_hops": 2, "matched_hops": 2, "hop_coverage": 1.0,
                 "grounded_hop_coverage": 0.5}
    # grounding is exact: a differently-cased source does not ground
    h = hop_metrics(HOPS, "prod-api-03", ["Server_Registry.md"])
    assert (h["hop_coverage"], h["grounded_hop_coverage"]) == (0.5, 0.0)
    # an unmatched hop is never grounded even if its source was used
    h = hop_metrics(HOPS, "nothing", ["server_registry.md", "datacenter_locations.md"])
    assert (h["matched_hops"], h["grounded_hop_coverage"]) == (0, 0.0)
    assert hop_metrics([], "x", [])["hop_coverage"] == 0.0


def test_multihop_question_without_hops_emits_only_the_flag():
    p = MultiHopChainProfile()
    assert p.question_metrics(QuestionContext(metadata={"multi_hop": True})) == \
        {"is_multi_hop": True}
    assert p.question_metrics(QuestionContext(metadata={})) == {"is_multi_hop": False}


def test_multihop_question_and_aggregates():
    p = MultiHopChainProfile()
    q1 = p.question_metrics(QuestionContext(metadata={"required_hops": HOPS},
                                            answer="prod-api-03, PDX-1",
                                            sources_used=["server_registry.md"]))
    assert q1["is_multi_hop"] is True and q1["chain_success"] is True
    assert q1["grounded_hop_coverage"] == 0.5
    single = p.question_metrics(QuestionContext(metadata={"required_hops": HOPS[:1]},
                                                answer="no"))
    assert single["is_multi_hop"] is False and single["chain_success"] is False
    agg = p.aggregate_metrics([q1, single, {"is_multi_hop": False}])
    assert agg == {"multi_hop_questions": 1.0, "annotated_hop_questions": 2.0,
                   "multi_hop_avg_hop_coverage": 1.0,
                   "multi_hop_avg_grounded_hop_coverage": 0.5,
                   "multi_hop_chain_success_rate": 1.0}


def test_tool_names_first_truthy_strings_or_dicts_dedup_case_insensitive():
    md = {"tool_trace": [], "tools_used": ["run_sql", {"tool": "RUN_SQL"},
                                           {"name": "lookup_doc"}, " ", 3]}
    assert tool_names(md) == ["run_sql", "lookup_doc"]
    assert tool_names({"tool_calls": 4}) == []
    assert tool_names({"tool_trace": ["a", {"tool": "b"}]}, dicts_only=True) == ["b"]


def test_tool_branching_question():
    p = ToolBranchingProfile()
    md = {"branching": False, "branching_points": 2, "required_tools": ["run_sql", "lookup_doc"],
          "required_hops": [{"any_of": ["Acme"], "source": "customers"},
                            {"any_of": ["credit"], "source": "support_policies.md"}]}
    m = p.question_metrics(QuestionContext(
        metadata=md, answer="Acme gets a credit", sources_used=["customers"],
        answer_metadata={"tool_trace": [{"tool": "Run_SQL"}, {"tool": "run_sql"}],
                         "tool_calls": 5}))
    assert m["is_branching"] is True and m["is_easy"] is False
    assert m["branching_success"] is True
    assert (m["required_tools"], m["matched_tools"], m["tool_coverage"]) == (2, 1, 0.5)
    assert m["grounded_hop_coverage"] == 0.5
    assert m["has_tool_trace"] is True and m["tool_calls_reported"] == 5
    easy = p.question_metrics(QuestionContext(metadata={"required_hops": md["required_hops"][:1]},
                                              answer="Acme",
                                              answer_metadata={"tools_used": ["x", "y"]}))
    assert easy["is_easy"] is True and easy["branching_success"] is False
    assert easy["tool_coverage"] == 0.0  # no required tools -> 0
    assert easy["tool_calls_reported"] == 2  # not an int in metadata -> tools found
    agg = p.aggregate_metrics([m, easy])
    assert agg["branching_questions"] == 1.0 and agg["easy_questions"] == 1.0
    assert agg["branching_success_rate"] == 1.0
    assert agg["branching_avg_tool_coverage"] == 0.5
    assert agg["easy_avg_hop_coverage"] == 1.0
    assert agg["tool_trace_rate"] == 1.0


def test_branching_without_hops_never_succeeds_and_tool_coverage_only_with_required():
    p = ToolBranchingProfile()
    m = p.question_metrics(QuestionContext(metadata={"branching": True}, answer="x"))
    assert m["is_branching"] is True and m["branching_success"] is False
    agg = p.aggregate_metrics([m])
    assert agg["branching_success_rate"] == 0.0
    assert "branching_avg_tool_coverage" not in agg
    assert agg["tool_trace_rate"] == 0.0


def test_multi_agent_coordination():
    p = MultiAgentCoordinationProfile()
    md = {"difficulty": "hard_coordination", "required_agents": ["Infrastructure", "security"],
          "required_tools": ["query_infrastructure", "query_security"],
          "coordination_points": 4,
          "required_hops": [{"any_of": ["a"], "source": "s1"}, {"any_of": ["b"], "source": "s2"},
                            {"any_of": ["c"], "source": "s3"}, {"any_of": ["d"], "source": "s4"},
                            {"any_of": ["zzz"], "source": "s5"}]}
    trace = [{"tool": "query_infrastructure", "domain": "infrastructure"},
             {"tool": "query_security", "domain": "Security", "refused": True},
             "query_runbook"]
    m = p.question_metrics(QuestionContext(metadata=md, answer="a b c d",
                                           sources_used=["s1", "s2"],
                                           answer_metadata={"tool_trace": trace}))
    assert m["agent_coverage"] == 1.0 and m["actual_agents"] == 2
    assert m["hop_coverage"] == 0.8  # threshold is inclusive
    assert m["coordination_success"] is True
    # refused (budget-exhausted) calls are still traced and count (quirk 9); strings don't
    assert (m["matched_tools"], m["tool_coverage"]) == (2, 1.0)
    assert m["required_tools_count"] == 2 and m["coordination_points"] == 4
    below = p.question_metrics(QuestionContext(
        metadata=md, answer="a b c", answer_metadata={"agents_used": ["infrastructure",
                                                                      "security"]}))
    assert below["hop_coverage"] == 0.6 and below["coordination_success"] is False
    assert below["has_tool_trace"] is False
    easy = p.question_metrics(QuestionContext(
        metadata={"difficulty": "easy", "required_agents": ["runbook"]}, answer="",
        answer_metadata={"agents_used": ["runbook"]}))
    assert easy["is_easy"] is True and easy["coordination_success"] is False
    assert easy["agent_coverage"] == 1.0
    none_req = p.question_metrics(QuestionContext(metadata={"difficulty": "coordination"}))
    assert none_req["agent_coverage"] == 0.0  # nothing required -> 0
    agg = p.aggregate_metrics([m, below, easy])
    assert agg["coordination_questions"] == 2.0 and agg["easy_questions"] == 1.0
    assert agg["coordination_success_rate"] == 0.5
    assert agg["coordination_avg_hop_coverage"] == pytest.approx(0.7)
    assert agg["coordination_avg_tool_coverage"] == 0.5  # only questions with required tools
    assert agg["tool_trace_rate"] == pytest.approx(1 / 3)


def test_agents_used_falls_back_to_trace_domains():
    assert agents_used({"tool_trace": [{"domain": "security"}, {"domain": "SECURITY"},
                                       {"tool": "x"}]}) == ["security"]
    assert agents_used({"agents_used": ["a"], "tool_trace": [{"domain": "b"}]}) == ["a"]


def test_registry_is_pluggable():
    assert {"default", "multihop_chain_qa", "tool_branching_qa",
            "multi_agent_coordination"} <= set(registered_profiles())
    assert get_profile(None).name == "default"
    with pytest.raises(KeyError, match="unknown scenario profile 'nope'"):
        get_profile("nope")

    class Citations(ScenarioProfile):
        name = "test_citations"
        capability_signals = ("citation_rate",)

        def question_metrics(self, ctx):
            return {"cites": "(source" in ctx.answer}

        def aggregate_metrics(self, ms):
            return {"citation_rate": sum(float(m["cites"]) for m in ms) / len(ms)}

    register_profile(Citations(), replace=True)
    p = get_profile("test_citations")
    ms = [p.question_metrics(QuestionContext(answer=a)) for a in ["x (source a)", "y"]]
    assert p.aggregate_metrics(ms) == {"citation_rate": 0.5}
    with pytest.raises(ValueError, match="already registered"):
        register_profile(Citations())
