"""Reading an Inspect AI log file into one EvalLog-shaped dict: ``.eval`` zip archives
(header and sample summaries; the journal of a log still running or crashed)
and ``.json`` logs. What the dict becomes is :mod:`evalatlas.adapters.inspect`.

Why a module of its own: reading the archive is a job apart from mapping a log to
records. Members may be deflate or zstd (Python's ``zipfile`` reads zstd only from 3.14,
so zstd members are inflated with ``zstandard``, across frames); every member is
inflated in a stream that stops one byte past its declared size and never past
``--max-record-bytes`` (a zip bomb costs kilobytes); two members of one name
(``header.json``, ``summaries.json``) refuse the archive naming the member, where a zip
reader would silently take the last; a log of an unknown format ``version`` is refused
by name. ``samples/*`` (full transcripts) are never opened.

Sample summaries are decoded straight into :class:`SampleSummary` (only the fields the
mapping reads; a scorer's ``explanation`` and ``history``, ``metadata`` and
``role_usage`` are skipped, not built): 4,000 summaries in ~4 ms of CPU instead of ~9 as
dicts. Where a summary is not of that shape (a score that is not an object, ``scores``
that is not one, JSON that msgspec refuses such as NaN), the list is read as plain JSON
and each summary object becomes a :class:`SampleSummary` holding its values as written,
so the mapping checks and names them as before.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import msgspec

from evalatlas import collector
from evalatlas.errors import InputError
from evalatlas.records.jsonio import loads_like_python, read_json_file
from evalatlas.records.limits import current as current_limits


class SampleScore(msgspec.Struct, gc=False):
    """One scorer's entry of a sample summary, as far as the mapping reads it."""

    value: Any = None
    answer: Any = None


class SampleSummary(msgspec.Struct, gc=False):
    """One sample summary (or a ``.json`` log's full sample), as far as the mapping
    reads it: an absent field is None, as ``dict.get`` would give. ``scores`` holds
    :class:`SampleScore` entries when decoded by :func:`decode_summaries`, else the
    value as written (:func:`summary_of`); every other field is the JSON value as
    written, checked by the mapping (:mod:`evalatlas.adapters.inspect`). Not tracked by
    the cyclic collector: decoded JSON holds no cycles."""

    id: Any = None
    epoch: Any = None
    input: Any = None
    target: Any = None
    scores: dict[str, SampleScore] | None = None
    model_usage: Any = None
    started_at: Any = None
    completed_at: Any = None
    total_time: Any = None
    working_time: Any = None
    uuid: Any = None
    retries: Any = None
    error_retries: Any = None
    completed: Any = None
    message_count: Any = None
    error: Any = None
    limit: Any = None
    output: Any = None


_SUMMARY_FIELDS = SampleSummary.__struct_fields__
_SUMMARIES = msgspec.json.Decoder(list[SampleSummary])


def summary_of(sample: dict[str, Any]) -> SampleSummary:
    """A sample object read as plain JSON as a :class:`SampleSummary`, its values (its
    ``scores`` too) as written."""
    get = sample.get
    return SampleSummary(*[get(name) for name in _SUMMARY_FIELDS])


def summaries_of(value: Any) -> Any:
    """A list of sample objects read as plain JSON with each object as a
    :class:`SampleSummary` (anything else left as it is, for the mapping to name);
    a value that is not a list is returned as it is."""
    if type(value) is not list:
        return value
    return [summary_of(s) if type(s) is dict else s for s in value]


def decode_summaries(raw: bytes) -> Any:
    """``summaries.json``: a list of :class:`SampleSummary` decoded in one pass; when the
    document is not a list of summaries of that shape, or msgspec refuses its JSON, it
    is read as :func:`~evalatlas.records.jsonio.loads_like_python` reads it and made
    :func:`summaries_of` (raises ValueError for invalid JSON)."""
    with collector.paused():
        try:
            return _SUMMARIES.decode(raw)
        except msgspec.MsgspecError:
            pass
    return summaries_of(loads_like_python(raw))


_ZIP_ZSTD = 93
"""The zip compression method number of zstd (APPNOTE 4.4.5)."""


def _member_limit(path: Path | str | None, name: str, declared: int) -> int:
    """The most bytes a member may inflate to: its declared size, refused up front when
    that is over the record limit (``--max-record-bytes``; a submission's is bounded by the
    server's ``--max-file-bytes``): a member is one JSON document read whole."""
    limits = current_limits()
    limit = limits.max_record_bytes
    if declared > limit:
        raise InputError.at(path, f"member declares {declared:,} bytes, over the "
                            f"{limit:,}-byte limit for one record "
                            f"({limits.raise_hint('max_record_bytes')})", field=name)
    return declared


def _check_size(data: bytes, declared: int, path: Path | str | None, name: str) -> bytes:
    if len(data) > declared:
        raise InputError.at(path, f"member inflates past its declared {declared:,} bytes "
                            "(a zip bomb or a damaged archive); not read", field=name)
    if len(data) != declared:
        raise InputError.at(path, f"member decoded to {len(data):,} bytes, expected "
                            f"{declared:,}", field=name)
    return data


