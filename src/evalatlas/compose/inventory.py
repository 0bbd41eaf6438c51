"""What the store holds, composed once for ``ea.agents`` and ``evalatlas agents`` (store ->
:func:`evalatlas.store.inventory.inventory_rows` -> :class:`InventoryResult`)."""

from __future__ import annotations

from evalatlas.analysis.inventory import InventoryResult, inventory_result
from evalatlas.store.db import StoreConnection
from evalatlas.store.inventory import inventory_rows
from evalatlas.store.selection import experiments_of


def inventory_of(store: StoreConnection, what: str = "agents", *, experiment: object = None,
                 agent: object = None, benchmark: object = None) -> InventoryResult:
    """One row per agent, experiment or benchmark (``what``) of the experiments every
    given selector keeps."""
    ids = experiments_of(store, experiment=experiment, agent=agent, benchmark=benchmark)
    return inventory_result(inventory_rows(store, what, ids), what)
