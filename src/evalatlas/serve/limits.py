"""Sizes and rates given on the command line, and the per-client rate limiter."""

from __future__ import annotations

import re
import threading
import time

from evalatlas.errors import ArgumentError

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0,
            "h": 3600.0, "hour": 3600.0}


def parse_size(text: str, what: str = "size") -> int:
    """``"1GiB"``, ``"500MB"``, ``"1048576"`` -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNITS:
        raise ArgumentError(f"{what} must be a size such as 1GiB, 500MB or 1048576, "
                            f"got {text!r}")
    value = int(float(m.group(1)) * _UNITS[unit])
    if value <= 0:
        raise ArgumentError(f"{what} must be more than 0 bytes, got {text!r}")
    return value


def parse_rate(text: str) -> tuple[int, float] | None:
    """``"60/min"`` -> (60, 60.0): at most 60 requests per 60 s; ``"0"`` or ``"off"``:
    no limit (None)."""
    if str(text).strip().lower() in ("0", "off", "none"):
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*([a-z]+)\s*", str(text).lower())
    if not m or m.group(2) not in _PERIODS or int(m.group(1)) <= 0:
        raise ArgumentError(f"rate_limit must be N/s, N/min or N/hour (or off), got {text!r}")
    return int(m.group(1)), _PERIODS[m.group(2)]


class RateLimiter:
    """A token bucket per client key (a token's hash, else the client address): ``n``
    requests per ``period`` seconds, refilled continuously, bursts up to ``n``."""

    def __init__(self, n: int, period: float) -> None:
        self.capacity = float(n)
        self.rate = n / period
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when the request may go ahead, else seconds until it may (Retry-After)."""
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.get(key, (self.capacity, now))
            level = min(self.capacity, level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            if len(self._buckets) > 100_000:  # forget idle clients (full buckets)
                self._buckets = {k: v for k, v in self._buckets.items()
                                 if v[0] + (now - v[1]) * self.rate < self.capacity}
            return (1.0 - level) / self.rate