def _inflate(raw: bytes, method: int, declared: int, path: Path | str | None,
             name: str) -> bytes:
    """A member's bytes, decompressed in a stream that stops one byte past its declared
    size (so a member that claims 2,000 bytes and inflates to 3 GiB costs 2 KB, not
    3 GiB) and never past ``--max-record-bytes``."""
    limit = _member_limit(path, name, declared)
    if method == 0:
        data = raw[:limit + 1]
    elif method == zipfile.ZIP_DEFLATED:
        try:
            data = zlib.decompressobj(-15).decompress(raw, limit + 1)
        except zlib.error as exc:
            raise InputError.at(path, f"damaged deflate data ({exc})", field=name) from None
    elif method == _ZIP_ZSTD:
        data = _zstd(raw, path, name, limit + 1)
    else:
        raise InputError.at(path, f"unsupported zip compression {method}", field=name)
    return _check_size(data, declared, path, name)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes (zip64 archives, through ``zipfile``), bounded as :func:`_inflate`;
    zstd members (method 93) decoded with ``zstandard``."""
    limit = _member_limit(zf.filename, info.filename, info.file_size)
    if info.compress_type != _ZIP_ZSTD:
        with zf.open(info) as fh:
            return _check_size(fh.read(limit + 1), info.file_size, zf.filename, info.filename)
    fp = zf.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    if header[:4] != b"PK\x03\x04":
        raise InputError.at(zf.filename, "bad local file header", field=info.filename)
    name_len = int.from_bytes(header[26:28], "little")
    extra_len = int.from_bytes(header[28:30], "little")
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    return _inflate(raw, _ZIP_ZSTD, info.file_size, zf.filename, info.filename)


def _journal_number(name: str) -> int:
    stem = name.rsplit("/", 1)[-1].removesuffix(".json")
    return int(stem) if stem.isdigit() else 0


_WANTED = ("header.json", "summaries.json", "_journal/")
"""The members read. Not ``reductions.json`` (the per-sample scores after the epochs
reducer: nothing stored comes from it, and inflating and decoding its ~0.3 MB for 4,000
samples cost ~1 ms), nor ``samples/*``."""
_WANTED_BYTES = tuple(w.encode() for w in _WANTED)
_CD_ENTRY = struct.Struct("<4s6xH8xIIHHH8xI")
"""A central directory entry's fixed part (APPNOTE 4.3.12): signature, method,
compressed and uncompressed sizes, name, extra and comment lengths, local header
offset."""


class _Archive:
    """The few members of an Inspect ``.eval`` evalatlas reads, found by one pass over the
    zip's central directory (``zipfile`` builds an object for each of the thousands of
    ``samples/*`` entries, most of the cost of a read); zip64 archives fall back to
    ``zipfile``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = path.open("rb")
        self.members: dict[str, tuple[int, int, int, int]] = {}
        self.duplicates: list[str] = []
        self.zf: zipfile.ZipFile | None = None
        if not self._scan():
            self.zf = zipfile.ZipFile(self.fh)
            seen: set[str] = set()
            for name in self.zf.namelist():
                if name in seen and name.startswith(_WANTED):
                    self.duplicates.append(name)
                seen.add(name)

    def _scan(self) -> bool:
        fh = self.fh
        fh.seek(0, 2)
        size = fh.tell()
        tail_len = min(size, 65_557)
        fh.seek(size - tail_len)
        tail = fh.read(tail_len)
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            raise zipfile.BadZipFile("no end of central directory record")
        (_, _, _, _, total, cd_size, cd_offset, _) = struct.unpack(
            "<4sHHHHIIH", tail[at:at + 22])
        if total == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_size == 0xFFFFFFFF:
            return False  # zip64
        fh.seek(cd_offset)
        cd = fh.read(cd_size)
        pos = 0
        entry, wanted = _CD_ENTRY, _WANTED_BYTES
        for _ in range(total):
            if len(cd) - pos < 46:
                raise zipfile.BadZipFile("bad central directory entry")
            sig, method, csize, usize, nlen, xlen, clen, offset = entry.unpack_from(cd, pos)
            if sig != b"PK\x01\x02":
                raise zipfile.BadZipFile("bad central directory entry")
            # the name's bytes are compared first: most entries are samples/*, not read
            if cd.startswith(wanted, pos + 46, pos + 46 + nlen):
                name = cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
                if 0xFFFFFFFF in (csize, usize, offset):
                    return False
                if name in self.members:
                    self.duplicates.append(name)
                self.members[name] = (method, csize, usize, offset)
            pos += 46 + nlen + xlen + clen
        return True

    def names(self) -> list[str]:
        return self.zf.namelist() if self.zf is not None else list(self.members)

    def read(self, name: str) -> bytes | None:
        if self.zf is not None:
            try:
                info = self.zf.getinfo(name)
            except KeyError:
                return None
            return _read_member(self.zf, info)
        entry = self.members.get(name)
        if entry is None:
            return None
        method, csize, usize, offset = entry
        self.fh.seek(offset)
        header = self.fh.read(30)
        if header[:4] != b"PK\x03\x04":
            raise InputError.at(self.path, "bad local file header", field=name)
        nlen, xlen = struct.unpack("<HH", header[26:30])
        self.fh.seek(offset + 30 + nlen + xlen)
        _member_limit(self.path, name, usize)  # before reading the compressed bytes
        return _inflate(self.fh.read(csize), method, usize, self.path, name)

    def json(self, name: str, decode: Any = loads_like_python) -> Any:
        raw = self.read(name)
        if raw is None:
            return None
        try:
            return decode(raw)
        except ValueError as exc:
            raise InputError.at(self.path, f"invalid JSON in member: {exc}",
                                field=name) from exc

    def close(self) -> None:
        if self.zf is not None:
            self.zf.close()
        self.fh.close()


def _zstd(raw: bytes, path: Path | str | None, name: str, most: int) -> bytes:
    """At most ``most`` bytes of a zstd member, across frames, decoded in a stream.

    A member of one frame is decoded in one call into one buffer of its stated
    content size, or of ``most`` bytes when its header states none (Inspect's): 2.7 MB
    of sample summaries in 0.7 instead of 4.9 ms of CPU (the stream's 1 MiB chunks and
    their joining were most of it). Anything else (a stated size of ``most`` or more,
    several frames, output past the buffer, damaged data) goes through the stream,
    which stops at ``most`` bytes and words the error. The one call never allocates
    more than ``most``: a stated size is checked before it."""
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - a runtime dependency
        raise InputError.at(path, "zstd-compressed member (Inspect's default); install "
                            "zstandard", field=name) from exc
    try:
        stated = zstandard.frame_content_size(raw)
    except zstandard.ZstdError:
        stated = -1
    if stated == -1 or 0 < stated < most:  # -1: not stated
        try:
            return zstandard.ZstdDecompressor().decompress(
                raw, max_output_size=most, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # another frame follows, or damaged data: the stream decides
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw),
                                                        read_across_frames=True)
    out = bytearray()
    try:
        while len(out) < most:
            chunk = reader.read(min(most - len(out), 1 << 20))
            if not chunk:
                break
            out += chunk
    except zstandard.ZstdError as exc:
        raise InputError.at(path, f"damaged zstd data ({exc})", field=name) from None
    return bytes(out)


_KNOWN_VERSIONS = (1, 2)
"""Inspect log format versions read (``EvalLog.version``; 2 since Inspect 0.3.x)."""


def _check_version(log: dict[str, Any], path: Path) -> None:
    """Refuse a log of a format version evalatlas does not know: its fields may have
    moved, and reading it as version 2 would give a log with no model and no scores."""
    version = log.get("version")
    if version is None or (type(version) is int and version in _KNOWN_VERSIONS):
        return
    raise InputError.at(path, f"Inspect log format version {version!r}; evalatlas "
                        "reads versions 1 and 2 (fields may have moved), so the log is "
                        "not read", field="version")


def read_eval_archive(path: Path) -> dict[str, Any]:
    """The parts of a ``.eval`` evalatlas uses, as one EvalLog-shaped dict.

    ``samples`` holds the sample summaries (not the transcripts), each a
    :class:`SampleSummary`. Without
    ``header.json`` (in progress or crashed) the spec comes from ``_journal/start.json``
    and ``status`` is ``started``.
    """
    zf = _Archive(path)
    try:
        if zf.duplicates:
            name = zf.duplicates[0]
            raise InputError.at(path, f"two members named {name}: the archive is ambiguous "
                                "(a zip reader would silently take the last); not read",
                                field=name)
        log = zf.json("header.json")
        if log is None:
            log = zf.json("_journal/start.json")
            if not isinstance(log, dict):
                raise InputError.at(path, "neither header.json nor _journal/start.json: "
                                    "not an Inspect log, or written before it started")
            log.setdefault("status", "started")
            log["_from_journal"] = True  # no header: a crashed or running log
        if not isinstance(log, dict):
            raise InputError.at(path, "header.json is not a JSON object")
        _check_version(log, path)
        summaries = zf.json("summaries.json", decode_summaries)
        if summaries is None:
            summaries = []
            names = [n for n in zf.names() if n.startswith("_journal/summaries/")]
            for name in sorted(names, key=_journal_number):
                part = zf.json(name)
                if isinstance(part, list):
                    summaries.extend(part)
            summaries = summaries_of(summaries)
        log["samples"] = summaries
    finally:
        zf.close()
    return log


def read_log(path: Path) -> dict[str, Any]:
    """An Inspect log (``.eval`` or ``.json``) as an EvalLog-shaped dict, its
    ``samples`` objects as :class:`SampleSummary`."""
    if path.name.lower().endswith(".eval"):
        try:
            return read_eval_archive(path)
        except zipfile.BadZipFile as exc:
            raise InputError.at(path, f"not a readable zip archive: {exc}") from exc
        except OSError as exc:
            raise InputError.at(path, f"cannot read: {exc.strerror or exc}") from exc
    data = read_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("eval"), dict):
        raise InputError.at(path, "expected an Inspect EvalLog object with an 'eval' field")
    _check_version(data, path)
    if "samples" in data:
        data["samples"] = summaries_of(data["samples"])
    return data


