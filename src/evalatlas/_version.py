"""The package version (a module of its own so anything can import it cheaply)."""

__version__ = "0.1.0"
