"""Sizes, rates and the token-bucket rate limiter."""

from __future__ import annotations

import time

import pytest

from evalatlas.errors import ArgumentError
from evalatlas.serve.limits import RateLimiter, parse_rate, parse_size


def test_parse_size():
    assert parse_size("1GiB") == 2**30
    assert parse_size("500MB") == 500 * 10**6
    assert parse_size("1048576") == 2**20
    assert parse_size("1.5kib") == 1536
    for bad in ("", "-1", "0", "1 parsec", "GiB"):
        with pytest.raises(ArgumentError, match="size"):
            parse_size(bad)


def test_parse_rate():
    assert parse_rate("60/min") == (60, 60.0)
    assert parse_rate("5/s") == (5, 1.0)
    assert parse_rate("off") is None and parse_rate("0") is None
    for bad in ("60", "0/min", "5/fortnight"):
        with pytest.raises(ArgumentError, match="rate_limit"):
            parse_rate(bad)


def test_bucket_allows_a_burst_then_says_when_to_retry():
    limiter = RateLimiter(3, 60.0)
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("a")
    assert 19.0 < wait <= 20.0  # one request per 20 s refills
    assert limiter.take("b") == 0.0  # another client's bucket is full


def test_bucket_refills_over_time():
    limiter = RateLimiter(10, 1.0)  # 10 per second
    for _ in range(10):
        limiter.take("k")
    assert limiter.take("k") > 0
    time.sleep(0.25)
    assert limiter.take("k") == 0.0
