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


_EDGES = [0, 1, -1, 2**53, 2**53 + 1, -(2**53), 2**63, -0.0, 0.0, 1e-300, 1.5, -2.5,
          1.7976931348623157e308, -1.7976931348623157e308, float("inf"), float("-inf"),
          float("nan"), 2.0, 7.25]


@pytest.mark.parametrize("rule", ["number", "amount", "count", "identifier"])
@pytest.mark.parametrize("strings", [False, True])
def test_fields_answers_what_the_rule_answers(rule, strings):
    """Fields' fast answers for plain numbers are the rule's own, value, type and note
    (and a refusal stays a refusal) on every value of CASES and the edges of 2**53 and
    the float range."""
    kw = {} if rule == "identifier" else {"strings": strings}
    for value in [v for r, v, _, _ in CASES if r == rule] + _EDGES + [None, "", "a"]:
        f = Fields("x.json", "r", strict=False)
        try:
            want = getattr(coerce, rule)(value, **kw)
        except Refused as exc:
            assert getattr(f, rule)(value, "v", **kw) is None
            assert f.notes == {"v": f"{exc.reason}; missing"}
            continue
        got = getattr(f, rule)(value, "v", **kw)
        assert got == want.value or (got is None and want.value is None), value
        assert type(got) is type(want.value), value
        assert f.notes == ({"v": want.note} if want.note else {}), value


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


