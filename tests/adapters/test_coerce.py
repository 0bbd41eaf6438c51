"""The one coercion rule (adapters/coerce.py), value by value and over every adapter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalatlas.adapters import coerce
from evalatlas.adapters.coerce import Coerced, Fields, Refused
from evalatlas.errors import InputError, Problem
from evalatlas.records.models import EpisodeRecord

MISSING = "missing"
REFUSED = "refused"

# (rule, value, strings, expected): expected is a value, MISSING (None with a note) or
# REFUSED
CASES = [
    ("number", None, False, None),
    ("number", 3, False, 3.0),
    ("number", 0.25, False, 0.25),
    ("number", True, False, REFUSED),          # booleans are not numbers
    ("number", False, True, REFUSED),
    ("number", float("nan"), False, MISSING),  # not finite is missing
    ("number", float("inf"), False, MISSING),
    ("number", "NaN", False, MISSING),
    ("number", "inf", False, MISSING),
    ("number", "-Infinity", True, MISSING),
    ("number", "1e999", False, MISSING),
    ("number", "0.7", False, REFUSED),         # numeric strings only where documented
    ("number", "0.7", True, 0.7),
    ("number", " 5 ", True, 5.0),
    ("number", "", True, REFUSED),
    ("number", "abc", True, REFUSED),
    ("number", [1], True, REFUSED),
    ("number", {"v": 1}, True, REFUSED),
    ("amount", -0.5, False, MISSING),          # a negative cost is missing
    ("amount", 0.0, False, 0.0),
    ("count", 5, False, 5),
    ("count", 2.0, False, 2),
    ("count", 2.5, False, REFUSED),
    ("count", -100, False, MISSING),           # negative counts are missing
    ("count", "91", False, REFUSED),
    ("count", "91", True, 91),
    ("count", "-3", True, MISSING),
    ("count", "NaN", False, MISSING),
    ("count", True, False, REFUSED),
    ("boolean", True, False, True),
    ("boolean", None, False, None),
    ("boolean", "true", False, REFUSED),
    ("boolean", "False", True, False),
    ("boolean", "yes", True, REFUSED),
    ("boolean", 1, False, REFUSED),
    ("text", "x", False, "x"),
    ("text", 5, False, REFUSED),
    ("identifier", "a-1", False, "a-1"),
    ("identifier", 17, False, "17"),
    ("identifier", True, False, REFUSED),
    ("identifier", 1.5, False, REFUSED),
    ("identifier", {"id": 1}, False, REFUSED),
    ("identifier", "", False, REFUSED),
]


@pytest.mark.parametrize(("rule", "value", "strings", "expected"), CASES,
                         ids=[f"{r}-{v!r}-{s}" for r, v, s, _ in CASES])
def test_the_rule(rule, value, strings, expected):
    fn = getattr(coerce, rule)
    kw = {"strings": strings} if rule in ("number", "amount", "count", "boolean") else {}
    if expected == REFUSED:
        with pytest.raises(Refused) as info:
            fn(value, **kw)
        assert info.value.reason and "Error" not in info.value.reason
        return
    got = fn(value, **kw)
    assert isinstance(got, Coerced)
    if expected == MISSING:
        assert got.value is None and got.note and got.note.endswith("missing")
    else:
        assert got.value == expected and type(got.value) is type(expected)
        assert got.note is None


def test_fields_strict_quarantines_with_location_lenient_notes():
    f = Fields("runs/x.json", "#3")
    with pytest.raises(InputError) as info:
        f.number("1.0", "reward")
    p = info.value.problem
    assert (p.file, p.record, p.field) == ("runs/x.json", "#3", "reward")
    assert p.reason == "the string '1.0': this format writes a number here, not a string"
    lenient = Fields("meta.json", strict=False)
    assert lenient.count([1], "dataset_size") is None
    assert lenient.count(-3, "n") is None
    assert lenient.number("NaN", "score") is None
    assert lenient.attach({"a": 1}) == {"a": 1, "coercion_notes": {
        "dataset_size": "a list is not a number; missing",
        "n": "negative count (-3); missing",
        "score": "the string 'NaN' is not a finite number; missing"}}
    assert Fields("f").attach({}) == {}  # no notes, no key


# --- the rule over every adapter: one token/step count, five foreign values -----------
#
# Each adapter reads a real fixture (or a minimal file of its format) with one record's
# count set to the value; the table says what every adapter must do with it.

def _tau(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.tau_bench import read_tau_bench
    rows = json.loads((fx / "tau-bench" / "gpt-4o-airline.reduced.json").read_text())
    rows[0]["n_traj_messages"] = v
    (tmp / "gpt-4o-airline.json").write_text(json.dumps(rows))
    return list(read_tau_bench(tmp / "gpt-4o-airline.json")), "n_traj_messages"


def _terminal(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.terminal_bench import read_submission
    src = fx / "terminal-bench" / "20250902_orchestrator_qwen-3-coder-480B"
    shutil.copytree(src, tmp / "sub")
    data = json.loads((src / "results.json").read_text())
    data["results"][0]["total_input_tokens"] = v
    (tmp / "sub" / "results.json").write_text(json.dumps(data))
    return list(read_submission(tmp / "sub")), "total_input_tokens"


def _eee(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.eee import read_aggregate
    ref = (fx / "eee" / "skill_reference_conversion" / "data" / "demo-source" / "demo-org"
           / "demo-model" / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40")
    shutil.copy(ref.with_suffix(".json"), tmp / "a.json")
    row = json.loads(ref.with_name(ref.name + "_samples.jsonl").read_text())
    rows = [dict(row, sample_id=f"s{i}") for i in range(3)]
    rows[0] = json.loads(json.dumps(rows[0]))
    rows[0]["token_usage"]["input_tokens"] = v
    (tmp / "a_samples.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return list(read_aggregate(tmp / "a.json")), "token_usage.input_tokens"


def _eee_metadata(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    """EEE's instance ``metadata`` values are strings by its schema: documented."""
    from evalatlas.adapters.eee import read_aggregate
    ref = (fx / "eee" / "skill_reference_conversion" / "data" / "demo-source" / "demo-org"
           / "demo-model" / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40")
    shutil.copy(ref.with_suffix(".json"), tmp / "a.json")
    row = json.loads(ref.with_name(ref.name + "_samples.jsonl").read_text())
    rows = [dict(row, sample_id=f"s{i}") for i in range(3)]
    rows[0] = dict(rows[0], metadata={"n_llm_calls": v})
    (tmp / "a_samples.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return list(read_aggregate(tmp / "a.json")), "metadata.n_llm_calls"


def _swebench(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.swebench import read_swebench_dir
    (tmp / "sys").mkdir()
    (tmp / "sys" / "per_instance_details.json").write_text(json.dumps({
        "a": {"resolved": True, "cost": 0.5, "api_calls": v},
        "b": {"resolved": False, "cost": 0.25, "api_calls": 3}}))
    return list(read_swebench_dir(tmp / "sys")), "api_calls"


def _inspect(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.inspect import read_inspect
    log = json.loads((fx / "inspect" / "2025-05-12T20-28-13-04-00_popularity.json")
                     .read_text())
    log["samples"][0]["model_usage"]["openai/gpt-4o-mini"]["input_tokens"] = v
    (tmp / "log.json").write_text(json.dumps(log))
    return list(read_inspect(tmp / "log.json")), "model_usage.openai/gpt-4o-mini.input_tokens"


def _framework(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.framework_results import read_results_file
    q = {"question_id": "q0", "question_text": "?", "actual_answer": "a",
         "sources_expected": [], "sources_retrieved": [], "latency_seconds": 1.0,
         "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
         "estimated_cost_usd": 0.001, "model_name": "gpt-5-mini", "correctness_score": 4,
         "completeness_score": 3, "faithfulness_score": 5}
    doc = {"framework_name": "Pydantic AI", "scenario_name": "multihop_qa", "mode": "x",
           "questions": [dict(q, prompt_tokens=v), dict(q, question_id="q1")],
           "run_id": 0, "run_count": 1}
    f = tmp / "pydantic_ai_multihop_qa_20260212_000000.json"
    f.write_text(json.dumps(doc))
    return list(read_results_file(f)), "prompt_tokens"


ADAPTERS = {"tau-bench": _tau, "terminal-bench": _terminal, "eee": _eee,
            "eee-metadata": _eee_metadata, "swe-bench": _swebench, "inspect": _inspect,
            "framework-results": _framework}
DOCUMENTED_STRINGS = {"eee-metadata"}
# value -> what the rule gives: ("quarantined", words) or ("missing", note) or value
VALUES = [
    (True, ("quarantined", "a boolean (true) is not a number")),
    (2.5, ("quarantined", "2.5 is not a whole number")),
    ("NaN", ("missing", "the string 'NaN' is not a finite number; missing")),
    (-5, ("missing", "negative count (-5); missing")),
    ("7", ("quarantined", "this format writes a number here, not a string")),
]


@pytest.mark.parametrize("value,expected", VALUES, ids=[repr(v) for v, _ in VALUES])
@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_every_adapter_follows_the_rule(tmp_path, fixtures, adapter, value, expected):
    items, field = ADAPTERS[adapter](tmp_path, fixtures, value)
    problems = [i for i in items if isinstance(i, Problem)]
    episodes = [i for i in items if isinstance(i, EpisodeRecord)]
    assert episodes, "the other records are stored"
    kind, words = expected
    if adapter in DOCUMENTED_STRINGS and value == "7":
        kind, words = "stored", 7
    if kind == "quarantined":
        (p,) = problems
        assert p.field == field and words in p.reason and "Error" not in p.reason
        return
    assert problems == []
    noted = [e for e in episodes if field in e.extra.get("coercion_notes", {})]
    if kind == "missing":
        (e,) = noted
        assert e.extra["coercion_notes"][field] == words
    else:
        assert noted == []
