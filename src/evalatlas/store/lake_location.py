"""Where a store lives: a DuckDB file, ``:memory:``, or a DuckLake (issue 23).

A DuckLake location is ``ducklake:postgres:<libpq string>`` (a PostgreSQL catalog that
many machines write at once) or ``ducklake:<path>`` (a DuckDB-file catalog, one machine;
``<path>.ducklake`` by convention). Pure parsing, no DuckDB: the CLI and the API call
it to decide which store to open before anything is imported.

Passwords: the location string may hold one (``password=...`` in a libpq string, or
``postgresql://user:pw@host`` as a libpq URI). :attr:`LakeLocation.display` is the one
string evalatlas ever prints, logs or stores for a lake; it goes through the one
redaction function (:func:`evalatlas.records.redact.redact_text`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from evalatlas.errors import ArgumentError
from evalatlas.records.redact import redact_text

PREFIX = "ducklake:"
POSTGRES = "postgres:"
ENV_DATA_PATH = "EVALATLAS_DATA_PATH"
"""Where a new lake's Parquet data files go when ``data_path`` is not given."""

_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def is_lake(location: object) -> bool:
    """Whether ``location`` (a ``--db`` value, ``$EVALATLAS_DB``) names a DuckLake."""
    return isinstance(location, str | os.PathLike) and str(location).startswith(PREFIX)


def libpq_pairs(conninfo: str) -> dict[str, str]:
    """The ``key=value`` pairs of a libpq connection string (quoted values unquoted), or
    of a ``postgresql://user:pw@host:port/dbname`` URI. Used for messages (host, port)
    only: the string itself goes to libpq unchanged."""
    text = conninfo.strip()
    if text.startswith(("postgresql://", "postgres://")):
        m = re.match(r"postgres(?:ql)?://(?:([^:@/]*)(?::[^@/]*)?@)?([^:/?]*)(?::(\d+))?"
                     r"(?:/([^?]*))?", text)
        out: dict[str, str] = {}
        if m:
            for key, value in zip(("user", "host", "port", "dbname"), m.groups(), strict=True):
                if value:
                    out[key] = value
        return out
    pairs = {}
    for m in _PAIR.finditer(text):
        value = m.group(2)
        if value.startswith("'") and value.endswith("'") and len(value) >= 2:
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        pairs[m.group(1).lower()] = value
    return pairs


@dataclass(frozen=True)
class LakeLocation:
    """A parsed ``ducklake:`` location. ``catalog``: the libpq string (``postgres``) or
    the catalog file (``file``); ``data_path``: the folder for new Parquet files, None
    to use the one the catalog remembers (required when the catalog is created, except
    for a file catalog, whose default is DuckLake's ``<catalog>.files/``)."""

    kind: str
    catalog: str = field(repr=False)
    data_path: str | None = None

    @classmethod
    def parse(cls, location: str | os.PathLike[str], data_path: str | os.PathLike[str] |
              None = None) -> LakeLocation:
        """Parse ``ducklake:postgres:<libpq>`` or ``ducklake:<path>``; ``data_path``
        falls back to ``$EVALATLAS_DATA_PATH``. An ArgumentError names what is accepted."""
        text = str(location)
        if not text.startswith(PREFIX):
            raise ArgumentError(f"a lake location starts with {PREFIX!r}, got "
                                f"{redact_text(text)!r}")
        rest = text[len(PREFIX):]
        data = data_path if data_path not in (None, "") else os.environ.get(ENV_DATA_PATH)
        data_text = str(data) if data not in (None, "") else None
        if rest.startswith(POSTGRES):
            conninfo = rest[len(POSTGRES):].strip()
            if not conninfo:
                raise ArgumentError("location: ducklake:postgres: needs a libpq connection "
                                    "string, e.g. 'ducklake:postgres:dbname=atlas "
                                    "host=db.internal user=eval'")
            return cls("postgres", conninfo, data_text)
        m = re.match(r"([a-z]+):", rest)
        if m and m.group(1) in ("sqlite", "mysql", "duckdb"):
            raise ArgumentError(f"location: ducklake:{m.group(1)}: catalogs are not supported; "
                                "use ducklake:postgres:<libpq string> or ducklake:<path>."
                                "ducklake (a local catalog file)")
        if not rest.strip():
            raise ArgumentError("location: ducklake: needs a catalog, either "
                                "ducklake:postgres:<libpq string> or ducklake:<path>.ducklake")
        return cls("file", rest, data_text)

    @property
    def display(self) -> str:
        """The location as evalatlas prints and stores it: passwords redacted."""
        catalog = self.catalog if self.kind == "file" else f"postgres:{self.catalog}"
        return redact_text(PREFIX + catalog)

    def _host_port(self) -> tuple[str, str]:
        """The catalog's host and port as written, with libpq's defaults (``$PGHOST``
        else localhost, ``$PGPORT`` else 5432)."""
        pairs = libpq_pairs(self.catalog)
        host = pairs.get("host") or pairs.get("hostaddr") or os.environ.get("PGHOST") \
            or "localhost"
        return host, pairs.get("port") or os.environ.get("PGPORT") or "5432"

    @property
    def endpoint(self) -> tuple[str, int] | None:
        """``(host, port)`` a PostgreSQL catalog is reached at (the first of a libpq
        multi-host list); a host starting with ``/`` is a Unix-socket folder. None for a
        file catalog or a port that is not a number."""
        if self.kind == "file":
            return None
        host, port = self._host_port()
        try:
            return host.split(",")[0], int(port.split(",")[0])
        except ValueError:
            return None

    @property
    def server(self) -> str:
        """``host:port`` of a PostgreSQL catalog (libpq's defaults: ``$PGHOST`` else
        localhost, ``$PGPORT`` else 5432), for error messages; the file for a file
        catalog."""
        if self.kind == "file":
            return self.catalog
        host, port = self._host_port()
        return redact_text(f"{host}:{port}")

    def catalog_exists(self) -> bool | None:
        """Whether a file catalog exists (None for PostgreSQL: asked of the server)."""
        return Path(self.catalog).exists() if self.kind == "file" else None


def local_file(location: str) -> Path | None:
    """The local file a store location names: the DuckDB file itself, or a lake's
    catalog file (``ducklake:<path>``); None for a PostgreSQL catalog (nothing local).
    Sidecar files (``evalatlas serve``'s tokens and spool) live beside it."""
    text = str(location)
    if not text.startswith(PREFIX):
        return Path(text)
    try:
        loc = LakeLocation.parse(text)
    except ArgumentError:
        return None
    return Path(loc.catalog) if loc.kind == "file" else None
