"""Exports that need statistics (above :mod:`evalatlas.analysis`): Every Eval Ever."""
