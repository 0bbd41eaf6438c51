"""evalatlas.safe_write: whole files or nothing, no temporary file left, devices streamed,
one-line errors (issue #28 point 3)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalatlas import safe_write
from evalatlas.errors import OutputError
from evalatlas.safe_write import TEMP_SUFFIX


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX))


def test_new_file_is_written_whole_with_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        safe_write.write_text(tmp_path / "a.txt", "hello\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").read_text() == "hello\n"
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644
    assert _leftovers(tmp_path) == []


def test_replacing_keeps_the_mode_and_a_failed_write_keeps_the_old_content(
        tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("old\n")
    f.chmod(0o600)
    safe_write.write_text(f, "new\n")
    assert f.read_text() == "new\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    with pytest.raises(RuntimeError), safe_write.open_output(f) as fh:
        fh.write("partial")
        raise RuntimeError("writer failed")
    assert f.read_text() == "new\n"
    with pytest.raises(KeyboardInterrupt), safe_write.open_output(f) as fh:
        fh.write("partial")
        raise KeyboardInterrupt
    assert f.read_text() == "new\n"
    assert _leftovers(tmp_path) == []


def test_injected_enospc_is_one_line_and_leaves_nothing(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError) as info:
        safe_write.write_text(tmp_path / "r.html", "x" * 100_000)
    msg = str(info.value)
    assert msg == (f"no space left on the device holding {tmp_path} (writing "
                   f"{tmp_path / 'r.html'}; nothing was written)")
    assert "\n" not in msg
    assert list(tmp_path.iterdir()) == []


def test_real_full_disk(small_tmpfs) -> None:  # type: ignore[no-untyped-def]
    disk = small_tmpfs("256k")
    (disk / "keep.txt").write_text("before\n")
    with pytest.raises(OutputError, match=r"^no space left on the device holding "):
        safe_write.write_bytes(disk / "big.bin", b"x" * (1 << 20))
    with pytest.raises(OutputError, match="no space left"):
        safe_write.write_bytes(disk / "keep.txt", b"x" * (1 << 20))
    assert sorted(p.name for p in disk.iterdir()) == ["keep.txt"]  # no partial, no temp
    assert (disk / "keep.txt").read_text() == "before\n"


def test_missing_parent_folder_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as info:
        safe_write.write_text(tmp_path / "no" / "such" / "r.html", "x")
    assert str(info.value) == (f"cannot write {tmp_path / 'no/such/r.html'}: the folder "
                               f"{tmp_path / 'no/such'} does not exist (evalatlas does not "
                               "create parent folders; create it first)")
    with pytest.raises(OutputError, match="does not exist"):
        safe_write.check_file(tmp_path / "no" / "r.html")
    with pytest.raises(OutputError, match="does not exist"):
        safe_write.make_folder(tmp_path / "no" / "out")
    assert list(tmp_path.iterdir()) == []
    assert safe_write.make_folder(tmp_path / "out").is_dir()  # the one named folder


def test_file_and_folder_mismatches(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match=r"d: it is a folder; name a file$"):
        safe_write.write_text(tmp_path / "d", "x")
    with pytest.raises(OutputError, match=r"it is a folder"):
        safe_write.check_file(tmp_path / "d")
    with pytest.raises(OutputError, match=r"is a file, not a folder"):
        safe_write.write_text(tmp_path / "f" / "x.txt", "x")
    with pytest.raises(OutputError, match=r"f: it is a file, not a folder$"):
        safe_write.make_folder(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "x"


def _char_device(tmp_path: Path, name: str, minor: int) -> Path:
    """A private copy of /dev/full (1, 7) or /dev/null (1, 3): a test must never risk the
    machine's own device nodes."""
    node = tmp_path / name
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
        with open(node, "wb"):
            pass
    except OSError as exc:
        pytest.skip(f"cannot make a device node here ({exc}); needs root and a dev mount")
    return node


