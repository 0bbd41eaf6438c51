"""Cutting plain JSONL files into chunks that fill DuckDB row groups."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evalatlas.adapters import jsonl_stream
from evalatlas.adapters.jsonl_stream import iter_plain_chunks


def _lines(rng: random.Random, n: int, lo: int, hi: int) -> list[bytes]:
    return [b'{"i": %d, "pad": "%s"}' % (i, b"x" * rng.randint(lo, hi)) for i in range(n)]


def _chunks(path: Path, chunk_bytes: int, max_line_bytes: int = 1 << 20
            ) -> list[jsonl_stream.Chunk]:
    with path.open("rb") as fh:
        return list(iter_plain_chunks(fh, max_line_bytes=max_line_bytes,
                                      chunk_bytes=chunk_bytes))


def _check_cover(path: Path, chunks: list[jsonl_stream.Chunk]) -> None:
    """The chunks are the file's lines, in order, numbered without a gap."""
    assert b"".join(bytes(c.view) for c in chunks) == path.read_bytes()
    line = 1
    for c in chunks:
        assert c.first_line == line
        assert bytes(c.view).count(b"\n") == c.n_lines
        assert [n for n, _ in c.lines()] == list(range(line, line + c.n_lines))
        line += c.n_lines


@pytest.mark.parametrize("group, chunk_bytes", [(96, 2000), (96, 700), (120, 3000)])
def test_chunks_close_whole_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       group: int, chunk_bytes: int) -> None:
    """Runs of chunks add up to whole row groups: every chunk that closes one ends at a
    multiple of the group's lines, except the file's last."""
    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", group)
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join(_lines(random.Random(group), 1000, 0, 12)) + b"\n")
    chunks = _chunks(path, chunk_bytes)
    _check_cover(path, chunks)
    ends = [c.first_line - 1 + c.n_lines for c in chunks if c.closes]
    assert ends[-1] == 1000 and chunks[-1].closes
    assert all(end % group == 0 for end in ends[:-1])
    assert len(ends) == -(-1000 // group)  # no group is cut short
    assert len(chunks) > len(ends)  # several chunks fill a group
    # a chunk is a read's prefix, not a copy of it
    assert any(c.end is not None and c.end < len(c.data) for c in chunks)


def test_long_rows_are_not_grouped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows longer than GROUP_BYTES / ROW_GROUP_LINES: the transaction would hold too
    much, so every chunk closes (as before grouping)."""
    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 96)
    monkeypatch.setattr(jsonl_stream, "GROUP_BYTES", 96 * 20)
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join(_lines(random.Random(2), 500, 30, 40)) + b"\n")
    chunks = _chunks(path, 3000)
    _check_cover(path, chunks)
    assert all(c.closes and c.end is None for c in chunks)


@pytest.mark.parametrize("chunk_bytes", [100, 10_000])
def test_last_line_without_newline_and_bom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          chunk_bytes: int) -> None:
    """Also when reads reach the end of the file and are cut (10,000 bytes)."""
    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 8)
    path = tmp_path / "x.jsonl"
    body = b"\n".join(_lines(random.Random(3), 30, 0, 5))
    path.write_bytes(b"\xef\xbb\xbf" + body)
    chunks = _chunks(path, chunk_bytes)
    assert b"".join(bytes(c.view) for c in chunks) == body + b"\n"
    assert [c.n_lines for c in chunks if c.closes][:3] == [8, 8, 8] or chunk_bytes == 100
    line = 1
    for c in chunks:
        assert c.first_line == line and bytes(c.view).count(b"\n") == c.n_lines
        line += c.n_lines
    assert line == 31 and chunks[-1].closes


def test_a_line_over_the_limit_hands_over_to_the_streaming_cutter(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    lines = _lines(random.Random(4), 200, 0, 10)
    lines[150] = b'{"pad": "' + b"y" * 5000 + b'"}'
    path.write_bytes(b"\n".join(lines) + b"\n")
    chunks = _chunks(path, 4000, max_line_bytes=3000)
    assert sum(c.n_lines for c in chunks) == 200
    assert {k: v for c in chunks for k, v in c.oversized.items()} == {151: len(lines[150])}


@pytest.mark.parametrize("seed", range(20))
def test_short_lines_probe_agrees_with_measuring(seed: int) -> None:
    """The probe (a newline in every aligned half-limit block) never passes a line over
    the limit: compared with measuring every line."""
    rng = random.Random(seed)
    limit = rng.randint(1, 60)
    data = b"\n".join(b"z" * rng.choice([rng.randint(0, limit + 5), rng.randint(0, 3)])
                      for _ in range(rng.randint(1, 80)))
    if rng.random() < 0.5:
        data += b"\n"
    want = max(len(x) for x in data.split(b"\n")) <= limit
    assert jsonl_stream._short_lines(data, limit) is want


@pytest.mark.parametrize("seed", range(10))
def test_past_newline_finds_the_kth_line_end(seed: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl_stream, "_COUNT_BLOCK", 64)
    rng = random.Random(seed)
    data = b"\n".join(_lines(rng, 300, 0, 40)) + b"\n"
    counts = jsonl_stream._block_newlines(data)
    assert sum(counts) == 300
    ends = [i + 1 for i, b in enumerate(data) if b == 10]
    for k in (1, 2, rng.randint(1, 300), 299, 300):
        assert jsonl_stream._past_newline(data, counts, k) == ends[k - 1]


def test_read_buffers_are_reused_only_when_nothing_holds_them(tmp_path: Path) -> None:
    """A plain file's chunks are read into reused buffers (no fresh pages per chunk),
    but a chunk (or a view or line of it) that is still held never changes: its buffer
    is not reused while referenced."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join(_lines(random.Random(7), 3000, 0, 40)) + b"\n")
    want = path.read_bytes()
    held = _chunks(path, 4000)  # every chunk held: each in its own buffer
    assert len(held) > 10
    _check_cover(path, held)
    assert len({id(c.data) for c in held}) == len(held)
    # dropping each chunk before the next is read: the same few buffers serve the file
    buffers: set[int] = set()
    got = b""
    with path.open("rb") as fh:
        for chunk in iter_plain_chunks(fh, max_line_bytes=1 << 20, chunk_bytes=4000):
            buffers.add(id(chunk.data))
            got += bytes(chunk.view)
            del chunk
    assert got == want
    assert len(buffers) <= 3
    # a line or view kept from a dropped chunk keeps its bytes
    with path.open("rb") as fh:
        chunks = iter_plain_chunks(fh, max_line_bytes=1 << 20, chunk_bytes=4000)
        first = next(chunks)
        view, n = first.view, first.n_lines
        line_no, line = next(first.lines())
        del first
        rest = b"".join(bytes(c.view) for c in chunks)
    assert isinstance(line, bytes) and line_no == 1 and want.startswith(line + b"\n")
    assert bytes(view) + rest == want and bytes(view).count(b"\n") == n


def test_buffers_fall_back_to_bytes_when_every_buffer_is_held(tmp_path: Path) -> None:
    """More chunks held at once than the pool keeps: the rest are plain bytes, still
    the file's lines."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join(_lines(random.Random(8), 4000, 0, 40)) + b"\n")
    held = _chunks(path, 3000)
    assert len(held) > jsonl_stream._Buffers.MAX_BUFFERS
    _check_cover(path, held)
    kinds = [type(c.data) for c in held]
    assert kinds.count(bytearray) == jsonl_stream._Buffers.MAX_BUFFERS
    assert bytes in kinds


def test_lines_at_gives_the_lines_that_lines_gives(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A few lines picked out of a chunk (a mixed file's experiment records) are the
    same as :meth:`Chunk.lines` gives, for the first, last and any line between, in a
    chunk that is a prefix of a longer read, and in one whose last line had no newline."""
    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 300)
    monkeypatch.setattr(jsonl_stream, "_COUNT_BLOCK", 4096)  # lines in several blocks
    rng = random.Random(11)
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"\n".join(_lines(rng, 5000, 0, 300)))  # no final newline
    chunks = _chunks(path, 60_000)
    assert len(chunks) > 3 and any(c.end is not None and c.end < len(c.data) for c in chunks)
    for c in chunks:
        every = dict(c.lines())
        last = c.first_line + c.n_lines - 1
        picks = {c.first_line, last, *rng.sample(range(c.first_line, last + 1), 5)}
        got = list(c.lines_at([*picks, last + 1, c.first_line - 1]))  # outside: skipped
        assert [n for n, _ in got] == sorted(picks)
        assert all(line == every[n] and isinstance(line, bytes) for n, line in got)


