"""evalatlas.adapters."""
