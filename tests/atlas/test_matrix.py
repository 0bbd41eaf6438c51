"""The sparse response matrix: binomial cells, reward cells, drift, dense limit."""

from __future__ import annotations

import numpy as np
import pytest

from evalatlas.atlas.errors import AtlasError, DriftError
from evalatlas.atlas.matrix import build_matrix, find_drift


def _frame(rows: list[tuple]) -> dict:
    keys = ("agent_id", "agent_name", "benchmark", "n_tasks", "task_id",
            "task_version_hash", "success", "reward")
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


ROWS = [
    ("a1", "A", "b", 3, "t1", "h1", True, 1.0),
    ("a1", "A", "b", 3, "t1", "h1", False, 0.0),
    ("a1", "A", "b", 3, "t1", "h1", True, 0.5),
    ("a1", "A", "b", 3, "t2", "h1", None, None),  # unknown outcome: left out
    ("a2", "B", "b", 3, "t1", "h2", False, 0.0),  # t1 changed version
    ("a2", "B", "b", 3, "t2", "h1", True, 0.25),
]


def test_attempts_become_k_of_n_not_a_mean() -> None:
    m = build_matrix(_frame(ROWS))
    cells = {(m.agent_names[a], m.item_task_id[j], m.item_hash[j]): (k, n) for a, j, k, n in
             zip(m.cells.agent, m.cells.item, m.cells.k, m.cells.n, strict=True)}
    assert cells[("A", "t1", "h1")] == (2.0, 3.0)
    assert ("A", "t2", "h1") not in cells
    assert m.episodes_unknown_outcome == 1 and m.episodes_used == 5
    assert m.n_items == 3  # (t1,h1), (t1,h2), (t2,h1)
    cov = {r["agent"]: r for r in m.coverage}
    assert cov["A"]["tasks_run"] == 1 and cov["A"]["n_tasks"] == 3


def test_a_pandas_frame_with_nullable_and_arrow_columns_is_the_same_matrix() -> None:
    """``store.episodes()`` gives nullable ``boolean`` / Arrow text columns, whose missing
    value is ``<NA>`` (``bool(<NA>)`` raised TypeError)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(_frame(ROWS))
    frame["success"] = frame["success"].astype("boolean")
    frame["task_version_hash"] = frame["task_version_hash"].astype(pd.StringDtype("pyarrow"))
    frame["n_tasks"] = frame["n_tasks"].astype("Int64")
    for cell in ("success", "reward"):
        m, want = build_matrix(frame, cell=cell), build_matrix(_frame(ROWS), cell=cell)
        assert m.episodes_unknown_outcome == want.episodes_unknown_outcome == 1
        assert m.cells.k.tolist() == want.cells.k.tolist()
        assert m.cells.n.tolist() == want.cells.n.tolist()


def test_reward_cells_sum_rewards_and_refuse_out_of_range() -> None:
    m = build_matrix(_frame(ROWS), cell="reward")
    a = m.agent_names.index("A")
    k = m.cells.k[m.cells.agent == a]
    assert k.tolist() == [1.5]
    bad = [*ROWS, ("a3", "C", "b", 3, "t1", "h1", True, 3.0)]
    with pytest.raises(AtlasError, match="outside \\[0, 1\\]"):
        build_matrix(_frame(bad), cell="reward")


def test_drift_split_merge_refuse() -> None:
    m = build_matrix(_frame(ROWS))
    assert m.drift == [{"benchmark": "b", "task_id": "t1", "hashes": [
        {"task_version_hash": "h1", "agents": ["A"]},
        {"task_version_hash": "h2", "agents": ["B"]}]}]
    merged = build_matrix(_frame(ROWS), drift="merge")
    assert merged.n_items == 2 and set(merged.item_hash) == {None}
    with pytest.raises(DriftError, match="t1") as exc:
        build_matrix(_frame(ROWS), drift="refuse")
    assert exc.value.rows == m.drift
    # a missing hash is a version of its own (cannot be shown to be the same)
    assert find_drift(["b", "b"], ["t", "t"], ["h", None], ["x", "y"])[0]["hashes"][1] == {
        "task_version_hash": None, "agents": ["y"]}


def test_dense_only_below_limit() -> None:
    m = build_matrix(_frame(ROWS))
    d = m.dense()
    assert d.shape == (2, 3) and np.isnan(d).sum() == 3
    with pytest.raises(AtlasError, match="over the limit"):
        m.dense(limit=5)


def test_benchmark_filter_and_long_rows() -> None:
    rows = [*ROWS, ("a1", "A", "other", 10, "x", None, True, 1.0)]
    m = build_matrix(_frame(rows), benchmark=["other"])
    assert m.n_items == 1 and m.item_benchmark == ["other"]
    long = list(m.long_rows())
    assert long == [{"agent": "A", "agent_id": "a1", "benchmark": "other", "task_id": "x",
                     "task_version_hash": None, "cell": "success", "k": 1.0, "n": 1.0,
                     "value": 1.0}]


def test_store_frame_column_names_accepted() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"agent_id": ["a", "b"], "agent_name": ["A", "B"],
                          "benchmark_name": ["bench", "bench"], "task_id": ["t", "t"],
                          "task_version_hash": [None, None], "success": [True, False],
                          "reward": [1.0, 0.0]})
    m = build_matrix(frame)
    assert m.item_benchmark == ["bench"] and m.n_agents == 2
    assert m.coverage[0]["n_tasks"] is None
