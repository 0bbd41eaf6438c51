"""Counters and a latency histogram in the Prometheus text format (``GET /metrics``).

Small on purpose: a handful of series, updated under one lock, rendered on demand; no
client library is needed for the exposition format (version 0.0.4).
"""

from __future__ import annotations

import threading
from collections import Counter

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the request latency histogram."""


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """What the server counts: requests by method, route and status; submissions by
    result; episodes stored and records rejected; request latency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.submissions: Counter[str] = Counter()
        self.episodes = 0
        self.rejected = 0
        self._bucket_counts = [0] * len(BUCKETS)
        self._count = 0
        self._sum = 0.0

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            self._count += 1
            self._sum += seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self._bucket_counts[i] += 1

    def submission(self, result: str, episodes: int = 0, rejected: int = 0) -> None:
        """``result``: created, duplicate, rejected (nothing valid) or failed."""
        with self._lock:
            self.submissions[result] += 1
            self.episodes += episodes
            self.rejected += rejected

    def render(self) -> str:
        with self._lock:
            lines = ["# HELP evalatlas_requests_total HTTP requests answered.",
                     "# TYPE evalatlas_requests_total counter"]
            for (method, route, status), n in sorted(self.requests.items()):
                lines.append(f'evalatlas_requests_total{{method="{_label(method)}",'
                             f'route="{_label(route)}",status="{status}"}} {n}')
            lines += ["# HELP evalatlas_submissions_total Submissions by result.",
                      "# TYPE evalatlas_submissions_total counter"]
            for result in ("created", "duplicate", "rejected", "failed"):
                lines.append(f'evalatlas_submissions_total{{result="{result}"}} '
                             f"{self.submissions[result]}")
            lines += ["# HELP evalatlas_episodes_stored_total Episodes stored by submissions.",
                      "# TYPE evalatlas_episodes_stored_total counter",
                      f"evalatlas_episodes_stored_total {self.episodes}",
                      "# HELP evalatlas_records_rejected_total Records quarantined.",
                      "# TYPE evalatlas_records_rejected_total counter",
                      f"evalatlas_records_rejected_total {self.rejected}",
                      "# HELP evalatlas_request_duration_seconds Request latency.",
                      "# TYPE evalatlas_request_duration_seconds histogram"]
            for bound, n in zip(BUCKETS, self._bucket_counts, strict=True):
                lines.append(f'evalatlas_request_duration_seconds_bucket{{le="{bound}"}} {n}')
            lines += [f'evalatlas_request_duration_seconds_bucket{{le="+Inf"}} {self._count}',
                      f"evalatlas_request_duration_seconds_sum {self._sum:.6f}",
                      f"evalatlas_request_duration_seconds_count {self._count}"]
        return "\n".join(lines) + "\n"