def _terminal_file(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    """``terminal-bench-file``: one results.json read on its own."""
    from evalatlas.adapters.terminal_bench import read_submission
    _, field = _terminal(tmp, fx, v)
    return list(read_submission(tmp / "sub" / "results.json")), field


def _eee_samples(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    """``eee-samples``: an instance file without its aggregate."""
    from evalatlas.adapters.eee import read_samples_alone
    _eee(tmp, fx, v)
    (tmp / "a.json").unlink()
    return list(read_samples_alone(tmp / "a_samples.jsonl")), "token_usage.input_tokens"


def _scylla(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    from evalatlas.adapters.scylla import read_scylla_dir
    shutil.copytree(fx / "scylla" / "dryrun", tmp / "dryrun")
    rr = tmp / "dryrun" / "raw" / "T2" / "01" / "run_01" / "run_result.json"
    doc = json.loads(rr.read_text())
    doc["token_stats"]["input_tokens"] = v
    rr.write_text(json.dumps(doc))
    return list(read_scylla_dir(tmp / "dryrun" / "raw")), "token_stats.input_tokens"


def _evallog(tmp: Path, fx: Path, v: object) -> tuple[list, str]:
    """``evallog``: a cube-harness trajectory directory (episode metadata)."""
    from evalatlas.adapters.cube import read_experiment_dir
    shutil.copytree(fx / "cube" / "xray" / "v2_with_status", tmp / "x")
    meta = tmp / "x" / "episodes" / "task_1_ep0" / "episode.metadata.json"
    doc = json.loads(meta.read_text())
    doc["summary_stats"] = {**(doc.get("summary_stats") or {}), "prompt_tokens": v}
    meta.write_text(json.dumps(doc))
    return list(read_experiment_dir(tmp / "x")), "summary_stats.prompt_tokens"


ADAPTERS = {"tau-bench": _tau, "terminal-bench": _terminal, "eee": _eee,
            "eee-metadata": _eee_metadata, "swe-bench": _swebench, "inspect": _inspect,
            "framework-results": _framework, "terminal-bench-file": _terminal_file,
            "eee-samples": _eee_samples, "scylla": _scylla, "evallog": _evallog}
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


# --- every registered adapter is covered: in the table above, in the tables below, or
# exempt with the reason its values need no foreign-value coercion -----------------------

COUNT_TABLE = {"tau-bench", "terminal-bench", "terminal-bench-file", "eee", "eee-samples",
               "swebench", "inspect", "framework-results", "scylla", "evallog"}
"""Registered adapter names whose token/step count is in ``ADAPTERS`` (``swe-bench`` there
is the ``swebench`` folder adapter)."""

OTHER_TABLES = {
    "fceval": "per-benchmark speedups: test_fceval_speedups_follow_the_rule",
    "pyirt": "responses (booleans documented): test_pyirt_responses_follow_the_rule",
    "fc-website": "CSV cells, numeric strings documented: test_csv_cells_follow_the_rule",
    "swebench-pro-docent": "CSV cells: test_docent_turns_follow_the_rule",
    "swebench-pro": "the Docent CSV (as above) beside eval_results.json's id lists",
    "asv": "timing samples: test_asv_samples_follow_the_rule",
}

EXEMPT = {
    "jsonl": "evalatlas's own record contract (schemas/), validated by the pydantic models,"
             " not a foreign format",
    "evalatlas-parquet": "evalatlas's own export: typed Parquet columns written by the store",
    "framework-report": "a Markdown report: every cell is text by format; percentages and"
                        " dollar amounts are parsed as documented there",
}


def test_every_registered_adapter_is_covered():
    from evalatlas.adapters.registry import all_adapters

    names = {a.name for a in all_adapters()}
    covered = COUNT_TABLE | set(OTHER_TABLES) | set(EXEMPT)
    assert names - covered == set(), "an adapter without a row in the coercion tables"
    assert covered - names == set(), "a table row for an adapter that is not registered"
    in_table = {("swebench" if k == "swe-bench" else k) for k in ADAPTERS}
    assert in_table - {"eee-metadata"} == COUNT_TABLE


@pytest.mark.parametrize("value,expected", [
    (True, "agent/nop: a boolean (true) is not a number"),
    ("NaN", "agent/nop: the string 'NaN' is not a finite number; missing"),
    ("1.5", "agent/nop: the string '1.5': this format writes a number here, not a string"),
    (None, "agent/nop: missing"),
    (1.5, None), (-2.0, None), (0.0, None),
], ids=repr)
def test_fceval_speedups_follow_the_rule(value, expected):
    """FC-Eval's per-benchmark speedups are JSON numbers: a value the rule refuses or
    makes missing makes that benchmark invalid with the rule's words; a number is kept."""
    from evalatlas.adapters.fceval import benchmarks_from_speedups

    problems: list[Problem] = []
    (b,) = benchmarks_from_speedups({"m.f": {"agent/nop": value, "oracle/nop": 2.0}},
                                    "f.txt", "task", problems)
    if expected is None:
        assert b.valid and b.speedup_agent == float(value) and b.speedup_oracle == 2.0
        assert problems == []
    else:
        assert not b.valid and b.speedup_agent is None and b.reason == expected
        assert [p.field for p in problems] == ["per_benchmark_speedups.m.f"]


@pytest.mark.parametrize("value,expected", [
    (True, 1.0), (False, 0.0), (1, 1.0), (0.5, 0.5),   # booleans are documented responses
    ("NaN", None), (float("nan"), None), ("1", None), ([1], None), (None, None),
], ids=repr)
def test_pyirt_responses_follow_the_rule(tmp_path, value, expected):
    from evalatlas.adapters.pyirt import read_pyirt

    f = tmp_path / "irt.jsonlines"
    f.write_text(json.dumps({"subject_id": "a", "responses": {"q1": value, "q2": 1}}) + "\n")
    items = list(read_pyirt(f))
    eps = {e.task_id: e for e in items if isinstance(e, EpisodeRecord)}
    problems = [p for p in items if isinstance(p, Problem)]
    assert eps["q2"].reward == 1.0
    if expected is None:  # refused or not finite: no response, a problem naming it
        assert "q1" not in eps and [p.field for p in problems] == ["responses.q1"]
    else:
        assert eps["q1"].reward == expected and problems == []


@pytest.mark.parametrize("cell,expected", [
    ("1.25", 1.25), (" 7 ", 7.0), ("", None), ("NaN", None), ("inf", None),
    ("1e999", None), ("abc", None), ("true", None),
], ids=repr)
def test_csv_cells_follow_the_rule(cell, expected):
    """A CSV holds text only, so numeric strings are documented there (``strings=True``);
    what the rule refuses or makes missing is a missing value, never 0."""
    from evalatlas.adapters.fc_website import _number

    assert _number(cell) == expected


@pytest.mark.parametrize("cell,expected", [
    ("7", ("stored", 7)), ("7.0", ("stored", 7)),
    ("2.5", ("quarantined", "the string '2.5' is not a whole number")),
    ("True", ("quarantined", "the string 'True' is not a number")),
    ("NaN", ("missing", "the string 'NaN' is not a finite number; missing")),
    ("-5", ("missing", "negative count (the string '-5'); missing")),
    ("", ("stored", None)),
], ids=repr)
def test_docent_turns_follow_the_rule(tmp_path, cell, expected):
    """SWE-Bench Pro's Docent export is a CSV: numbers are text there (documented), so
    ``metadata.turns`` goes through the count rule with ``strings=True``."""
    from evalatlas.adapters.swebench import read_docent_csv

    f = tmp_path / "agent_runs_data.csv"
    f.write_text("metadata.model_name,metadata.instance_id,metadata.resolved,metadata.turns\n"
                 f"run-a,i1,true,{cell}\nrun-a,i2,false,3\n")
    items = list(read_docent_csv(f))
    eps = {e.task_id: e for e in items if isinstance(e, EpisodeRecord)}
    problems = [p for p in items if isinstance(p, Problem)]
    assert eps["i2"].n_agent_steps == 3
    kind, what = expected
    if kind == "quarantined":
        assert "i1" not in eps and [p.field for p in problems] == ["metadata.turns"]
        assert what in problems[0].reason
        return
    assert problems == []
    if kind == "missing":
        assert eps["i1"].n_agent_steps is None
        assert eps["i1"].extra["coercion_notes"] == {"metadata.turns": what}
    else:
        assert eps["i1"].n_agent_steps == what


@pytest.mark.parametrize("sample,expected", [
    (1.5, ([1.5], 0, None)), (2, ([2.0], 0, None)),
    (float("nan"), ([], 1, None)), (None, ([], 1, None)),  # a failed repeat: dropped
    (True, ([], 1, None)), ("1.5", ([], 1, None)), ("NaN", ([], 1, None)),  # not samples
    (float("inf"), (None, 0, "infinite timing sample")),
    (-1.0, ([-1.0], 0, "negative timing sample")),
], ids=repr)
def test_asv_samples_follow_the_rule(sample, expected):
    """ASV timing samples: the rule decides what is a number; a refused or missing sample
    is dropped and counted, an infinite or negative one invalidates the benchmark."""
    from evalatlas.adapters.asv import _clean

    problems: list[Problem] = []
    vals, dropped, reason = _clean([sample], "r.json", "a:m", "m.f", problems)
    assert (vals, dropped, reason) == expected
    assert [p.reason for p in problems] == ([reason] if reason else [])