def test_a_device_is_streamed_to_never_replaced(tmp_path: Path) -> None:
    full = _char_device(tmp_path, "full", 7)
    with pytest.raises(OutputError) as info:
        safe_write.write_text(full, "x" * 10_000)
    assert str(info.value) == f"no space left on the device {full}"
    assert stat.S_ISCHR(full.stat().st_mode)  # still the device node
    null = _char_device(tmp_path, "null", 3)
    safe_write.write_text(null, "fine\n")
    assert stat.S_ISCHR(null.stat().st_mode)
    assert _leftovers(tmp_path) == []
    with pytest.raises(OutputError, match="not a regular file"), \
            safe_write.temp_path(null):
        pass


def test_a_fifo_is_streamed_to(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"print(open({str(fifo)!r}).read())"],
                              stdout=subprocess.PIPE, text=True)
    safe_write.write_text(fifo, "through the pipe")
    out, _ = reader.communicate(timeout=60)
    assert out.strip() == "through the pipe"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    safe_write.write_text("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    safe_write.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_temp_path_renames_on_success_and_removes_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    with safe_write.temp_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.endswith(TEMP_SUFFIX)
        tmp.write_bytes(b"abc")
    assert target.read_bytes() == b"abc"
    with pytest.raises(ValueError), safe_write.temp_path(target) as tmp:
        tmp.write_bytes(b"partial")
        raise ValueError("COPY failed")
    assert target.read_bytes() == b"abc"
    with pytest.raises(OutputError, match=r"^no space left on the device holding"), \
            safe_write.temp_path(target) as tmp:
        tmp.write_bytes(b"partial")
        raise RuntimeError("IO Error: Could not write file: No space left on device")
    assert target.read_bytes() == b"abc"
    assert _leftovers(tmp_path) == []


def test_temp_files_of_killed_writers_are_swept_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    stale = tmp_path / f".r.html.{pid}.0123abcd{TEMP_SUFFIX}"
    stale.write_text("partial")
    live = tmp_path / f".r.html.{os.getpid()}.89abcdef{TEMP_SUFFIX}"
    live.write_text("another writer, still running")
    other = tmp_path / ".keep.tmp"
    other.write_text("not ours")
    safe_write.write_text(tmp_path / "r.html", "x")
    assert not stale.exists()
    assert live.exists() and other.exists()


def test_read_only_file_system(tmp_path: Path, read_only_mount) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "old.txt").write_text("old")
    read_only_mount(folder)
    with pytest.raises(OutputError) as info:
        safe_write.write_text(folder / "old.txt", "new")
    assert str(info.value) == (f"cannot write {folder / 'old.txt'}: read-only file system "
                               f"(folder {folder})")
    with pytest.raises(OutputError, match="read-only file system"):
        safe_write.check_file(folder / "new.txt")
    assert (folder / "old.txt").read_text() == "old"


def test_permission_denied_as_an_unprivileged_user(as_nobody) -> None:  # type: ignore[no-untyped-def]
    folder, run = as_nobody
    locked = folder / "locked"
    locked.mkdir(mode=0o755)  # owned by root: nobody may not write here
    code = ("import sys; from evalatlas import safe_write, OutputError\n"
            "try:\n"
            f"    safe_write.write_text({str(locked / 'x.txt')!r}, 'x')\n"
            "except OutputError as e:\n"
            "    print(e); sys.exit(2)\n")
    out = run([sys.executable, "-c", code])
    assert out.returncode == 2, out.stderr
    assert out.stdout.strip() == (f"cannot write {locked / 'x.txt'}: permission denied "
                                  f"(folder {locked})")
    assert list(locked.iterdir()) == []


def test_process_alive_is_false_only_for_a_process_known_to_be_gone() -> None:
    """The one liveness check of every sweep: a finished child is gone; this process,
    pid 0 and negative pids (which would probe process groups) count as alive."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert safe_write.process_alive(child.pid) is False
    assert safe_write.process_alive(os.getpid()) is True
    assert safe_write.process_alive(0) is True
    assert safe_write.process_alive(-1) is True
