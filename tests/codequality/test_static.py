"""Static code quality: the seed's definitions, and agreement with the radon CLI's JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalatlas.codequality import FRAMEWORK_PREFIXES, analyse_source, maintainability_grade
from evalatlas.codequality.static import combine

RADON = Path(sys.executable).with_name("radon")
STDLIB = Path(textwrap.__file__).parent
SAMPLE = '''\
"""Module docstring.

Spans lines.
"""
import os, sys  # two names: counts 2
from langchain_core.messages import AIMessage, HumanMessage  # counts 1, framework
from langchain_openai_extra import x  # not a framework module
import langgraph.graph as lg
import pydantic_ai


class Agent:
    """A class."""

    def run(self, q: str) -> str:
        if q:
            return q
        elif q is None:
            return ""
        for _ in range(3):
            pass
        return "x"

    async def arun(self, q):
        def inner(y) -> int:
            return 1 if y else 2
        return inner(q)


def helper(a, b):
    f = lambda z: z + 1  # lambdas are not functions
    return a and b or f(a)
'''


def test_seed_definitions_on_a_sample():
    m = analyse_source(SAMPLE, framework_prefixes=FRAMEWORK_PREFIXES["langgraph"])
    assert m["num_imports"] == 2 + 1 + 1 + 1 + 1  # import os, sys counts 2
    assert m["num_framework_imports"] == 2  # langchain_core.messages, langgraph.graph
    assert m["num_classes"] == 1
    assert m["num_functions"] == 4  # run, arun, inner (nested), helper; no lambda
    assert m["type_annotation_ratio"] == 0.5  # run and inner have return annotations
    assert m["comment_ratio"] == m["comments"] / m["sloc"]
    assert m["comments"] == 4  # the four inline "#" comments count
    # class blocks count in the CC average (radon flattens classes and methods)
    assert m["cc_blocks"] == 4  # Agent, Agent.run, Agent.arun, helper
    assert m["max_cyclomatic_complexity"] == 4
    assert m["complexity_grade"] == "A"
    pyd = analyse_source(SAMPLE, framework_prefixes=FRAMEWORK_PREFIXES["pydantic_ai"])
    assert pyd["num_framework_imports"] == 1
    assert analyse_source(SAMPLE, framework_prefixes=FRAMEWORK_PREFIXES["crewai"])[
        "num_framework_imports"] == 0  # upstream quirk 7


def test_empty_source_and_no_functions():
    m = analyse_source("")
    assert m["sloc"] == 0 and m["comment_ratio"] == 0.0
    assert m["avg_cyclomatic_complexity"] == 0.0 and m["complexity_grade"] == "A"
    assert m["type_annotation_ratio"] == 0.0 and m["maintainability_index"] == 100.0
    with pytest.raises(SyntaxError):
        analyse_source("def broken(:\n")


@pytest.mark.parametrize(("mi", "grade"), [(100, "A"), (20.0, "A"), (19.5, "B"), (10.0, "B"),
                                           (9.99, "C"), (0, "C")])
def test_maintainability_grade(mi, grade):
    assert maintainability_grade(mi) == grade


def test_mi_grade_differs_from_radon_rank_in_the_gap():
    from radon.metrics import mi_rank
    assert (maintainability_grade(19.5), mi_rank(19.5)) == ("B", "A")
    assert (maintainability_grade(9.5), mi_rank(9.5)) == ("C", "B")


def test_analysed_code_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    src = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    analyse_source(src)
    assert not marker.exists()


def _radon(cmd: str, path: Path) -> dict:
    out = subprocess.run([str(RADON), cmd, "-j", str(path)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return json.loads(out)[str(path)]


FILES = [STDLIB / "textwrap.py", STDLIB / "json" / "decoder.py", STDLIB / "argparse.py",
         STDLIB / "asyncio" / "tasks.py", Path(__file__)]


@pytest.mark.skipif(not RADON.exists(), reason="radon CLI not installed beside python")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_agrees_with_radon_cli(path):
    m = analyse_source(path.read_text(encoding="utf-8"))
    raw = _radon("raw", path)
    for k in ("loc", "lloc", "sloc", "comments", "multi", "blank", "single_comments"):
        assert m[k] == raw[k], k
    mi = _radon("mi", path)
    assert m["maintainability_index"] == pytest.approx(mi["mi"], abs=1e-9)
    assert m["mi_rank_radon"] == mi["rank"]
    hal = _radon("hal", path)["total"]
    for k in ("volume", "difficulty", "effort", "bugs"):
        assert m[f"halstead_{k}"] == pytest.approx(hal[k], rel=1e-12), k
    cc = [b["complexity"] for b in _radon("cc", path)]
    assert m["cc_blocks"] == len(cc)
    assert m["max_cyclomatic_complexity"] == max(cc)
    assert m["avg_cyclomatic_complexity"] == pytest.approx(sum(cc) / len(cc))


def test_combine_totals():
    a = analyse_source(SAMPLE)
    b = analyse_source("def f() -> int:\n    return 1\n")
    tot = combine([a, b])
    assert tot["files"] == 2 and tot["sloc"] == a["sloc"] + b["sloc"]
    assert tot["num_functions"] == 5
    assert tot["type_annotation_ratio"] == pytest.approx(3 / 5)
    assert tot["avg_cyclomatic_complexity"] == pytest.approx(
        (a["cc_total"] + b["cc_total"]) / (a["cc_blocks"] + b["cc_blocks"]))
    assert tot["maintainability_index"] == pytest.approx(
        (a["maintainability_index"] * a["sloc"] + b["maintainability_index"] * b["sloc"])
        / (a["sloc"] + b["sloc"]))
    assert tot["halstead_difficulty"] == pytest.approx(
        (a["halstead_effort"] + b["halstead_effort"])
        / (a["halstead_volume"] + b["halstead_volume"]))
