"""evalatlas.codequality."""
