"""evalatlas.metrics."""
