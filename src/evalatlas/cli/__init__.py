"""evalatlas.cli."""
