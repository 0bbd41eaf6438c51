"""Uncertainty: standard errors, intervals, paired tests, power."""

from evalatlas.stats.intervals import wilson_interval

__all__ = ["wilson_interval"]
