"""The episode keys one input has used so far, as 64-bit hashes, for the fast path's
cross-chunk duplicate check.

Why not a join against the table of every hash so far (``_fast_seen``, which the exact
path still uses to name the earlier line): that join costs O(keys seen) per chunk, so
O(n^2) over a file; measured ~0.2 s CPU per 61,440-line chunk once 10M keys were seen
(duckdb 1.5.5, loaded machine), on the committing thread. Here the hashes are kept in
sorted numpy blocks that merge like a binary counter (a block merges into the one before
it while that one is not larger, up to :data:`MAX_MERGED` hashes), so there are at most
~log2(n / chunk) + n / MAX_MERGED blocks: a chunk's
check is a sorted search in each (~14 ms for 61,440 keys against 10M, same machine), and
each key is merged ~log2(n / chunk) times, by a stable sort of two sorted runs (a linear
merge, in place), at 8 bytes a key (80 MB at 10M keys; a merge briefly holds up to
:data:`MAX_MERGED` x 16 bytes more).

Once the set holds :data:`FILTER_FROM` hashes, a bit per hash's top
:data:`FILTER_BITS` bits (a one-hash Bloom filter, 16 MB) rules most of a chunk's keys
out before the search: the searches grew with the set, from ~4 ms per chunk at 1M keys
to ~22-26 ms at 10M (the one per-chunk cost of a 10M-episode ingest that grew with it,
BENCHMARKS.md, jsonl6), and with the filter ~5 ms at 10M (a gather of 61,440 bits and
the search of the ~7% it lets through).

A false positive (a hash collision, or the keys of a group whose write was rolled back)
only sends a chunk to the exact path, which decides with the stored keys; there is no
false negative as long as every key stored from the input is added.
"""

from __future__ import annotations

import numpy as np


def _dedupe_sorted(x: np.ndarray) -> np.ndarray:
    """``x`` (sorted) with each value once (``x`` itself when it has no repeats)."""
    if x.size < 2:
        return x
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x if keep.all() else x[keep]


MAX_MERGED = 1 << 22
"""Blocks are not merged beyond this many hashes (32 MB): a merge holds both blocks and
their union at once, which uncapped would be ~160 MB (8M keys) near the end of a
10M-episode file, where the ingest's memory peaks anyway (peak RSS measured 1,156 MB at
10M episodes with uncapped merges, close to the 1.2 GB bound). At 10M keys this leaves
~3 full blocks plus the binary counter's smaller ones to search."""


FILTER_BITS = 27
"""The filter has 2**FILTER_BITS bits (16 MB): at 10M keys ~7% of absent keys pass it."""

FILTER_FROM = 1 << 20
"""Hashes held before the filter is made: below, the searches cost ~4 ms a chunk or less,
and a small file's ingest needs no 16 MB filter whose pages its few keys would touch."""


def _slots(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each hash's filter byte and bit (from its top :data:`FILTER_BITS` bits: sorted
    hashes give sorted bytes)."""
    top = h >> np.uint64(64 - FILTER_BITS)
    return (top >> np.uint64(3)).astype(np.intp), (top & np.uint64(7)).astype(np.uint8)


class SeenHashes:
    """A set of uint64 key hashes: :meth:`count` how many of a chunk's hashes are in it,
    :meth:`add` a chunk's hashes."""

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []
        self._filter: np.ndarray | None = None
        """Bit ``i`` set when some hash held has top bits ``i`` (None: not made yet)."""

    def __len__(self) -> int:
        """Hashes held (one added again before its blocks merged is held twice)."""
        return sum(b.size for b in self._blocks)

    @property
    def n_blocks(self) -> int:
        return len(self._blocks)

    def count(self, hashes: np.ndarray) -> int:
        """How many of ``hashes`` (each occurrence) are in the set."""
        h = np.asarray(hashes, dtype=np.uint64)
        if self._filter is not None and h.size:
            byte, bit = _slots(h)
            h = h[((self._filter[byte] >> bit) & 1).astype(bool)]  # the others are absent
        h = np.sort(h)  # sorted keys search faster
        if h.size == 0:
            return 0
        found = np.zeros(h.size, dtype=bool)
        for block in self._blocks:
            at = np.searchsorted(block, h)
            at[at == block.size] = 0  # past the end: compared with any, cannot match
            found |= block[at] == h
        return int(np.count_nonzero(found))

    def add(self, hashes: np.ndarray) -> None:
        """Add ``hashes`` (each kept once)."""
        h = _dedupe_sorted(np.sort(np.asarray(hashes, dtype=np.uint64)))
        if h.size == 0:
            return
        if self._filter is not None:
            self._mark(h)
        self._blocks.append(h)
        while (len(self._blocks) > 1 and self._blocks[-2].size <= self._blocks[-1].size
               and self._blocks[-2].size + self._blocks[-1].size <= MAX_MERGED):
            last = self._blocks.pop()
            both = np.concatenate([self._blocks[-1], last])
            self._blocks[-1] = both  # the old block is freed before the sort
            both.sort(kind="stable")  # two sorted runs: one linear merge, in place
            self._blocks[-1] = _dedupe_sorted(both)
        if self._filter is None and len(self) >= FILTER_FROM:
            self._filter = np.zeros(1 << (FILTER_BITS - 3), dtype=np.uint8)
            for block in self._blocks:
                self._mark(block)

    def _mark(self, h: np.ndarray) -> None:
        """Set the filter bits of ``h`` (sorted)."""
        assert self._filter is not None
        byte, bit = _slots(h)
        starts = np.flatnonzero(np.concatenate([[True], byte[1:] != byte[:-1]]))
        masks = np.left_shift(np.uint8(1), bit)
        self._filter[byte[starts]] |= np.bitwise_or.reduceat(masks, starts)
