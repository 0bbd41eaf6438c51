"""Rubric scoring, consensus and Krippendorff's alpha; real ProjectScylla fixtures."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_openai import FakeOpenAI

from evalatlas.errors import InputError
from evalatlas.judge.client import JudgeClient, JudgeConfig, ValidationFailure
from evalatlas.judge.rubric import (
    RubricVerdict,
    combine_judges,
    judge_rubric,
    krippendorff_alpha_interval,
    load_rubric,
    parse_rubric,
    rubric_validator,
    score_rubric,
)

SCYLLA = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "scylla"
RAW = SCYLLA / "dryrun" / "raw"


def _points(judgment: dict) -> dict[str, float | None]:
    return {iid: None if it["achieved"] == "N/A" else it["achieved"]
            for cat in judgment["criteria_scores"].values() for iid, it in cat["items"].items()}


def test_fixture_rubric_loads() -> None:
    rb = load_rubric(SCYLLA / "test-001" / "expected" / "rubric.yaml")
    assert [c.name for c in rb.categories] == ["functional", "code_quality", "proportionality",
                                               "build_pipeline", "overall_quality"]
    assert [c.weight for c in rb.categories] == [0.35, 0.20, 0.15, 0.10, 0.20]
    assert rb.pass_threshold == 0.60
    items = rb.items()
    assert items["F4"].points == 0.5 and items["OQ1"].points == 2.0
    assert items["Q4"].na_condition == "ruff not available in workspace"


def test_score_reproduces_scylla_judgment() -> None:
    # T3 judge_03: 0.35 + 0.20 + 0.15 + 0.10 (B3, B4 N/A) + 0.20 * 1.9/2 = 0.99
    rb = load_rubric(RAW / "rubric.yaml")
    j = json.loads((RAW / "T3/01/run_01/judge/judge_03/judgment.json").read_text())
    s = score_rubric(rb, _points(j))
    assert s.score == pytest.approx(0.99) == pytest.approx(j["score"])
    assert s.passed is True
    bp = s.categories["build_pipeline"]
    assert (bp["achieved"], bp["max"], bp["score"], bp["na_items"]) == (2.0, 2.0, 1.0,
                                                                        ["B3", "B4"])
    assert s.categories["overall_quality"]["score"] == pytest.approx(0.95)


def test_recomputed_not_self_reported() -> None:
    # T0 judge_02 self-reports 0.96; its item points give a different weighted score.
    rb = load_rubric(RAW / "rubric.yaml")
    j = json.loads((RAW / "T0/00/run_01/judge/judge_02/judgment.json").read_text())
    s = score_rubric(rb, _points(j))
    expected = sum(c.weight * (sum(j["criteria_scores"][c.name]["items"][i.id]["achieved"]
                                   for i in c.items
                                   if j["criteria_scores"][c.name]["items"][i.id]["achieved"]
                                   != "N/A")
                               / sum(i.points for i in c.items
                                     if j["criteria_scores"][c.name]["items"][i.id]["achieved"]
                                     != "N/A"))
                   for c in rb.categories)
    assert s.score == pytest.approx(expected) == pytest.approx(0.9471, abs=1e-4)


SMALL = {"categories": {
    "a": {"weight": 0.5, "items": [{"id": "a1", "check": "x", "points": 1,
                                    "na_condition": "never"}]},
    "b": {"weight": 0.25, "items": [{"id": "b1", "check": "y", "points": 2}]},
    "c": {"weight": 0.25, "items": [{"id": "c1", "check": "z", "points": 4,
                                     "na_condition": "c"}]}},
    "grading": {"pass_threshold": 0.5}}


def test_na_weight_is_spread_and_all_na_is_missing() -> None:
    rb = parse_rubric(SMALL)
    # a is N/A: (0.25 * 1/2 + 0.25 * 3/4) / 0.5 = 0.625
    s = score_rubric(rb, {"a1": None, "b1": 1.0, "c1": 3.0})
    assert s.score == pytest.approx(0.625) and s.passed is True
    assert s.categories["a"]["score"] is None
    rb2 = parse_rubric({"categories": {"a": SMALL["categories"]["a"]}})
    none = score_rubric(rb2, {"a1": None})
    assert none.score is None and none.passed is None


def test_validator_rules() -> None:
    v = rubric_validator(parse_rubric(SMALL))
    ok = v({"items": {"a1": {"achieved": "N/A"}, "b1": {"achieved": 2}, "c1": 0},
            "reasoning": "r"})
    assert ok["achieved"] == {"a1": None, "b1": 2.0, "c1": 0.0}
    with pytest.raises(ValidationFailure, match="no N/A condition"):
        v({"items": {"a1": 1, "b1": "N/A", "c1": 0}, "reasoning": "r"})
    with pytest.raises(ValidationFailure, match="outside"):
        v({"items": {"a1": 1, "b1": 3, "c1": 0}, "reasoning": "r"})
    with pytest.raises(ValidationFailure, match="missing item 'c1'"):
        v({"items": {"a1": 1, "b1": 1}, "reasoning": "r"})


def test_bad_rubric_names_field(tmp_path: Path) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("categories:\n  a:\n    weight: -1\n    items: [{id: a1, points: 1}]\n")
    with pytest.raises(InputError) as e:
        load_rubric(p)
    assert e.value.problem.field == "categories.a.weight" and e.value.problem.file == str(p)


def _alpha_reference(m: np.ndarray) -> float:
    """Interval alpha for complete data, straight from the definition 1 - Do/De."""
    values = m.flatten()
    n = values.size
    d_o = sum(sum((a - b) ** 2 for a, b in itertools.permutations(col, 2)) / (len(col) - 1)
              for col in m.T) / n
    d_e = sum((a - b) ** 2 for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def test_alpha_matches_definition() -> None:
    m = np.array([[1.0, 0.5, 0.8, 0.2], [0.9, 0.6, 0.7, 0.1], [1.0, 0.4, 1.0, 0.3]])
    assert krippendorff_alpha_interval(m) == pytest.approx(_alpha_reference(m))
    assert krippendorff_alpha_interval(np.ones((3, 4))) is None  # no variation: undefined
    assert krippendorff_alpha_interval(m[:1]) is None  # one judge


def test_combine_mean_majority_and_failed_judge_excluded() -> None:
    rb = parse_rubric(SMALL)
    pts = [{"a1": 1.0, "b1": 2.0, "c1": 4.0}, {"a1": 0.0, "b1": 1.0, "c1": 2.0},
           {"a1": 1.0, "b1": 0.0, "c1": 0.0}]
    vs = [RubricVerdict(f"m{i}", score_rubric(rb, p), f"r{i}", p) for i, p in enumerate(pts)]
    vs.append(RubricVerdict("broken", None, error="judge failed after 4 attempt(s)"))
    c = combine_judges(rb, vs)
    # scores 1.0, 0.25 (0.5*0 + 0.25*1/2 + 0.25*2/4), 0.5 -> mean 0.5833;
    # passes (threshold 0.5): True, False, True -> majority True
    assert [v.score.score for v in vs[:3]] == pytest.approx([1.0, 0.25, 0.5])
    assert c.score == pytest.approx(1.75 / 3) and c.passed is True
    assert c.n_valid == 3 and c.n_judges == 4 and "3:broken" in c.errors
    assert c.categories["b"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    m = np.array([[1.0, 1.0, 1.0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    assert c.alpha == pytest.approx(_alpha_reference(m))
    assert c.reasoning == "r2"  # closest to the mean (0.5 vs 0.583)
    empty = combine_judges(rb, [vs[3]])
    assert empty.score is None and empty.passed is None and empty.n_valid == 0


def test_three_judges_over_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rb = load_rubric(SCYLLA / "test-001" / "expected" / "rubric.yaml")
    with FakeOpenAI() as good, FakeOpenAI(default="500") as bad:
        clients = [JudgeClient(JudgeConfig(model=m, base_url=u, cache_dir=None, backoff_s=0.01,
                                           max_attempts=2))
                   for m, u in [("j1", good.base_url), ("j2", good.base_url),
                                ("j3", bad.base_url)]]

        async def go():
            try:
                return await judge_rubric(clients, rb, "Write hello.py", "print('hi')")
            finally:
                for c in clients:
                    await c.aclose()

        consensus, verdicts = asyncio.run(go())
    assert consensus.score == pytest.approx(1.0) and consensus.passed is True
    assert consensus.n_valid == 2 and verdicts[2].score is None and "HTTP 500" in \
        verdicts[2].error
    assert consensus.alpha is None  # full agreement on constant scores: alpha undefined
