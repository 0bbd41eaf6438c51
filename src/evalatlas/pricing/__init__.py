"""Tokens -> USD. (Placeholder interface; the pricing issue fills it in.)"""

from __future__ import annotations

from evalatlas.records.models import UsageSummary


def fill_missing_cost(usage: UsageSummary, default_model: str | None) -> UsageSummary:
    """Return ``usage`` with ``total_cost_usd`` computed from tokens when it is missing.

    Until price tables exist this returns ``usage`` unchanged (cost stays unknown).
    """
    return usage
