"""Argument checks shared by the statistics (one module below all of them, so that
``standard_errors``, ``bootstrap``, ``bounded`` and ``paired`` import it without importing
each other in a circle)."""

from __future__ import annotations


def check_confidence(confidence: float) -> None:
    """ValueError unless ``0 < confidence < 1`` (0.95, not 95)."""
    if not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a fraction in (0, 1), e.g. 0.95; got {confidence!r}")
