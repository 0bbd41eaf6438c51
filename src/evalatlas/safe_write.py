"""Every file evalatlas writes goes through here: whole or not at all, with one-line errors.

Why one module: exports, reports, summaries, matrices, schemas and the store each wrote
files their own way, and each failed its own way (tracebacks on a missing folder, a
partial ``r.html`` on a full disk, ``export jsonl /dev/full`` replacing the device node
with a regular file). The rules, for every writer:

- **Folders.** evalatlas creates the file, or the one output folder, you name, never the
  folders above it: a missing parent folder is an error naming it (as ``cp`` and
  ``mkdir`` without ``-p``). Folder outputs (``export parquet DIR``, ``export eee DIR``,
  ``report --static DIR``, ``schema --write DIR``) are created when their parent exists.
- **Whole files only.** A regular file is written to a temporary file in the same
  folder (``.NAME.PID.RANDOM.evalatlas-tmp``), flushed, fsynced and renamed over the
  target, so the target holds the old content or the new, never a part. The temporary
  file is removed on any error or interrupt; one left by a killed process is removed by
  the next write into the same folder (:func:`sweep_temp_files`).
- **Never replace what is not a regular file.** A character device, FIFO or socket
  (``/dev/full``, ``/dev/stdout``, a pipe) is opened and streamed to, and its errors are
  reported; ``-`` means standard output. A symbolic link is followed: the file it points
  to is replaced, the link stays.
- **One line per failure.** :class:`~evalatlas.errors.OutputError` names the path and the
  reason in words ("no space left on the device holding /mnt/out", "read-only file
  system", "permission denied", "/x is a folder").
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from evalatlas.errors import OutputError

STDOUT = "-"
"""The output path that means standard output."""

TEMP_SUFFIX = ".evalatlas-tmp"
_TEMP = re.compile(r"^\..*\.(\d+)\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX) + "$")

_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file is too large for the file system",
    errno.EPIPE: "the reader closed the pipe",
}

_TEXT_REASONS = (
    ("no space left on device", errno.ENOSPC),
    ("disk quota exceeded", errno.EDQUOT),
    ("read-only file system", errno.EROFS),
    ("permission denied", errno.EACCES),
)


def errno_in_text(text: str) -> int | None:
    """The errno an error message from another library (DuckDB, Arrow) spells out in
    words, or None: those raise their own exception types with the OS's text inside."""
    low = text.lower()
    for words, code in _TEXT_REASONS:
        if words in low:
            return code
    return None


def reason(exc: BaseException) -> str:
    """The reason of an OS error in a few words (no errno numbers, no traceback)."""
    code = exc.errno if isinstance(exc, OSError) else errno_in_text(str(exc))
    if code in _REASONS:
        return _REASONS[code]
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def output_error(path: str | os.PathLike[str], exc: BaseException) -> OutputError:
    """The one-line error for failing to write ``path`` because of ``exc``.

    A full disk names the folder whose device is full (where the space is needed), so the
    user knows which disk to clear."""
    path = Path(path)
    code = exc.errno if isinstance(exc, OSError) else errno_in_text(str(exc))
    if code in (errno.ENOSPC, errno.EDQUOT):
        if _is_device(path):
            return OutputError(f"no space left on the device {path}")
        return OutputError(f"no space left on the device holding {path.parent} (writing "
                           f"{path}; nothing was written)" if code == errno.ENOSPC else
                           f"disk quota exceeded on {path.parent} (writing {path}; "
                           "nothing was written)")
    return OutputError(f"cannot write {path}: {reason(exc)}")


def _is_device(path: Path) -> bool:
    with contextlib.suppress(OSError):
        return not stat.S_ISREG(os.stat(path).st_mode) and not path.is_dir()
    return False


