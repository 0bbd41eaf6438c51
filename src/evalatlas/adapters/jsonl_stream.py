"""JSONL as a stream of bounded chunks: plain, gzip or zstd files, or standard input.

Why: the exact and the fast (DuckDB) path must see the same lines with the same numbers,
and neither may hold more than a chunk in memory. This module cuts any byte stream into
chunks of whole lines (about ``chunk_bytes`` each) while measuring every line: a line
over ``max_line_bytes`` is counted as it streams past, never held, and stands in the
chunk as an empty line with its size recorded, so a 1 GB line costs a few MB of memory.
Plain files are cut at line counts that add up to whole DuckDB row groups, so that the
fast path can commit runs of chunks that write straight into the database file
(:data:`ROW_GROUP_LINES`).

Also here: a UTF-8 byte-order mark at the start of the stream is dropped (the first
record is kept); a last line without a newline is a line; compression is recognised by
its magic bytes (gzip ``1f 8b``, zstd ``28 b5 2f fd``), so ``ingest - < x.jsonl.gz``
works too. zstd needs the optional ``zstandard`` package (``pip install
'evalatlas[zstd]'``); without it a ``.zst`` input is a problem saying so, never a crash.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from evalatlas.records.limits import MiB

STDIN = "-"
"""The path that means standard input."""

DEFAULT_CHUNK_BYTES = 64 * MiB
"""The most a chunk reads. Each chunk costs the fast path ~50 ms of fixed work (query
set-up, a commit), so chunks are as large as memory allows: at ~900 bytes an episode, a
read of 64 MB lets plain files be cut in halves of a row group (61,440 lines, 55 MB);
48 MB would make them thirds (peak RSS 951 MB at 10M episodes with 64)."""
_BLOCK = 4 * MiB
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
COMPRESSED_SUFFIXES = (".gz", ".zst")


class StreamError(Exception):
    """The input cannot be read as a stream (e.g. zstd without ``zstandard``)."""


@dataclass
class Chunk:
    """Whole lines ``first_line .. first_line + n_lines - 1``, each ending in ``\\n``.

    ``oversized`` maps a line number to its byte length for lines over the limit; such a
    line is an empty line in ``data``.
    """

    first_line: int
    data: bytes
    """The chunk's bytes, maybe followed by more of the read (see ``end``); for a plain
    file a reused ``bytearray`` (see :class:`_Buffers`), never changed while referenced."""
    n_lines: int
    oversized: dict[int, int] = field(default_factory=dict)
    closes: bool = True
    """Whether the fast path commits after this chunk (False: it is the start or middle
    of a row group, see :data:`ROW_GROUP_LINES`)."""
    end: int | None = None
    """The chunk is ``data[:end]`` (None: all of it; a longer read is not copied)."""

    @property
    def size(self) -> int:
        return len(self.data) if self.end is None else self.end

    @property
    def view(self) -> memoryview:
        """The chunk's bytes, without a copy."""
        return memoryview(self.data)[: self.size]

    def after(self, line: int) -> Chunk:
        """The chunk's lines after ``line`` (one of its lines), as a chunk (the fast path
        wrote the rows up to it and hands the rest to the exact path)."""
        at = 0
        for _ in range(line - self.first_line + 1):
            at = self.data.index(b"\n", at) + 1
        return Chunk(line + 1, bytes(self.view[at:]), self.first_line + self.n_lines - line - 1,
                     {k: v for k, v in self.oversized.items() if k > line}, self.closes)

    def lines_at(self, numbers: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """(line number, line without its newline) for those of the chunk's lines in
        ``numbers``, in file order, as :meth:`lines` gives them.

        Why not :meth:`lines` and a filter: a mixed file's chunk holds a few experiment
        records among ~61,000 episodes, and splitting all of it made ~61,000 objects (and
        a copy of the chunk) per chunk to keep three; here the newlines are counted per
        block (:func:`_block_newlines`) and only the wanted lines are cut out."""
        view = self.view
        counts = _block_newlines(view)
        last = self.first_line + self.n_lines - 1
        for number in sorted({n for n in numbers if self.first_line <= n <= last}):
            k = number - self.first_line  # lines before it
            start = 0 if k == 0 else _past_newline(self.data, counts, k)
            end = _past_newline(self.data, counts, k + 1) - 1
            yield number, bytes(view[start:end])

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, line without its newline) for every line of the chunk."""
        parts = bytes(self.view).split(b"\n")  # bytes even where ``data`` is a reused buffer
        for i, raw in enumerate(parts[: self.n_lines]):
            yield self.first_line + i, raw


def display_name(path: Path | str) -> str:
    return "<stdin>" if str(path) == STDIN else str(path)


def _compression(head: bytes) -> str | None:
    """"gzip" or "zstd" for data that starts with ``head`` (its first 4 bytes), else None."""
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    return None


def _decompressor(raw: BinaryIO, head: bytes) -> BinaryIO:
    kind = _compression(head)
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]  # reads as BinaryIO; typeshed's GzipFile is not one
    if kind == "zstd":
        try:
            import zstandard
        except ImportError as exc:
            raise StreamError("zstd-compressed input needs the optional 'zstandard' package: "
                              "pip install 'evalatlas[zstd]'") from exc
        return zstandard.ZstdDecompressor().stream_reader(raw)
    return raw


def is_compressed(path: Path) -> bool:
    """Whether the file at ``path`` starts as gzip or zstd data (read as its decompressed
    text, :func:`open_stream`); False when it cannot be read (its ingest reports why)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return _compression(head) is not None


