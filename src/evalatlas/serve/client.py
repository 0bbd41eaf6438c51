"""``ea.Client`` and ``evalatlas submit``: talk to an ``evalatlas serve``.

JSONL is compressed with zstd before upload (agent transcripts shrink several times);
answers 429 and 503 are retried after the server's ``Retry-After`` (capped), a few times.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalatlas.errors import ArgumentError, EvalAtlasError

ENV_TOKEN = "EVALATLAS_TOKEN"
RETRY_STATUSES = (429, 503)


class ServerError(EvalAtlasError):
    """The server answered with an error: ``status`` and its JSON ``body``."""

    def __init__(self, status: int, body: Any, url: str) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        detail = body.get("detail") if isinstance(body, dict) else body
        super().__init__(f"{url}: {status} {error or ''}: {detail}".replace(":  ", ": "))
        self.status = status
        self.body = body


def _retry_after(value: str | None, attempt: int) -> float:
    try:
        return max(0.0, float(value)) if value is not None else min(2.0 ** attempt, 30.0)
    except ValueError:
        return min(2.0 ** attempt, 30.0)


class Client:
    """A client of one ``evalatlas serve``: ``Client("http://host:8765", token)``.

    ``token``: else ``$EVALATLAS_TOKEN``; none for a ``--public-read`` server's reads.
    ``retries``: how often an answer 429/503 is retried, waiting its ``Retry-After``
    (at most ``max_wait`` seconds each). Use as a context manager or call :meth:`close`.
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 600.0,
                 retries: int = 5, max_wait: float = 60.0) -> None:
        from evalatlas.extras import require

        httpx = require("httpx", "serve", "ea.Client")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ArgumentError(f"url must start with http:// or https://, got {url!r}")
        if retries < 0 or max_wait < 0:
            raise ArgumentError("retries and max_wait must be 0 or more")
        token = token if token is not None else os.environ.get(ENV_TOKEN)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.retries = retries
        self.max_wait = max_wait
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:  # never the token
        return f"Client({self.url!r})"

    def _request(self, method: str, path: str, **kw: Any) -> Any:
        body = kw.pop("body_file", None)
        for attempt in range(self.retries + 1):
            if body is not None:
                body.seek(0)
                kw["content"] = body
            response = self._http.request(method, path, **kw)
            if response.status_code in RETRY_STATUSES and attempt < self.retries:
                time.sleep(min(self.max_wait,
                               _retry_after(response.headers.get("retry-after"), attempt)))
                continue
            break
        if response.status_code == 204:
            return None
        try:
            data = response.json()
        except ValueError:
            data = response.text
        if response.status_code >= 400:
            raise ServerError(response.status_code, data, f"{method} {path}")
        return data

    def submit(self, path: str | Path) -> dict[str, Any]:
        """Upload one file; JSONL is zstd-compressed first. Returns the server's answer
        (``submission_id``, counts, problems); raises :class:`ServerError` on 4xx/5xx
        (``.body`` holds the problems of a 422)."""
        path = Path(path)
        if not path.is_file():
            raise ArgumentError(f"path must be a file, got {str(path)!r}")
        name = path.name
        with tempfile.TemporaryDirectory(prefix="evalatlas-submit-") as tmp:
            upload = path
            if name.lower().endswith(".jsonl"):
                import zstandard

                upload = Path(tmp) / (name + ".zst")
                with path.open("rb") as src, upload.open("wb") as dst:
                    zstandard.ZstdCompressor(level=3).copy_stream(src, dst)
                name += ".zst"
            with upload.open("rb") as fh:
                return self._request(
                    "POST", "/v1/submissions", params={"name": name}, body_file=fh,
                    headers={"Content-Type": "application/octet-stream",
                             "Content-Length": str(upload.stat().st_size)})

    def submissions(self) -> dict[str, Any]:
        return self._request("GET", "/v1/submissions")

    def delete(self, submission_id: str) -> None:
        self._request("DELETE", f"/v1/submissions/{submission_id}")

    def leaderboard(self, by: str | Sequence[str] = "agent", *,
                    benchmark: str | Sequence[str] | None = None,
                    experiment: str | Sequence[str] | None = None,
                    agent: str | Sequence[str] | None = None, fresh: bool = False
                    ) -> dict[str, Any]:
        """The ``evalatlas summary --format json`` envelope of the server's store.
        ``fresh``: wait for the answer that includes every write committed before the
        request (after your own submission); otherwise, while the server computes the
        answer to a newer write, the previous one is returned at once (docs/serve.md)."""
        params: dict[str, Any] = {"by": by if isinstance(by, str) else ",".join(by)}
        if fresh:
            params["fresh"] = "true"
        for key, value in (("benchmark", benchmark), ("experiment", experiment),
                           ("agent", agent)):
            if value is not None:
                params[key] = [value] if isinstance(value, str) else list(value)
        return self._request("GET", "/v1/leaderboard", params=params)

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """The ``evalatlas compare A B --format json`` envelope."""
        return self._request("GET", "/v1/compare", params={"a": a, "b": b})

    def matrix(self, benchmark: str | Sequence[str] | None = None) -> dict[str, Any]:
        """Agent x task cells: ``rows`` of agent, task_id, attempts, successes."""
        params = {} if benchmark is None else {
            "benchmark": [benchmark] if isinstance(benchmark, str) else list(benchmark)}
        return self._request("GET", "/v1/matrix", params=params)


__all__ = ["Client", "ServerError"]