def _writable_folder(folder: Path, target: Path) -> None:
    """Raise OutputError unless ``folder`` exists, is a folder and can take new files."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise OutputError(f"cannot write {target}: the folder {folder} does not exist "
                          "(evalatlas does not create parent folders; create it first)"
                          ) from None
    except NotADirectoryError:
        raise OutputError(f"cannot write {target}: a part of {folder} is a file, "
                          "not a folder") from None
    except OSError as exc:
        raise output_error(target, exc) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {target}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        read_only = False
        with contextlib.suppress(OSError, AttributeError):
            read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        why = "read-only file system" if read_only else "permission denied"
        raise OutputError(f"cannot write {target}: {why} (folder {folder})")


def check_file(path: str | os.PathLike[str]) -> None:
    """Fail early (before the work) when ``path`` cannot be written as a file: it is a
    folder, its folder is missing, a file or not writable. ``-`` and devices pass."""
    if str(path) == STDOUT:
        return
    target = Path(os.path.realpath(path))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise OutputError(f"cannot write {path}: a part of the path is a file, "
                          "not a folder") from None
    except OSError as exc:
        raise output_error(path, exc) from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {path}: it is a folder; name a file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return  # a device or FIFO: streamed to, its own errors reported
    _writable_folder(target.parent, Path(path))


def check_folder(path: str | os.PathLike[str]) -> None:
    """Fail early when ``path`` cannot be used as an output folder: it is a file, or it
    is missing and its parent folder is missing or not writable."""
    folder = Path(path)
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        _writable_folder(folder.parent, folder)
        return
    except NotADirectoryError:
        raise OutputError(f"cannot write {folder}: a part of the path is a file, "
                          "not a folder") from None
    except OSError as exc:
        raise output_error(folder, exc) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write into {folder}: it is a file, not a folder")
    _writable_folder(folder, folder)


def make_folder(path: str | os.PathLike[str]) -> Path:
    """Create the output folder ``path`` (its parent must exist); return it."""
    folder = Path(path)
    check_folder(folder)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise output_error(folder, exc) from exc
    return folder


def sweep_temp_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files of writers in ``folder`` whose process is gone (killed
    before it could clean up); return them. Files of live processes are kept."""
    removed: list[Path] = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            m = _TEMP.match(entry.name)
            if m is None or process_alive(int(m.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` may still be running, for sweeping the leftovers of dead
    processes (temp folders named after their pid). When unsure, alive: a pid of 0 or
    less (0 would probe our own process group), Windows (no signal 0), another user's
    process (``EPERM``). The one check, used by every sweep (safe_write's temp files,
    the fast JSONL path's chunk folders, serve's per-server spool folders)."""
    if pid <= 0 or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def _temp_name(target: Path) -> str:
    stem = target.name[:100]
    return f".{stem}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def _regular_target(path: Path) -> tuple[Path, os.stat_result | None]:
    """The file a write to ``path`` replaces (symlinks followed) and its stat, if any."""
    target = Path(os.path.realpath(path))
    try:
        return target, os.stat(target)
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise output_error(path, exc) from exc


@contextlib.contextmanager
def temp_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` for a writer that takes a path (DuckDB ``COPY``,
    pyarrow); renamed over ``path`` when the block ends without error, removed
    otherwise. ``path`` must be (or become) a regular file."""
    path = Path(path)
    target, st = _regular_target(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"cannot write {path}: it is not a regular file "
                          "(this output is written by name and renamed into place)")
    _writable_folder(target.parent, path)
    sweep_temp_files(target.parent)
    tmp = target.parent / _temp_name(target)
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, target)
    except OutputError:  # already one line (a nested write): not wrapped again
        _unlink(tmp)
        raise
    except OSError as exc:
        _unlink(tmp)
        raise output_error(path, exc) from exc
    except BaseException as exc:
        _unlink(tmp)
        if errno_in_text(str(exc)) is not None and not isinstance(exc, OutputError):
            raise output_error(path, exc) from exc
        raise


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str], *, binary: bool = False,
                encoding: str = "utf-8", newline: str | None = None) -> Iterator[IO[Any]]:
    """A file object whose content lands at ``path`` whole, or not at all.

    ``-`` streams to standard output; a device or FIFO is opened and streamed to; a
    regular file (or a new one) is written through a temporary file, fsynced and
    renamed. Every OS error becomes :class:`~evalatlas.errors.OutputError` (one line);
    an interrupt (``KeyboardInterrupt``) removes the temporary file and propagates.
    """
    if str(path) == STDOUT:
        out = sys.stdout.buffer if binary else sys.stdout
        try:
            yield out
            out.flush()
        except OutputError:
            raise
        except OSError as exc:
            raise output_error("<stdout>", exc) from exc
        return
    path = Path(path)
    target, st = _regular_target(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {path}: it is a folder; name a file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        yield from _stream(target, path, binary, encoding, newline)
        return
    _writable_folder(target.parent, path)
    sweep_temp_files(target.parent)
    tmp = target.parent / _temp_name(target)
    mode = st.st_mode & 0o7777 if st is not None else 0o666  # umask applies to new files
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     mode)
    except OSError as exc:
        raise output_error(path, exc) from exc
    try:
        fh = (os.fdopen(fd, "wb") if binary
              else os.fdopen(fd, "w", encoding=encoding, newline=newline))
    except BaseException:
        os.close(fd)
        _unlink(tmp)
        raise
    try:
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OutputError:
        _unlink(tmp)
        raise
    except OSError as exc:
        _unlink(tmp)
        raise output_error(path, exc) from exc
    except BaseException:
        _unlink(tmp)
        raise


def _stream(target: Path, shown: Path, binary: bool, encoding: str,
            newline: str | None) -> Iterator[IO[Any]]:
    try:
        fh = (open(target, "wb") if binary  # noqa: SIM115 - closed below
              else open(target, "w", encoding=encoding, newline=newline))  # noqa: SIM115
    except OSError as exc:
        raise output_error(shown, exc) from exc
    try:
        with fh:
            yield fh
            fh.flush()
    except OutputError:
        raise
    except OSError as exc:
        raise output_error(shown, exc) from exc


def write_text(path: str | os.PathLike[str], text: str, *, newline: str | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` by the rules above."""
    with open_output(path, newline=newline) as fh:
        fh.write(text)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` by the rules above."""
    with open_output(path, binary=True) as fh:
        fh.write(data)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
