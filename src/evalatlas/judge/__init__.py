"""evalatlas.judge."""
