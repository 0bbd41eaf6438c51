"""The access log: one JSON line per request.

Fields: time, request id, method, path, status, bytes received and sent, duration and
the token's *name*; for a submission staged on a lake, ``stage``: the worker process
and when its staging started and ended (Unix seconds). Never the query string (names
could be pasted secrets), a token, the ``Authorization`` header or a body; the path is
redacted like every stored text.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
import threading
from pathlib import Path
from typing import IO, Any

from evalatlas.records.redact import redact_text


class AccessLog:
    """Writes lines to a file (appended) or to standard error."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        self._fh: IO[str] = (Path(path).open("a", encoding="utf-8", buffering=1)  # noqa: SIM115
                             if path else sys.stderr)
        self._own = path is not None

    def write(self, *, request_id: str, method: str, path: str, status: int,
              received: int, sent: int, seconds: float, token: str | None,
              error: str | None = None, stage: dict[str, Any] | None = None) -> None:
        entry: dict[str, Any] = {
            "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
            "request_id": request_id, "method": method, "path": redact_text(path)[:500],
            "status": status, "bytes_in": received, "bytes_out": sent,
            "duration_ms": round(seconds * 1000, 2), "token": token}
        if error:
            entry["error"] = redact_text(error)[:1000]
        if stage:  # a submission staged on a lake: which worker, from when to when
            entry["stage"] = stage
        line = json.dumps(entry, ensure_ascii=True)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        if self._own:
            self._fh.close()
