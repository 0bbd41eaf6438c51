"""Framework-comparison runs, composed once for ``ea.framework_data``,
``evalatlas compare-frameworks`` and the report's framework views (store -> experiment
and episode records (:func:`evalatlas.store.frameworks.load_framework_records`) ->
:func:`evalatlas.analysis.frameworks.group_records`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalatlas.analysis.frameworks import FrameworkData, group_records
from evalatlas.store.db import StoreConnection
from evalatlas.store.frameworks import load_framework_records


def framework_data_of(store: StoreConnection, *, scenario: str | None = None,
                      mode: str | None = None, frameworks: Sequence[str] | None = None,
                      scenario_def: Any = None) -> list[FrameworkData]:
    """The store's framework runs grouped per framework x scenario x mode."""
    experiments, episodes = load_framework_records(store, scenario=scenario, mode=mode,
                                                   frameworks=frameworks)
    return group_records(experiments, episodes, scenario=scenario, mode=mode,
                         scenario_def=scenario_def)