def open_stream(path: Path | str) -> BinaryIO:
    """A binary stream of the decompressed content of ``path`` (``-``: standard input)."""
    if str(path) == STDIN:
        buf: Any = getattr(sys.stdin, "buffer", sys.stdin)
        raw: BinaryIO = buf if hasattr(buf, "peek") else io.BufferedReader(buf, _BLOCK)
    else:
        raw = open(path, "rb", buffering=_BLOCK)  # noqa: SIM115 - returned to the caller
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    try:
        return _decompressor(raw, head)
    except BaseException:
        raw.close()
        raise


def head_of(path: Path, n: int = 64 * 1024) -> bytes:
    """The first ``n`` decompressed bytes of a regular file (for format sniffing)."""
    try:
        with open_stream(path) as fh:
            return fh.read(n)
    except (OSError, EOFError, StreamError, ValueError):
        return b""


def iter_plain_chunks(
    fh: BinaryIO,
    *,
    max_line_bytes: int,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    hasher: Hasher | None = None,
) -> Iterator[Chunk]:
    """:func:`iter_chunks` for a plain (uncompressed) regular file, the same lines
    cheaper: each chunk is one ``pread`` of whole lines (its end found by a short read
    at the target size), counted in C, where the streaming cutter copies every block
    through Python several times (measured: 2.3 of ~25 CPU s per million episodes).
    Chunks are cut so that runs of them fill DuckDB row groups
    (:data:`ROW_GROUP_LINES`, :func:`_group_take`); a chunk's ``closes`` says where
    one ends. ``hasher`` is fed each byte of the file once, in order, as it is read
    (see :func:`_read_hashing`).

    Anything unusual (a line over ``max_line_bytes``, or no line end within it) hands
    the rest of the file, from the start of that chunk, to :func:`iter_chunks`, which
    measures every line as it streams.
    """
    fd = fh.fileno()
    size = os.fstat(fd).st_size
    buffers = _Buffers()
    pos = len(_BOM) if os.pread(fd, len(_BOM), 0) == _BOM else 0
    if hasher is not None and pos:
        hasher.update(_BOM)
    hashed = pos  # the file's bytes before this offset went to ``hasher``
    line = 1
    open_lines = 0  # lines of the row group the chunks so far have started
    want = chunk_bytes
    while pos < size:
        end = _line_end(fd, min(size, pos + want), size, max_line_bytes)
        data = b""
        if end is not None:
            data = buffers.read(fd, end - pos, pos, hasher, hashed)
            hashed = max(hashed, pos + len(data))
        if end is None or len(data) != end - pos or not _short_lines(data, max_line_bytes):
            # a line over the limit, or the file shrank under us: stream the rest (the
            # part of it read and hashed already is not hashed again)
            fh.seek(pos)
            yield from iter_chunks(fh, max_line_bytes=max_line_bytes,
                                   chunk_bytes=chunk_bytes,
                                   hasher=None if hasher is None else
                                   _SkipFirst(hasher, hashed - pos),
                                   first_line=line, strip_bom=False)
            return
        counts = _block_newlines(data)
        n = sum(counts)
        take = _group_take(n, len(data), open_lines, end == size) if n else None
        cut = None
        if take is not None and take < n:
            cut = _past_newline(data, counts, take)
            end, n = pos + cut, take
        if cut is None and not data.endswith(b"\n"):  # a last line without newline
            data = bytes(data) + b"\n"  # a new object (the file's bytes were hashed as read)
            n += 1
        open_lines = 0 if take is None else open_lines + n
        closes = open_lines % ROW_GROUP_LINES == 0 or end >= size
        if closes:
            open_lines = 0
        # read about what the next chunk takes (a file's chunks are alike): the tail
        # past a cut is read twice
        want = chunk_bytes if take is None else min(chunk_bytes, (end - pos) * 33 // 32 + MiB)
        yield Chunk(line, data, n, closes=closes, end=cut)
        line += n
        pos = end


class _Buffers:
    """Read buffers of one file's chunks, reused once nothing refers to them any more.

    Why: a new ``bytes`` of ~55 MB per chunk is a fresh ``mmap`` whose every page faults
    on first touch, and goes back to the system when the chunk is dropped (measured:
    13,400 page faults and ~25 ms of system CPU per chunk, idle, several times that
    under load; ~a third of a 1M-episode ingest's page faults). A buffer is reused only
    when its reference count shows that no chunk, view or exact-path line still holds
    it, so a chunk's bytes never change under a reader; when every buffer is held (a
    group of chunks waiting for its commit, say), a new one is made, up to
    :data:`MAX_BUFFERS`, then plain ``bytes``."""

    MAX_BUFFERS = 8

    def __init__(self) -> None:
        self.pool: list[bytearray] = []

    def _free(self, i: int) -> bool:
        return sys.getrefcount(self.pool[i]) <= _FREE_REFS

    def read(self, fd: int, n: int, pos: int, hasher: Hasher | None = None,
             hash_from: int = 0) -> bytes:
        """``n`` bytes of ``fd`` from ``pos`` (fewer at the end of the file), in a free
        buffer of the pool (a ``bytearray``: typed as bytes, which it behaves as);
        ``hasher`` is fed those at file offsets from ``hash_from`` on
        (:func:`_read_hashing`)."""
        for i in range(len(self.pool)):
            if self._free(i):
                buf = self.pool[i]
                break
        else:
            if len(self.pool) >= self.MAX_BUFFERS:
                data = os.pread(fd, n, pos)
                if hasher is not None and pos + len(data) > hash_from:
                    hasher.update(memoryview(data)[max(0, hash_from - pos):])
                return data
            # At its full size at once: growing an empty one by ``bytes(n)`` touched
            # every page twice, the temporary's and the copy's (measured: ~30,000-41,000
            # page faults per new 55 MB buffer against ~13,400 for one touch; 4 buffers
            # in a 1M-episode ingest).
            buf = bytearray(n)
            self.pool.append(buf)
        if len(buf) > n:
            del buf[n:]  # keeps the allocation (and its pages) for the next, longer read
        elif len(buf) < n:
            buf.extend(bytes(n - len(buf)))
        got = _read_hashing(fd, buf, pos, hasher, hash_from)
        if got < n:
            del buf[got:]
        return buf  # type: ignore[return-value]  # a bytearray reads as bytes here


class Hasher(Protocol):
    """What the chunkers need of a ``hashlib`` object."""

    def update(self, data: bytes | memoryview, /) -> None: ...


HASH_PIECE = 256 * 1024
"""How much of a chunk is read before it is hashed (see :func:`_read_hashing`)."""


def _read_hashing(fd: int, buf: bytearray, pos: int, hasher: Hasher | None,
                  hash_from: int) -> int:
    """Read ``len(buf)`` bytes of ``fd`` from ``pos`` into ``buf`` (the number read:
    fewer at the end of the file), feeding ``hasher`` those at file offsets from
    ``hash_from`` on, in order.

    Why in pieces: SHA-256 of a 55 MB chunk that was read in one ``preadv`` reads it
    back from memory, while each :data:`HASH_PIECE` hashed right after its ``preadv``
    is still in the CPU's cache (measured on a 61,440-line chunk, thread CPU, medians
    of 9: read and hash 52-57 ms in one piece, 39 ms in pieces of 256 kB; 64 kB to
    512 kB alike, 1 MB 45 ms). The part of ``buf`` before ``hash_from`` (the tail of
    the read before, re-read after a cut) is read in one go and not hashed again."""
    n = len(buf)
    if hasher is None or pos + n <= hash_from:
        return os.preadv(fd, [buf], pos)
    with memoryview(buf) as view:
        got = 0
        if hash_from > pos:
            got = os.preadv(fd, [view[: hash_from - pos]], pos)
            if got < hash_from - pos:
                return got
        while got < n:
            with view[got: got + HASH_PIECE] as piece:
                k = os.preadv(fd, [piece], pos + got)
                if k == 0:
                    break
                hasher.update(piece[:k])
            got += k
    return got


class _SkipFirst:
    """``hasher`` fed all but the first ``n`` bytes given to it (they went to it
    already: :func:`iter_plain_chunks` handing over to :func:`iter_chunks` in the
    middle of a read it hashed)."""

    def __init__(self, hasher: Hasher, n: int) -> None:
        self.hasher = hasher
        self.n = n

    def update(self, data: bytes | memoryview, /) -> None:
        if self.n:
            skip = min(self.n, len(data))
            self.n -= skip
            data = memoryview(data)[skip:]
        self.hasher.update(data)


def _refs_when_free() -> int:
    """What :meth:`_Buffers._free` sees for a buffer only its pool holds."""
    probe = _Buffers()
    probe.pool.append(bytearray())
    return sys.getrefcount(probe.pool[0])


_FREE_REFS = _refs_when_free()


def _line_end(fd: int, target: int, size: int, max_line_bytes: int) -> int | None:
    """The offset just past the first newline at or after ``target - 1`` (``size`` at
    the end of the file); None when no newline comes within ``max_line_bytes``."""
    if target >= size:
        return size
    at = target - 1
    while at < size and at - target <= max_line_bytes:
        block = os.pread(fd, 64 * 1024, at)
        nl = block.find(b"\n")
        if nl >= 0:
            return at + nl + 1
        at += len(block)
    return size if at >= size else None


_COUNT_BLOCK = MiB


def _block_newlines(data: bytes | memoryview) -> list[int]:
    """Newlines in each :data:`_COUNT_BLOCK` of ``data`` (vectorised per block, whose
    mask stays in cache: measured 3x faster than ``bytes.count``)."""
    import numpy as np

    buf = np.frombuffer(data, dtype=np.uint8)
    return [int(np.count_nonzero(buf[i:i + _COUNT_BLOCK] == 10))
            for i in range(0, len(buf), _COUNT_BLOCK)]


def _past_newline(data: bytes, counts: list[int], k: int) -> int:
    """The offset just past the ``k``-th newline of ``data`` (1-based)."""
    block = 0
    while counts[block] < k:
        k -= counts[block]
        block += 1
    at = block * _COUNT_BLOCK
    for _ in range(k):
        at = data.index(b"\n", at) + 1
    return at


def _short_lines(data: bytes, max_line_bytes: int) -> bool:
    """Whether no line of ``data`` (whole lines, the last maybe without its newline) is
    over ``max_line_bytes``.

    First a probe that costs almost nothing: a line over the limit covers a whole
    aligned block of half the limit, so when every such block holds a newline, no line
    is over it. Only when one does not are the lines measured."""
    half = max(1, max_line_bytes // 2)
    if all(data.find(b"\n", i, i + half) >= 0 for i in range(0, len(data) - half + 1, half)):
        return True
    import numpy as np

    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    at = np.concatenate([[-1], ends, [len(data)]]).astype(np.int64)
    return int((np.diff(at) - 1).max()) <= max_line_bytes


ROW_GROUP_LINES = 122_880
"""DuckDB's rows per row group (``DEFAULT_ROW_GROUP_SIZE``). A transaction that inserts
whole row groups writes them straight into the database file, compressed; a smaller one
writes its rows to the write-ahead log, to be compressed into the file again at the next
checkpoint (measured: half the commit's CPU at 1M episodes). So plain files are cut at
line counts that add up to whole row groups, and the fast path commits at their ends."""

GROUP_BYTES = 128 * MiB
"""Rows longer than this / :data:`ROW_GROUP_LINES` on average (~1 KB) are not grouped:
an open transaction holds its rows in memory until it commits."""


def _group_take(n: int, nbytes: int, open_lines: int, at_end: bool) -> int | None:
    """How many of the ``n`` lines (``nbytes`` bytes) read for the next chunk it takes,
    so that chunks close row groups: the rest of the open group, or the largest whole
    fraction of it that fits. None: take them all (the end of the file, or rows too long
    to group, or none of the fractions fits)."""
    if at_end and n <= ROW_GROUP_LINES - open_lines:
        return None
    if nbytes * ROW_GROUP_LINES > GROUP_BYTES * n:
        return None
    left = ROW_GROUP_LINES - open_lines
    for parts in range(1, 17):
        if left % parts == 0 and left // parts <= n:
            return left // parts
    return None


def iter_chunks(
    fh: BinaryIO,
    *,
    max_line_bytes: int,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_total_bytes: int | None = None,
    hasher: Hasher | None = None,
    first_line: int = 1,
    strip_bom: bool = True,
) -> Iterator[Chunk]:
    """Cut ``fh`` into chunks of whole lines; see the module docstring.

    ``hasher`` is fed every byte read (the content hash of the input, for free).
    Stops (raising :class:`StreamError` after the last complete chunk) when more than
    ``max_total_bytes`` arrive. ``first_line`` and ``strip_bom`` let
    :func:`iter_plain_chunks` hand over in the middle of a file.
    """
    block_size = max(1, min(_BLOCK, max_line_bytes))
    out = bytearray()
    out_lines = 0
    line = first_line  # number of the line being assembled
    partial = bytearray()
    skipping: int | None = None  # bytes of an oversized line seen so far
    oversized: dict[int, int] = {}
    total = 0
    first = strip_bom

    def emit() -> Chunk:
        nonlocal out, out_lines, first_line, oversized
        chunk = Chunk(first_line, bytes(out), out_lines, oversized)
        first_line += out_lines
        out = bytearray()
        out_lines = 0
        oversized = {}
        return chunk

    def finish_line(tail: bytes) -> None:
        """The current line ends with ``tail`` (which includes the newline)."""
        nonlocal skipping, line, out_lines
        if skipping is not None:
            oversized[line] = skipping + len(tail) - 1
            out.extend(b"\n")
            skipping = None
        elif len(partial) + len(tail) - 1 > max_line_bytes:
            oversized[line] = len(partial) + len(tail) - 1
            out.extend(b"\n")
        else:
            out.extend(partial)
            out.extend(tail)
        partial.clear()
        line += 1
        out_lines += 1

    def grow_partial(piece: bytes) -> None:
        nonlocal skipping
        if skipping is not None:
            skipping += len(piece)
        elif len(partial) + len(piece) > max_line_bytes:
            skipping = len(partial) + len(piece)
            partial.clear()
        else:
            partial.extend(piece)

    while True:
        block = fh.read(block_size)
        if not block:
            break
        if hasher is not None:
            hasher.update(block)
        total += len(block)
        if max_total_bytes is not None and total > max_total_bytes:
            if out_lines:
                yield emit()
            raise StreamError(f"input is over the {max_total_bytes:,}-byte limit for one "
                              "file; the rest was not read (raise it with --max-file-bytes)")
        if first:
            first = False
            if block.startswith(_BOM):
                block = block[len(_BOM):]
        nl = block.find(b"\n")
        if nl < 0:
            grow_partial(block)
            continue
        finish_line(block[: nl + 1])
        last = block.rfind(b"\n")
        if last > nl:
            # Lines wholly inside one block are at most block_size <= max_line_bytes long.
            middle = block[nl + 1: last + 1]
            out.extend(middle)
            n = middle.count(b"\n")
            out_lines += n
            line += n
        grow_partial(block[last + 1:])
        if len(out) >= chunk_bytes:
            yield emit()
    if skipping is not None or partial:
        finish_line(b"\n")
    if out_lines:
        yield emit()
