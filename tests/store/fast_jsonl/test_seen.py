"""The fast path's set of key hashes (store/fast_jsonl/seen.py) against a Python set."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalatlas.store.fast_jsonl import seen as seen_module
from evalatlas.store.fast_jsonl.seen import SeenHashes


@pytest.mark.parametrize("filtered", [False, True])
def test_counts_exactly_the_hashes_added_before(filtered: bool, monkeypatch) -> None:
    """Against a Python set; ``filtered``: with the presence filter made early and small
    (512 bytes, so many absent hashes pass it and present ones share bits): still exact."""
    if filtered:
        monkeypatch.setattr(seen_module, "FILTER_FROM", 5000)
        monkeypatch.setattr(seen_module, "FILTER_BITS", 12)
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
    assert (seen._filter is not None) == filtered


def test_the_filter_rules_out_most_absent_hashes() -> None:
    """Made once the set holds FILTER_FROM hashes (from every block so far, then kept up
    with each add): absent hashes mostly fail it, present ones always pass."""
    rng = np.random.default_rng(3)
    seen = SeenHashes()
    held = rng.integers(0, 2**64 - 1, seen_module.FILTER_FROM + 10, dtype=np.uint64)
    seen.add(held[:1000])
    assert seen._filter is None
    seen.add(held[1000:])
    assert seen._filter is not None
    later = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64)
    seen.add(later)
    byte, bit = seen_module._slots(np.concatenate([held, later]))
    assert ((seen._filter[byte] >> bit) & 1).all()
    absent = rng.integers(0, 2**64 - 1, 20_000, dtype=np.uint64)
    byte, bit = seen_module._slots(absent)
    assert ((seen._filter[byte] >> bit) & 1).mean() < 0.02  # ~1M of 2**27 bits set
    assert seen.count(np.concatenate([absent, held[::1000], later[:7]])) == 1049 + 7


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
