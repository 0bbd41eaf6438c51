"""Errors of the atlas package (part of the :class:`~evalatlas.errors.EvalAtlasError` family)."""

from __future__ import annotations

from typing import Any

from evalatlas.errors import EvalAtlasError


class AtlasError(EvalAtlasError):
    """The matrix cannot be built or fitted as asked (bad options, bad cells)."""


class DriftError(AtlasError):
    """``--drift refuse`` and some task ran under more than one ``task_version_hash``."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        listing = "; ".join(
            f"{r['benchmark']}/{r['task_id']}: "
            + ", ".join(f"{h['task_version_hash'] or 'null'} ({len(h['agents'])} agents)"
                        for h in r["hashes"])
            for r in rows[:20])
        more = f" (+{len(rows) - 20} more)" if len(rows) > 20 else ""
        super().__init__(f"{len(rows)} task(s) changed version (task_version_hash) between "
                         f"runs: {listing}{more}; use --drift split to fit each version as "
                         "its own item")
