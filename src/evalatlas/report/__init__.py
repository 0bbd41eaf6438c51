"""evalatlas.report."""
