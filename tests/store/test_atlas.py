"""store/atlas.py: the response matrix's cells aggregated in DuckDB
(matrix_cells -> atlas.matrix.matrix_from_store_cells) equal build_matrix over the
episodes frame: agents, names, descriptions, items and their order, cells, coverage,
drift rows, episodes used and unknown, on the demo and real fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evalatlas as ea
from evalatlas.atlas.errors import AtlasError, DriftError
from evalatlas.atlas.matrix import ResponseMatrix, build_matrix, matrix_from_store_cells
from evalatlas.store import frames
from evalatlas.store.atlas import matrix_cells, matrix_episodes
from evalatlas.store.db import StoreConnection

REPO = Path(__file__).resolve().parents[2]
FIELDS = ("agent_ids", "agent_names", "agent_descriptions", "item_benchmark",
          "item_task_id", "item_hash", "coverage", "drift", "episodes_used",
          "episodes_unknown_outcome")


def _frame(store: StoreConnection, bench: list[str] | None) -> Any:
    """matrix_episodes, which must come in its ORDER BY order whatever DuckDB's Arrow
    export does (checked here, not re-sorted: the matrix's order follows the rows)."""
    frame = matrix_episodes(store, bench)
    assert _in_order(frame)
    return frame


def _in_order(frame: Any) -> bool:
    """The rows are in matrix_episodes' ORDER BY order (NULLs last, as DuckDB's)."""
    keys = ("agent_id", "benchmark", "task_id", "task_version_hash", "trajectory_id")
    return frame.sort_by([(k, "ascending") for k in keys]).equals(frame)


def test_matrix_episodes_come_in_order_from_many_batches(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """400,000 episodes of 60 experiments in scrambled order, read in 8 Arrow batches, the
    sort spread over threads: the rows come back in ORDER BY order, within each cell by
    trajectory_id, without a second sort in Python."""
    monkeypatch.setattr(frames, "ARROW_BATCH_ROWS", 50_000)
    with ea.open(tmp_path / "s.duckdb") as store:
        store.con.execute("SET threads = 4")
        store.con.execute("""
            INSERT INTO episodes (experiment_id, trajectory_id, task_id, task_version_hash,
                                  success)
            SELECT 'exp-' || (hash(i) % 60)::VARCHAR, 'ep-' || (hash(i * 11) % 1000003)::VARCHAR
                   || '-' || i::VARCHAR, 'task-' || (hash(i * 7) % 3000)::VARCHAR,
                   CASE WHEN i % 97 = 0 THEN NULL ELSE 'v' || (i % 2)::VARCHAR END,
                   hash(i * 5) % 2 = 0
            FROM range(400000) t(i)""")
        store.con.execute("INSERT INTO experiments (experiment_id, agent_id, agent_name, "
                          "benchmark_name) SELECT 'exp-' || i::VARCHAR, 'agent-' || "
                          "(i % 17)::VARCHAR, 'Agent ' || i::VARCHAR, 'bench-' || "
                          "(i % 3)::VARCHAR FROM range(50) t(i)")  # 10 without a record
        frame = matrix_episodes(store, None)
        assert frame.num_rows == 400000 and len(frame.to_batches()) > 1
        assert _in_order(frame)
        assert frame.column("agent_id")[0].as_py().startswith("?exp-")
        # build_matrix names an agent after its first episode in this order
        first = frame.slice(0, 1).to_pylist()[0]
        assert build_matrix(frame).agent_names[0] == first["agent_name"]


def _same(a: ResponseMatrix, b: ResponseMatrix) -> None:
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    for f in ("agent", "item", "k", "n"):
        assert np.array_equal(getattr(a.cells, f), getattr(b.cells, f)), f
    assert (a.cells.n_agents, a.cells.n_items) == (b.cells.n_agents, b.cells.n_items)


@pytest.mark.parametrize("folder", ["demo", "swebench-verified", "terminal-bench",
                                    "frameworks", "swebench-pro"])
def test_store_cells_equal_build_matrix(tmp_path: Path, fixtures: Path, folder: str) -> None:
    with ea.open(tmp_path / "s.duckdb") as store:
        store.ingest(REPO / "examples" if folder == "demo" else fixtures / folder)
        for cell in ("success", "reward"):
            for drift in ("split", "merge"):
                old = build_matrix(_frame(store, None), cell=cell, drift=drift)
                new = matrix_from_store_cells(matrix_cells(store, None, cell, drift),
                                              cell=cell, drift=drift)
                assert old.n_agents > 0
                _same(old, new)
        bench = [store.query("SELECT min(benchmark_name) AS b FROM experiments")[0]["b"]]
        _same(build_matrix(_frame(store, bench)),
              matrix_from_store_cells(matrix_cells(store, bench, "success", "split")))
        empty = matrix_from_store_cells(matrix_cells(store, [], "success", "split"))
        assert empty.n_agents == 0 and empty.episodes_used == 0


def _edited(tmp_path: Path) -> StoreConnection:
    store = ea.open(tmp_path / "s.duckdb")
    store.ingest(REPO / "examples")
    return store


def test_drifted_tasks_and_names_match(tmp_path: Path) -> None:
    with _edited(tmp_path) as store:
        # one task under a second version for one agent, another task with no version
        store.con.execute("""UPDATE episodes SET task_version_hash = 'v2'
            WHERE task_id = 'toy-003' AND experiment_id = (SELECT min(experiment_id)
                                                           FROM experiments)""")
        store.con.execute("UPDATE episodes SET task_version_hash = NULL "
                          "WHERE task_id = 'toy-004' AND attempt = 0")
        store.con.execute("UPDATE episodes SET success = NULL, reward = NULL "
                          "WHERE task_id = 'toy-005'")
        for drift in ("split", "merge"):
            old = build_matrix(_frame(store, None), drift=drift)
            assert old.drift and old.episodes_unknown_outcome
            _same(old, matrix_from_store_cells(matrix_cells(store, None, "success", drift),
                                               drift=drift))
        with pytest.raises(DriftError):
            matrix_from_store_cells(matrix_cells(store, None, "success", "refuse"),
                                    drift="refuse")


def test_reward_outside_range_is_refused_naming_the_first(tmp_path: Path) -> None:
    with _edited(tmp_path) as store:
        store.con.execute("UPDATE episodes SET reward = 3.5 WHERE task_id = 'toy-007'")
        with pytest.raises(AtlasError) as old:
            build_matrix(_frame(store, None), cell="reward")
        with pytest.raises(AtlasError) as new:
            matrix_from_store_cells(matrix_cells(store, None, "reward", "split"),
                                    cell="reward")
        assert str(new.value) == str(old.value)
        assert "3.5" in str(new.value)


def test_fit_from_a_store_is_the_fit_of_its_frame(tmp_path: Path) -> None:
    with _edited(tmp_path) as store:
        via_store = ea.atlas.fit(store, model="1pl", seed=3).to_dict()
        via_frame = ea.atlas.fit(_frame(store, None), model="1pl", seed=3).to_dict()
    for d in (via_store, via_frame):
        d["diagnostics"].pop("seconds")
    assert via_store["agents"] and via_store == via_frame


def test_agent_named_after_its_first_episode_across_experiments(tmp_path: Path) -> None:
    """An agent with several experiments (different names and descriptions, one on
    another benchmark with no known outcome) is named after the experiment of its first
    used episode in (benchmark, task, version, trajectory) order, NULL versions last, and
    described by the first non-empty description in that order; both matrix builders."""
    with ea.open(tmp_path / "s.duckdb") as store:
        store.con.execute("""
            INSERT INTO experiments (experiment_id, agent_id, agent_name, benchmark_name,
                                     agent)
            VALUES ('e1', 'A', 'A-one', 'b', '{"description": ""}'),
                   ('e2', 'A', 'A-two', 'b', '{"description": "second"}'),
                   ('e3', 'A', 'A-three', 'a', '{"description": "never used"}'),
                   ('e4', 'A', 'A-four', 'b', NULL),
                   ('e5', 'B', 'B-one', 'b', NULL),
                   ('e6', 'B', 'B-two', 'b', '{"description": "late"}')""")
        store.con.execute("""
            INSERT INTO episodes (experiment_id, trajectory_id, task_id, task_version_hash,
                                  success)
            VALUES ('e1', 'x1', 't2', 'v1', true), ('e1', 'x2', 't3', 'v1', false),
                   ('e2', 'y1', 't1', NULL, true), ('e2', 'y2', 't1', 'v1', false),
                   ('e2', 'b0', 't1', 'v1', NULL),
                   ('e3', 'z1', 't0', 'v1', NULL),
                   ('e4', 'w9', 't1', 'v1', true), ('e4', 'aa', 't1', 'v1', false),
                   ('e5', 'q1', 't5', 'v1', true), ('e6', 'q0', 't6', 'v1', false),
                   ('orphan', 'o1', 't1', 'v1', true)""")
        for drift in ("split", "merge"):
            old = build_matrix(_frame(store, None), drift=drift)
            new = matrix_from_store_cells(matrix_cells(store, None, "success", drift),
                                          drift=drift)
            _same(old, new)
        assert new.agent_ids == ["?orphan", "A", "B"]
        assert new.agent_names == ["(no experiment record)", "A-four", "B-one"]
        assert new.agent_descriptions == [None, "second", "late"]
        split = matrix_from_store_cells(matrix_cells(store, None, "success", "split"))
        assert [(r["agent_id"], r["benchmark"], r["tasks_run"]) for r in split.coverage] == [
            ("?orphan", "(unknown)", 1), ("A", "b", 3), ("B", "b", 2)]
        assert [r["task_id"] for r in split.drift] == ["t1"]
