"""Uploads go to disk before anything reads them: one private folder per submission.

Why: the single writer ingests one submission at a time while many are being received;
holding bodies in memory would make memory grow with concurrency. Each submission gets
its own ``mkdtemp`` folder (mode 0700) under the spool root, so concurrent ingests never
share or remove each other's files, and a name from the client can only ever be one
plain file name inside that folder. The root is emptied when the server starts (a killed
server leaves half-received uploads behind; none of them was committed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalatlas.errors import EvalAtlasError
from evalatlas.safe_write import process_alive

DEFAULT_NAME = "submission.jsonl"


class UploadTooLarge(EvalAtlasError):
    """The body is over ``max_upload_bytes`` (answered 413)."""


class BadUpload(EvalAtlasError):
    """A multipart body without a ``file`` field, or malformed (answered 422)."""


def safe_name(name: str | None) -> str:
    """A client-given file name as one safe plain name: the last path component, only
    letters, digits and ``._-`` (others become ``_``), no leading dot, at most 120
    characters; ``submission.jsonl`` when nothing is left. The extension is kept: the
    adapters recognise formats by it."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".")[-120:].lstrip(".")
    return base or DEFAULT_NAME


@dataclass
class Spooled:
    """One received upload: its folder, file, size and content hash."""

    folder: Path
    path: Path
    size: int
    sha256: str


class Spool:
    """The spool root and its per-submission folders."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def reset(self) -> int:
        """Create the root (0700) or empty it; returns how many leftovers were removed."""
        self.root.mkdir(mode=0o700, exist_ok=True)
        removed = 0
        for entry in self.root.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()
            removed += 1
        return removed

    def new_folder(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="sub-", dir=self.root))

    @staticmethod
    def remove(folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)


async def receive_raw(chunks: AsyncIterator[bytes], folder: Path, name: str,
                      max_bytes: int) -> Spooled:
    """Stream a raw body to ``folder/name``, stopping with :class:`UploadTooLarge` as
    soon as it passes ``max_bytes``."""
    path = folder / safe_name(name)
    digest, size = hashlib.sha256(), 0
    with path.open("xb") as fh:
        async for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise UploadTooLarge(f"the upload is over the limit of {max_bytes} bytes")
            digest.update(chunk)
            fh.write(chunk)
    return Spooled(folder, path, size, digest.hexdigest())


async def receive_multipart(chunks: AsyncIterator[bytes], content_type: str, folder: Path,
                            name: str | None, max_bytes: int) -> Spooled:
    """Stream a ``multipart/form-data`` body; the part named ``file`` goes to disk (its
    filename, unless ``name`` is given), the rest is ignored. The body as a whole is held
    to ``max_bytes``; the content hash is of the file's bytes."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise BadUpload("multipart body without a boundary")
    state: dict[str, Any] = {"headers": {}, "header_field": b"", "header_value": b"", "fh": None,
                   "path": None, "done": False}
    digest, size = hashlib.sha256(), [0]

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["header_field"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state["header_value"] += data[start:end]

    def on_header_end() -> None:
        state["headers"][state["header_field"].lower()] = state["header_value"]
        state["header_field"] = state["header_value"] = b""

    def on_headers_finished() -> None:
        disp = state["headers"].get(b"content-disposition", b"")
        _, opts = parse_options_header(disp)
        if opts.get(b"name") == b"file" and state["path"] is None:
            filename = opts.get(b"filename", b"").decode("utf-8", "replace")
            target = folder / safe_name(name or filename)
            state["path"] = target
            state["fh"] = target.open("xb")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if state["fh"] is not None:
            digest.update(data[start:end])
            state["fh"].write(data[start:end])

    def on_part_end() -> None:
        if state["fh"] is not None:
            state["fh"].close()
            state["fh"] = None
            state["done"] = True
        state["headers"] = {}

    parser = MultipartParser(boundary, {
        "on_header_field": on_header_field, "on_header_value": on_header_value,
        "on_header_end": on_header_end, "on_headers_finished": on_headers_finished,
        "on_part_data": on_part_data, "on_part_end": on_part_end})
    try:
        async for chunk in chunks:
            size[0] += len(chunk)
            if size[0] > max_bytes:
                raise UploadTooLarge(f"the upload is over the limit of {max_bytes} bytes")
            parser.write(chunk)
        parser.finalize()
    except (UploadTooLarge, OSError):
        raise
    except Exception as exc:  # the parser's own errors: a malformed body
        raise BadUpload(f"malformed multipart body: {exc}") from exc
    finally:
        if state["fh"] is not None:
            state["fh"].close()
    if not state["done"] or state["path"] is None:
        raise BadUpload("multipart body without a complete field named 'file'")
    path: Path = state["path"]
    return Spooled(folder, path, path.stat().st_size, digest.hexdigest())


def default_spool_root(db: str) -> Path:
    """``<store>.spool`` beside a store file or a lake's catalog file (one server at a
    time writes either); otherwise (a PostgreSQL catalog, which several servers may
    write at once) this server's own folder in the temporary folder
    (:func:`server_spool`)."""
    from evalatlas.store.lake_location import local_file

    beside = local_file(str(db))
    if beside is None or (":" in str(db).split("/")[0] and not str(db).startswith(
            "ducklake:") and not Path(db).exists()):
        return server_spool(Path(tempfile.gettempdir()) / f"evalatlas-spool-{os.getuid()}")
    return Path(str(beside) + ".spool")


def server_spool(shared: Path) -> Path:
    """``shared/server-<pid>``: a spool no other server empties. Why: a server empties
    its spool when it starts (a killed server's uploads were never committed), and two
    servers sharing one root would delete each other's uploads and stages mid-ingest.
    The folders of servers no longer running are removed here instead."""
    shared.mkdir(mode=0o700, exist_ok=True)
    for entry in shared.iterdir():
        pid = entry.name.removeprefix("server-")
        if entry.name.startswith("server-") and pid.isdigit() and not process_alive(int(pid)) \
                and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
    return shared / f"server-{os.getpid()}"
