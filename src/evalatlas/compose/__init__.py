"""Data source -> typed result: the one glue between ``store`` and ``analysis``.

The public API, the report and the CLI call these compositions, so a number is the same
everywhere by construction (docs/architecture.md).
"""
