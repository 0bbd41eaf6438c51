"""Scenario loading and the upstream results-JSON adapter (framework comparison)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalatlas.adapters.frameworks import load_scenario, safe_id, trajectory_id_for
from evalatlas.errors import InputError
from evalatlas.records.ids import check_safe_id

SCENARIOS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "frameworks" \
    / "scenarios"


@pytest.mark.parametrize(("name", "stype", "profile", "n_q", "n_docs", "seed"), [
    ("rag_qa", "rag_qa", "default", 7, 3, False),
    ("multihop_qa", "rag_qa", "multihop_chain_qa", 9, 5, False),
    ("agentic_sql_qa", "agentic_tool_qa", "tool_branching_qa", 8, 3, True),
    ("multi_agent_coordination", "multi_agent_coordination", "multi_agent_coordination",
     10, 4, True),
])
def test_load_real_scenarios(name, stype, profile, n_q, n_docs, seed):
    sc = load_scenario(SCENARIOS / name)
    assert (sc.name, sc.scenario_type, sc.profile) == (name, stype, profile)
    assert len(sc.questions) == n_q
    assert len(sc.documents) == n_docs
    assert [d.source for d in sc.documents] == sorted(d.source for d in sc.documents)
    assert (sc.seed_sql is not None) == seed
    assert set(sc.modes) == {"baseline", "capability"}


def test_scenario_details():
    sc = load_scenario(SCENARIOS / "multihop_qa" / "spec.yaml")
    q3 = sc.question("q3")
    assert q3 is not None
    assert q3.expected_sources == ["server_registry.md", "datacenter_locations.md"]
    assert len(q3.metadata["required_hops"]) == 3
    assert sc.mode_config("capability")["max_steps"] == 4
    assert sc.llm_model == "gpt-5-mini"
    with pytest.raises(InputError, match="unknown mode 'turbo'"):
        sc.mode_config("turbo")
    mac = load_scenario(SCENARIOS / "multi_agent_coordination")
    assert "CREATE TABLE" in (mac.seed_sql or "").upper()
    difficulties = [q.metadata.get("difficulty") for q in mac.questions]
    assert difficulties.count("easy") == 3
    assert difficulties.count("coordination") == 3
    assert difficulties.count("hard_coordination") == 4


def test_bad_scenarios_name_file_and_field(tmp_path):
    (tmp_path / "spec.yaml").write_text("name: x\nquestions_file: q.yaml\n")
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    assert "q.yaml" in str(err.value) and "not found" in str(err.value)
    (tmp_path / "q.yaml").write_text("questions:\n  - text: no id\n")
    with pytest.raises(InputError) as err:
        load_scenario(tmp_path)
    assert err.value.problem.field == "questions[0].id"
    (tmp_path / "q.yaml").write_text("questions:\n  - {id: a, text: t}\n  - {id: a, text: u}\n")
    with pytest.raises(InputError, match="duplicate question id"):
        load_scenario(tmp_path)
    (tmp_path / "q.yaml").write_text("questions: [\n")
    with pytest.raises(InputError, match="invalid YAML"):
        load_scenario(tmp_path)
    (tmp_path / "q.yaml").write_text("scenario_type: agentic_tool_qa\nquestions:\n"
                                     "  - {id: a, text: t}\n")
    sc = load_scenario(tmp_path)
    assert sc.scenario_type == "agentic_tool_qa"  # spec lacks it: questions.yaml wins
    assert sc.profile == "default" and sc.questions[0].expected_sources == []


@pytest.mark.parametrize("raw", ["q1", "q 1", "../../etc", "a/b\\c", "x.archived_1", "..", ""])
def test_safe_ids(raw):
    assert check_safe_id(safe_id(raw)) == safe_id(raw)
    assert check_safe_id(trajectory_id_for(raw, 3)).endswith("run3")


def test_trajectory_id_convention():
    assert trajectory_id_for("q1", 0) == "q1__run0"
