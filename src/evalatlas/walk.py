"""One safe directory walk, shared by ``ingest`` and ``codequality``.

Why: input trees come from other people's machines. A symlink loop made the old walk
hang or ingest the same file dozens of times, a FIFO hung format detection (opening a
FIFO blocks until a writer appears), and a symlink to ``/dev/zero`` or to a file outside
the tree was read as if it were input. The rules here:

- a symlink is followed only when its target lies inside the walked tree (the resolved
  root); one that leaves the tree, dangles, or points at something already visited
  (a loop, or a second name of the same file or directory) is skipped;
- only regular files and directories are returned: FIFOs, sockets, character and block
  devices are skipped without ever being opened;
- every skipped path is recorded as a :class:`Skipped` (path and reason), so the caller
  can name it in its report instead of dropping it silently.

Nothing here opens a file, so nothing here can block.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


@dataclass(frozen=True)
class Skipped:
    """A path the walk did not return, and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: skipped, {self.reason}"


def _kind_name(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass
class TreeWalk:
    """The state of one walk: the resolved root, what was visited, what was skipped.

    Use :meth:`classify` on each path before touching it (``"dir"``, ``"file"`` or None
    when skipped) and :meth:`children` to list a directory. Explicitly named roots may
    be symlinks (the user chose them); everything found below follows the rules above.
    """

    root: Path
    skipped: list[Skipped] = field(default_factory=list)
    _real_root: str = ""
    _seen: dict[tuple[int, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._real_root = os.path.realpath(self.root)

    def _skip(self, path: Path, reason: str) -> None:
        self.skipped.append(Skipped(str(path), reason))

    def classify(self, path: Path, *, explicit: bool = False) -> str | None:
        """``"dir"`` or ``"file"`` when ``path`` may be walked or read, else None (and
        the reason is recorded). ``explicit``: the user named this path."""
        try:
            lst = os.lstat(path)
        except OSError as exc:
            self._skip(path, f"cannot stat: {exc.strerror or exc}")
            return None
        if stat.S_ISLNK(lst.st_mode):
            target = os.path.realpath(path)
            if not explicit and not _inside(target, self._real_root):
                self._skip(path, f"symlink leaves the tree (-> {target})")
                return None
            try:
                st = os.stat(path)
            except OSError:
                self._skip(path, f"broken symlink (-> {os.readlink(path)})")
                return None
        else:
            st = lst
        if stat.S_ISDIR(st.st_mode):
            kind = "dir"
        elif stat.S_ISREG(st.st_mode):
            kind = "file"
        else:
            self._skip(path, f"{_kind_name(st.st_mode)}, not a regular file")
            return None
        key = (st.st_dev, st.st_ino)
        first = self._seen.get(key)
        if first is not None:
            what = "symlink loop" if kind == "dir" and _inside(first, str(path)) else \
                "already visited"
            self._skip(path, f"{what}: same {'directory' if kind == 'dir' else 'file'} "
                       f"as {first}")
            return None
        self._seen[key] = str(path)
        return kind

    def children(self, directory: Path, skip: Callable[[str], bool] | None = None
                 ) -> list[Path]:
        """Sorted entries of ``directory`` (``skip(name)`` drops some by name); an
        unreadable directory is recorded as skipped and yields nothing."""
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            self._skip(directory, f"cannot list directory: {exc.strerror or exc}")
            return []
        return [directory / n for n in names if skip is None or not skip(n)]


def walk_files(
    root: Path,
    *,
    skip_dir: Callable[[str], bool] | None = None,
    keep: Callable[[Path], bool] | None = None,
    walk: TreeWalk | None = None,
) -> Iterator[Path]:
    """Every regular file under ``root`` (or ``root`` itself), depth first, sorted.

    ``skip_dir(name)`` prunes directories by name, ``keep(path)`` filters files before
    they are stat-ed (so a FIFO named ``x.py`` is reported, one named ``x.log`` is not).
    Skipped paths accumulate in ``walk.skipped`` (pass a :class:`TreeWalk` to read them).
    """
    w = walk or TreeWalk(root)
    kind = w.classify(root, explicit=True)
    if kind == "file":
        yield root
        return
    if kind is None:
        return
    stack = [root]
    while stack:
        d = stack.pop()
        subdirs: list[Path] = []
        for child in w.children(d):
            try:
                mode = os.lstat(child).st_mode
            except OSError:
                mode = 0  # vanished or unreadable: classify records why
            if stat.S_ISDIR(mode) and skip_dir is not None and skip_dir(child.name):
                continue
            if not stat.S_ISDIR(mode) and not stat.S_ISLNK(mode) and keep is not None \
                    and not keep(child):
                continue  # a file we would not read anyway (README, log ...): no note
            k = w.classify(child)
            if k == "dir":
                if skip_dir is None or not skip_dir(child.name):
                    subdirs.append(child)
            elif k == "file" and (keep is None or keep(child)):
                yield child
        stack.extend(reversed(subdirs))
