"""``evalatlas serve``: the store behind a small HTTP API (FastAPI on uvicorn).

Submissions arrive over HTTP, are spooled to disk (:mod:`.spool`), and are ingested one
at a time, each in one transaction, by the single writer (:mod:`.writer`); reads
(leaderboard, compare, matrix, atlas, report) run in threads on cursors of the same
DuckDB instance and call the same API functions as the CLI (:mod:`.routes`). Tokens
(:mod:`.auth`), limits and the rate limiter (:mod:`.limits`), Prometheus counters
(:mod:`.metrics`) and the JSON access log (:mod:`.accesslog`) are small modules of their
own; :mod:`.app` assembles them, :mod:`.run` runs uvicorn with the shutdown this service
needs, and :mod:`.client` is ``ea.Client`` and ``evalatlas submit``.

Needs ``pip install 'evalatlas[serve]'``; see docs/serve.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalatlas.lazy_names import lazy_attributes

if TYPE_CHECKING:
    from .client import Client, ServerError

__all__ = ["Client", "ServerError", "add_token", "parse_rate", "parse_size", "revoke_token",
           "run_server", "store_name", "token_rows"]


def _require() -> None:
    from evalatlas.extras import require

    require("fastapi", "serve", "evalatlas serve")
    require("uvicorn", "serve", "evalatlas serve")


def _tokens(db: str | Path | None) -> Any:
    from evalatlas.store.db import resolve_db_path
    from evalatlas.store.tokens import TokenFile, tokens_path

    return TokenFile(tokens_path(resolve_db_path(db)))


def store_name(db: str | Path | None) -> str:
    """The store as evalatlas prints it: the file, or a lake's location with any
    password redacted."""
    from evalatlas.store.db import resolve_db_path

    return str(resolve_db_path(db))


def add_token(db: str | Path | None, name: str, role: str) -> str:
    """Create a token of ``role`` (submitter, reader, admin) for ``name`` beside store
    ``db`` and return it: the only time it is shown (only its hash is kept)."""
    from .auth import add_token as _add

    return _add(_tokens(db), name, role)


def token_rows(db: str | Path | None) -> list[dict[str, Any]]:
    """Name, role, created and last used of every token of store ``db`` (never a token)."""
    return _tokens(db).rows()


def revoke_token(db: str | Path | None, name: str) -> bool:
    """Revoke the token ``name`` (False when there is none); refused from the server's
    next request on."""
    return _tokens(db).revoke(name)


def parse_size(text: str, what: str = "size") -> int:
    """``"1GiB"`` -> bytes (:func:`evalatlas.serve.limits.parse_size`)."""
    from .limits import parse_size as _parse

    return _parse(text, what)


def parse_rate(text: str) -> tuple[int, float] | None:
    """``"60/min"`` -> (60, 60.0); ``"off"`` -> None."""
    from .limits import parse_rate as _parse

    return _parse(text)


def run_server(db: str | Path | None, *, host: str = "127.0.0.1", port: int = 8765,
               public_read: bool = False, max_upload_bytes: int = 1 << 30,
               max_file_bytes: int = 4 << 30, rate_limit: tuple[int, float] | None = (60, 60.0),
               spool: str | Path | None = None, access_log: str | Path | None = None,
               workers: int = 1) -> None:
    """Serve store ``db`` until SIGTERM/SIGINT (drains, then returns). Needs
    ``evalatlas[serve]``. ``workers``: on a lake, the processes that stage submissions
    in parallel (docs/serve.md); a ``.duckdb`` store has one writer: 1."""
    _require()
    from evalatlas.errors import ArgumentError
    from evalatlas.store.db import resolve_db_path, resolve_location

    from .app import ServeConfig
    from .run import serve

    location = resolve_location(db)  # a lake's password stays in it (never printed)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ArgumentError(f"workers: a number of processes, at least 1 (got {workers!r})")
    if workers != 1 and not location.startswith("ducklake:"):
        raise ArgumentError(
            f"workers: a .duckdb store has one writing process, so workers must be 1 (got "
            f"{workers}); requests are still served concurrently, and a lake "
            "(ducklake:...) stages submissions in several worker processes")
    config = ServeConfig(db=location if location.startswith("ducklake:")
                         else str(resolve_db_path(db)), public_read=public_read,
                         max_upload_bytes=max_upload_bytes, max_file_bytes=max_file_bytes,
                         rate_limit=rate_limit, spool=str(spool) if spool else None,
                         access_log=str(access_log) if access_log else None,
                         workers=workers)
    serve(config, host=host, port=port)


__getattr__, __dir__ = lazy_attributes(
    globals(), {"Client": "evalatlas.serve.client", "ServerError": "evalatlas.serve.client"})
