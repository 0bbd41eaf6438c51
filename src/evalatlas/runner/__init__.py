"""evalatlas.runner."""
