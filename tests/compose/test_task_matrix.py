"""compose/task_matrix.py: the report's group x task matrix holds the stored counts, and
its paired comparisons are ``evalatlas compare``'s numbers on the same agents."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import evalatlas as ea
from evalatlas.compose.task_matrix import paired_matrix, task_matrix

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with ea.open(tmp_path_factory.mktemp("matrix") / "m.duckdb") as s:
        s.ingest(REPO / "examples")
        yield s


def test_the_matrix_holds_the_stored_counts(store) -> None:  # type: ignore[no-untyped-def]
    m = task_matrix(store, "agent", None)
    eps = store.episodes()
    assert sorted(m.names) == sorted(eps["agent_name"].unique())
    assert m.tasks == sorted(eps["task_id"].unique())
    for i, key in enumerate(m.keys):
        mine = eps[eps["agent_id"] == key]
        for j, task in enumerate(m.tasks):
            cell = mine[mine["task_id"] == task]
            known = cell["success"].dropna()
            assert m.episodes[i, j] == len(cell)
            assert m.known[i, j] == len(known)
            assert m.succ[i, j] == int(known.sum())
    rates = m.rates()
    assert np.isnan(rates[m.known == 0]).all()
    assert ((rates >= 0) & (rates <= 1))[m.known > 0].all()


def test_the_paired_matrix_is_the_compare_command(store) -> None:  # type: ignore[no-untyped-def]
    m = task_matrix(store, "agent", None)
    rows = paired_matrix(m, list(range(len(m.keys))), confidence=0.95, alpha=0.05)
    assert len(rows) == len(m.keys) * (len(m.keys) - 1) // 2
    cmp = ea.compare(store, *m.keys)  # agents by id: the same sides
    by_keys = {frozenset((r["a"], r["b"])): r for r in cmp.rows}
    name = dict(zip(m.keys, m.names, strict=True))
    for r in rows:
        c = by_keys[frozenset((name[r["a_key"]], name[r["b_key"]]))]
        sign = 1 if c["a"] == name[r["a_key"]] else -1
        assert r["shared_tasks"] == c["shared_tasks"]
        assert r["diff"] == pytest.approx(sign * c["diff"], abs=1e-12)
        assert r["p"] == pytest.approx(c["p"], rel=1e-12)
        assert r["p_holm"] == pytest.approx(c["p_holm"], rel=1e-12)
        assert r["test"] == c["test"]
        assert r["significant"] == (c["p_holm"] < 0.05 and c["diff"] != 0)
