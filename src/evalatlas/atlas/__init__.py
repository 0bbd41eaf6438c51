"""evalatlas.atlas."""
