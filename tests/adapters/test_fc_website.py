"""The published FormulaCode table (website_data.csv): real fixture and bad input."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from evalatlas.adapters.fc_website import ADAPTER, agent_key_from_id
from evalatlas.errors import Problem
from evalatlas.metrics.speedup import deconstruct_benchmark, level_advantages
from evalatlas.records.models import EpisodeRecord, ExperimentRecord, Measurement

CSV = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "formulacode" / \
    "website_data.csv"
SCALE = 1.414  # the website's advantage column is (agent/nop - oracle/nop) / 1.414


@pytest.fixture(scope="module")
def items() -> list:
    return list(ADAPTER.read(CSV))


def _rows() -> list[dict[str, str]]:
    with CSV.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_detect() -> None:
    assert ADAPTER.detect(CSV)


def test_param_rows_become_measurements(items: list) -> None:
    exps = [i for i in items if isinstance(i, ExperimentRecord)]
    eps = [i for i in items if isinstance(i, EpisodeRecord)]
    ms = [i for i in items if isinstance(i, Measurement)]
    assert [i for i in items if isinstance(i, Problem)] == []
    assert sorted(e.agent.name for e in exps) == [
        "terminus-2:claude", "terminus-2:gpt-5", "terminus-2:oracle"]
    assert {e.extra["skipped_aggregate_rows"] for e in exps} == {2193 - 798}
    assert len(eps) == 9  # 3 agents x 3 tasks
    assert len(ms) == 406 + 213 + 179  # PROVENANCE / row counts of the param level
    assert all(m.valid for m in ms)
    assert all(e.extra["correctness_known"] is False for e in eps)


def test_published_advantage_column_is_consistent(items: list) -> None:
    """Per row: evalatlas's advantage x (1/1.414) is the published column (agent rows),
    and equal to it for the oracle rows (agent/nop = oracle/nop)."""
    ms = [i for i in items if isinstance(i, Measurement)]
    exps = {e.experiment_id: e.agent.name for e in items if isinstance(e, ExperimentRecord)}
    for m in ms:
        pub = m.extra["published_advantage"]
        assert m.advantage == pytest.approx(m.speedup_agent - m.speedup_oracle, abs=1e-15)
        if exps[m.experiment_id] == "terminus-2:oracle":
            assert m.advantage == pytest.approx(pub, abs=1e-12)
        else:
            assert m.advantage / SCALE == pytest.approx(pub, rel=1e-9, abs=1e-12)


def test_levels_consistent_with_the_website_class_rows() -> None:
    """Website class-level rows whose group matches FC-Eval's class grouping: our
    per-group gmean(agent) - gmean(oracle), scaled by 1/1.414, is their advantage."""
    rows = _rows()
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["level"] == "param-level":
            mod, cls, _, _ = deconstruct_benchmark(r["benchmark_name"])
            name = ".".join(p for p in (mod, cls) if p)
            groups[(r["task_id"], r["agent_id"], name)].append(r)
    matched = 0
    for r in rows:
        if r["level"] != "class-level" or "oracle" in r["agent_id"]:
            continue
        g = groups.get((r["task_id"], r["agent_id"], r["benchmark_name"]))
        if not g:
            continue
        a = math.exp(np.mean([math.log(float(p["agent/nop"])) for p in g]))
        o = math.exp(np.mean([math.log(float(p["oracle/nop"])) for p in g]))
        if abs(a - float(r["agent/nop"])) > 1e-9 or abs(o - float(r["oracle/nop"])) > 1e-9:
            continue  # a group the website built differently
        matched += 1
        names = [deconstruct_benchmark(p["benchmark_name"])[:3] for p in g]
        ours = level_advantages(names, [float(p["agent/nop"]) for p in g],
                                [float(p["oracle/nop"]) for p in g])[2]
        assert ours == pytest.approx(a - o, rel=1e-9)
        assert ours / SCALE == pytest.approx(float(r["advantage"]), rel=1e-6, abs=1e-12)
    assert matched >= 150  # most class groups agree (the rest are the website's own)


def test_per_agent_levels_match_an_independent_computation(items: list) -> None:
    exps = {e.experiment_id: e.agent.name for e in items if isinstance(e, ExperimentRecord)}
    eps = {(e.experiment_id, e.trajectory_id): e for e in items if isinstance(e, EpisodeRecord)}
    rows = [r for r in _rows() if r["level"] == "param-level"]
    for (eid, _tid), ep in eps.items():
        agent = exps[eid]
        mine = [r for r in rows if agent_key_from_id(r["agent_id"]) == agent
                and r["task_id"] == ep.task_id]
        a = np.array([float(r["agent/nop"]) for r in mine])
        o = np.array([float(r["oracle/nop"]) for r in mine])
        # level 4: one group; level 1: by module (rows' benchmark_decoposed is not it)
        l4 = math.exp(np.log(a).mean()) - math.exp(np.log(o).mean())
        assert ep.scores["advantage_level4"] == pytest.approx(l4, rel=1e-9, abs=1e-12)
        mods: dict[str | None, list[int]] = defaultdict(list)
        for i, r in enumerate(mine):
            mods[deconstruct_benchmark(r["benchmark_name"])[0]].append(i)
        l1 = np.mean([math.exp(np.log(a[ix]).mean()) - math.exp(np.log(o[ix]).mean())
                      for ix in mods.values()])
        assert ep.scores["advantage_level1"] == pytest.approx(l1, rel=1e-9, abs=1e-12)
        assert ep.scores["task_speedup"] == pytest.approx(math.exp(np.log(a).mean()))
        if "oracle" in agent:
            assert ep.scores["agent_advantage"] == pytest.approx(0.0, abs=1e-12)
        # sign agrees with the mean of the published per-benchmark column
        pub = np.mean([float(r["advantage"]) for r in mine])
        assert ep.scores["beat_oracle_share"] == pytest.approx(
            np.mean([float(r["advantage"]) > 0 for r in mine]))
        assert pub == pytest.approx(np.mean(a - o) / (SCALE if "oracle" not in agent else 1))


def test_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "website_data.csv"
    header = "id,level,agent_id,agent/nop,oracle/nop,task_id,benchmark_name,advantage\n"
    path.write_text(header + "\n".join([
        "1,param-level,\"a,m\",2.0,1.0,t,x.f,0.7",
        "2,param-level,\"a,m\",NaN,1.0,t,x.g,",
        "3,param-level,\"a,m\",-1,1.0,t,x.h,",
        "4,param-level,\"a,m\",abc,1.0,t,x.i,",
        "5,param-level,,1.0,1.0,t,x.j,",
        "6,param-level,\"a,m\",3.0,1.0,t,x.f,",
        "7,func-level,\"a,m\",9.0,1.0,t,x,",
    ]) + "\n")
    items = list(ADAPTER.read(path))
    problems = [str(i) for i in items if isinstance(i, Problem)]
    ms = {m.benchmark: m for m in items if isinstance(m, Measurement)}
    ep = next(i for i in items if isinstance(i, EpisodeRecord))
    assert sorted(ms) == ["x.f", "x.g", "x.h", "x.i"]
    assert ms["x.f"].speedup_agent == 2.0 and ms["x.f"].valid
    assert not ms["x.g"].valid and not ms["x.h"].valid and not ms["x.i"].valid
    assert ep.scores["task_speedup"] == 2.0 and ep.scores["num_valid_benchmarks"] == 1.0
    assert any(":3 [record 2] field 'agent/nop'" in p and "finite" in p for p in problems)
    assert any("[record 3]" in p and "positive" in p for p in problems)
    assert any("[record 5] field 'agent_id'" in p for p in problems)
    assert any("[record 6]" in p and "duplicate benchmark" in p for p in problems)


def test_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("level,agent_id,agent/nop\nparam-level,a,1\n")
    (p,) = list(ADAPTER.read(path))
    assert isinstance(p, Problem) and "missing columns" in p.reason
