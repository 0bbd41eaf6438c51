"""Inspect ``.eval`` zip bombs: peak memory of refusing one (issue 28 point 6).

A copy of Inspect's own ``log_read_sample.eval`` whose ``header.json`` (deflate) or
``summaries.json`` (zstd) inflates to ``--gib`` GiB of spaces while its zip headers
declare 2,000 bytes (the issue's case: 3 GiB, refused only after 6.2 GB of RSS). Each
measurement runs in its own subprocess and reports its peak RSS (``ru_maxrss``):

- ``evalatlas``: ``read_inspect`` on the bomb (a stream that stops one byte past the
  declared size);
- baseline, ``whole member``: what the reader did before, the member inflated whole
  (``zlib.decompress`` / ``ZstdDecompressor.stream_reader(...).read()``) and then
  checked against the declared size. Run it only with a size the machine can hold.

Run::

    python benchmarks/bench_inspect_bomb.py --gib 3 --baseline-gib 1 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "inspect" \
    / "log_read_sample.eval"
CHUNK = 64 * 1024 * 1024


def compress(gib: float, zstd: bool) -> tuple[bytes, int]:
    """``gib`` GiB of spaces, compressed in a stream (never held whole)."""
    left, block = int(gib * 1024 ** 3), b" " * CHUNK
    if zstd:
        import zstandard
        c = zstandard.ZstdCompressor(level=1).compressobj()
        parts = []
        while left > 0:
            parts.append(c.compress(block[:min(left, CHUNK)]))
            left -= CHUNK
        parts.append(c.flush())
        return b"".join(parts), 93
    d = zlib.compressobj(1, zlib.DEFLATED, -15)
    parts = []
    while left > 0:
        parts.append(d.compress(block[:min(left, CHUNK)]))
        left -= CHUNK
    parts.append(d.flush())
    return b"".join(parts), zipfile.ZIP_DEFLATED


def build(path: Path, member: str, comp: bytes, method: int, declared: int = 2000,
          sample: Path = SAMPLE) -> None:
    """The ``sample`` log with ``member`` replaced by ``comp`` (compressed by ``method``:
    zip's deflate, or 93, zstd) while its local and central headers claim ``declared``
    bytes. ``tests/adapters/test_inspect.py`` builds its (smaller) bombs with it."""
    with zipfile.ZipFile(sample) as src:
        members = [(i, src.read(i)) for i in src.infolist()]
    with zipfile.ZipFile(path, "w") as dst:
        for info, raw in members:
            if info.filename != member:
                dst.writestr(info, raw)
        dst.writestr(member, b"{}", zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    name = member.encode()
    local = next(i for i in range(len(data)) if data[i:i + 4] == b"PK\x03\x04"
                 and data[i + 30:i + 30 + len(name)] == name)
    central = next(i for i in range(len(data)) if data[i:i + 4] == b"PK\x01\x02"
                   and data[i + 46:i + 46 + len(name)] == name)
    start = local + 30 + len(name)
    head, tail = data[:start], data[start + 2:]
    delta = len(comp) - 2
    struct.pack_into("<HIII", head, local + 8, method, 0, len(comp), declared)
    out = head + comp + tail
    central += delta
    struct.pack_into("<H", out, central + 10, method)
    struct.pack_into("<II", out, central + 20, len(comp), declared)
    eocd = out.rfind(b"PK\x05\x06")
    struct.pack_into("<I", out, eocd + 16, struct.unpack_from("<I", out, eocd + 16)[0] + delta)
    path.write_bytes(bytes(out))


CHILD = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n" + r"""
import json, sys, time, zipfile, zlib
from pathlib import Path
from measure import peak_kb
path, mode, member = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
t = time.perf_counter()
if mode == "evalatlas":
    from evalatlas.adapters.inspect import read_inspect
    items = list(read_inspect(path))
    outcome = getattr(items[0], "reason", "read")
else:  # the member inflated whole, then checked
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
        fh = zf.fp
        fh.seek(info.header_offset)
        h = fh.read(30)
        fh.seek(info.header_offset + 30 + int.from_bytes(h[26:28], "little")
                + int.from_bytes(h[28:30], "little"))
        raw = fh.read(info.compress_size)
    if info.compress_type == 93:
        import io, zstandard
        data = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(raw), read_across_frames=True).read()
    else:
        data = zlib.decompress(raw, -15)
    outcome = f"inflated {len(data):,} bytes, declared {info.file_size:,}: refused"
print(json.dumps({"s": time.perf_counter() - t, "outcome": outcome,
                  "rss_mb": peak_kb() / 1024}))
"""


def run(path: Path, mode: str, member: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode, member],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=3.0)
    ap.add_argument("--baseline-gib", type=float, default=1.0,
                    help="size for the whole-member baseline (0: skip it)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| bomb | reader | inflates to | median s | peak RSS MB | outcome |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for member, zstd in (("header.json", False), ("summaries.json", True)):
            for mode, gib in (("evalatlas", args.gib), ("whole member", args.baseline_gib)):
                if gib <= 0:
                    continue
                path = Path(tmp) / f"bomb-{member}-{gib}.eval"
                t0 = time.perf_counter()
                build(path, member, *compress(gib, zstd))
                built = time.perf_counter() - t0
                runs = [run(path, mode, member) for _ in range(args.repeats)]
                print(f"| {member} ({'zstd' if zstd else 'deflate'}, {path.stat().st_size:,} "
                      f"B, built in {built:.0f} s) | {mode} | {gib:g} GiB | "
                      f"{statistics.median(r['s'] for r in runs):.3f} | "
                      f"{statistics.median(r['rss_mb'] for r in runs):,.0f} | "
                      f"{runs[0]['outcome'][:90]} |", flush=True)
                path.unlink()


if __name__ == "__main__":
    main()