@pytest.mark.parametrize("case", ["groups", "bom_no_newline", "long_line", "long_after_cut",
                                  "no_line_end", "buffers_held"])
def test_the_hasher_sees_each_byte_of_the_file_once(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    case: str) -> None:
    """The content hash is the file's SHA-256 however the chunks are read: tails re-read
    after a cut are not hashed twice, nor is the part of a read the streaming cutter
    takes over (a line over the limit), nor a read outside the buffer pool; the BOM and
    a last line without newline are the file's bytes."""
    import hashlib

    monkeypatch.setattr(jsonl_stream, "ROW_GROUP_LINES", 96)
    monkeypatch.setattr(jsonl_stream, "HASH_PIECE", 64)  # many pieces per read
    rng = random.Random(case)
    lines = _lines(rng, 1000, 0, 12)
    if case in ("long_line", "long_after_cut"):
        lines[500 if case == "long_line" else 97] = b'{"pad": "' + b"y" * 5000 + b'"}'
    if case == "no_line_end":
        lines[300] = b'{"pad": "' + b"z" * 50_000 + b'"}'
    body = b"\n".join(lines) + (b"" if case == "bom_no_newline" else b"\n")
    if case == "bom_no_newline":
        body = b"\xef\xbb\xbf" + body
    path = tmp_path / "x.jsonl"
    path.write_bytes(body)
    hasher = hashlib.sha256()
    held = []
    with path.open("rb") as fh:
        for chunk in iter_plain_chunks(fh, max_line_bytes=3000, chunk_bytes=700,
                                       hasher=hasher):
            if case == "buffers_held":
                held.append(chunk)
    assert hasher.hexdigest() == hashlib.sha256(body).hexdigest()
    if case == "buffers_held":
        assert len(held) > jsonl_stream._Buffers.MAX_BUFFERS
        assert any(c.end is not None for c in held)  # reads were cut, tails re-read
