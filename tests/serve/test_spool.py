"""Upload names stay inside the submission's folder; the spool is emptied at start."""

from __future__ import annotations

import asyncio

import pytest

from evalatlas.serve.spool import (
    BadUpload,
    Spool,
    UploadTooLarge,
    receive_multipart,
    receive_raw,
    safe_name,
)


@pytest.mark.parametrize(("given", "expected"), [
    ("run.jsonl.zst", "run.jsonl.zst"),
    ("../../etc/passwd", "passwd"),
    ("..\\..\\x.eval", "x.eval"),
    ("..", "submission.jsonl"),
    (".hidden.jsonl", "hidden.jsonl"),
    ("a b\x00c\n.jsonl", "a_b_c_.jsonl"),
    (None, "submission.jsonl"),
    ("", "submission.jsonl"),
])
def test_safe_name(given, expected):
    assert safe_name(given) == expected


def _chunks(*parts: bytes):
    async def gen():
        for p in parts:
            yield p
    return gen()


def test_spool_reset_and_private_folders(tmp_path):
    spool = Spool(tmp_path / "spool")
    spool.reset()
    a, b = spool.new_folder(), spool.new_folder()
    assert a != b and oct(a.stat().st_mode & 0o777) == "0o700"
    (a / "left.jsonl").write_text("x")
    assert spool.reset() == 2 and list(spool.root.iterdir()) == []


def test_receive_raw_limits_while_streaming(tmp_path):
    got = asyncio.run(receive_raw(_chunks(b"ab", b"cd"), tmp_path, "../f.jsonl", 10))
    assert got.path == tmp_path / "f.jsonl" and got.size == 4 and got.path.read_bytes() == b"abcd"
    with pytest.raises(UploadTooLarge):
        asyncio.run(receive_raw(_chunks(b"x" * 6, b"y" * 6), tmp_path, "g.jsonl", 10))


def test_receive_multipart(tmp_path):
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
            b"filename=\"../../up.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            b"{\"a\": 1}\n\r\n--XyZ--\r\n")
    got = asyncio.run(receive_multipart(_chunks(body[:30], body[30:]),
                                        "multipart/form-data; boundary=XyZ", tmp_path,
                                        None, 10_000))
    assert got.path == tmp_path / "up.jsonl" and got.path.read_bytes() == b'{"a": 1}\n'
    no_file = body.replace(b'name="file"', b'name="other"')
    with pytest.raises(BadUpload, match="'file'"):
        asyncio.run(receive_multipart(_chunks(no_file), "multipart/form-data; boundary=XyZ",
                                      tmp_path / "x", None, 10_000))
    with pytest.raises(BadUpload, match="boundary"):
        asyncio.run(receive_multipart(_chunks(body), "multipart/form-data", tmp_path, None,
                                      10_000))


def test_servers_sharing_a_spool_root_never_empty_each_others(tmp_path):
    """A PostgreSQL lake's servers share the temporary folder's spool root: each gets
    its own folder, and only the folders of servers no longer running are removed."""
    import os
    import subprocess
    import sys

    from evalatlas.serve.spool import server_spool

    shared = tmp_path / "shared"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = shared / f"server-{int(gone.stdout)}"
    live = shared / f"server-{os.getppid()}"  # this test's parent: running
    for folder in (dead, live):
        (folder / "sub-x").mkdir(parents=True)
    mine = server_spool(shared)
    assert mine == shared / f"server-{os.getpid()}"
    assert not dead.exists() and (live / "sub-x").is_dir()
    Spool(mine).reset()
    assert (live / "sub-x").is_dir()
