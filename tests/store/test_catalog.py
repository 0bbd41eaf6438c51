"""store/catalog.py: the experiment catalog without the distinct-task count (what the
summary reads) is the full catalog with ``tasks`` None."""

from __future__ import annotations

from pathlib import Path

import evalatlas as ea
from evalatlas.store.catalog import experiment_catalog

REPO = Path(__file__).resolve().parents[2]


def test_catalog_without_task_counts(tmp_path: Path, fixtures: Path) -> None:
    with ea.open(tmp_path / "s.duckdb") as store:
        store.ingest(REPO / "examples", fixtures / "terminal-bench")
        full = experiment_catalog(store)
        light = experiment_catalog(store, tasks=False)
    assert len(full) == len(light) >= 3
    assert all(r["tasks"] > 0 for r in full) and all(r["tasks"] is None for r in light)
    assert [{**r, "tasks": None} for r in full] == light
