"""A disk cache for judge responses, so re-running a report never pays for a call twice.

The key is the SHA-256 of the canonical JSON of everything that can change the answer:
model, messages, sampling parameters and the validator's name (a stricter validator must
not reuse an answer the old one accepted). Only validated answers are stored, so a
transient failure is retried next time instead of being replayed. One JSON file per key
under ``<dir>/<key[:2]>/<key>.json``, written atomically; a corrupt file is a miss.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evalatlas.records.jsonio import atomic_write_text, dumps

DEFAULT_CACHE_DIR = Path(".evalatlas-cache") / "judge"


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 hex of the payload as sorted-key JSON."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Validated judge answers on disk. ``None`` as directory disables caching."""

    def __init__(self, directory: Path | str | None = DEFAULT_CACHE_DIR) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(value, dict):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        if self.directory is None:
            return
        atomic_write_text(self._path(key), dumps(value))
