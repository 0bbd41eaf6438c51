"""evalatlas.store."""
