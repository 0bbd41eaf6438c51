"""The fast path's set of key hashes (store/fast_jsonl/seen.py) against a Python set."""

from __future__ import annotations

import math

import numpy as np

from evalatlas.store.fast_jsonl import seen as seen_module
from evalatlas.store.fast_jsonl.seen import SeenHashes


def test_counts_exactly_the_hashes_added_before() -> None:
    rng = np.random.default_rng(7)
    seen = SeenHashes()
    reference: set[int] = set()
    for _ in range(40):
        chunk = rng.integers(0, 2**64 - 1, size=int(rng.integers(0, 3000)), dtype=np.uint64)
        # some hashes of earlier chunks again, some repeated within the chunk, the extremes
        old = np.array(sorted(reference)[:: max(1, len(reference) // 50)][:50], dtype=np.uint64)
        chunk = np.concatenate([chunk, old, chunk[:5], np.array([0, 2**64 - 1], np.uint64)])
        want = sum(int(h) in reference for h in chunk.tolist())
        assert seen.count(chunk) == want
        seen.add(chunk)
        reference.update(chunk.tolist())
        assert len(reference) <= len(seen) <= len(reference) + 55 * 40  # re-added ones
    assert seen.count(np.array([], dtype=np.uint64)) == 0
    absent = np.array([h for h in rng.integers(0, 2**64 - 1, 1000, dtype=np.uint64).tolist()
                       if h not in reference], dtype=np.uint64)
    assert seen.count(absent) == 0


def test_blocks_stay_logarithmic() -> None:
    """Equal chunks merge like a binary counter: at most log2(chunks) + 1 blocks, so a
    chunk's check costs a search in a few sorted arrays, not one per earlier chunk."""
    seen = SeenHashes()
    for i in range(1, 101):
        seen.add(np.arange(i * 1000, i * 1000 + 1000, dtype=np.uint64))
        assert seen.n_blocks <= math.floor(math.log2(i)) + 1
        assert seen.n_blocks == bin(i).count("1")
    assert len(seen) == 100_000
    assert seen.count(np.array([1000, 100_999, 101_000, 999], dtype=np.uint64)) == 2


def test_blocks_stop_merging_at_the_cap(monkeypatch) -> None:
    """Past MAX_MERGED hashes blocks are kept apart (a merge holds both and their union
    at once); lookups still find every hash."""
    monkeypatch.setattr(seen_module, "MAX_MERGED", 4000)
    seen = SeenHashes()
    for i in range(20):
        seen.add(np.arange(i * 1000, i * 1000 + 1000, dtype=np.uint64))
        assert max(b.size for b in seen._blocks) <= 4000
    assert seen.n_blocks >= 5
    assert seen.count(np.arange(0, 21_000, 500, dtype=np.uint64)) == 40
