"""A real ``evalatlas serve`` in a subprocess on 127.0.0.1, for the serve tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

EVALATLAS = str(Path(sys.executable).with_name("evalatlas"))
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(db: Path | str, *args: str, check: bool = True, **kw: Any
        ) -> subprocess.CompletedProcess:
    """Run ``evalatlas --db DB ARGS`` and return the finished process."""
    proc = subprocess.run([EVALATLAS, "--db", str(db), *args], capture_output=True,
                          text=True, timeout=120, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"evalatlas {' '.join(args)} failed: {proc.stderr}")
    return proc


def add_token(db: Path | str, name: str, role: str) -> str:
    out = cli(db, "tokens", "add", name, "--role", role, "--format", "json").stdout
    return json.loads(out)["token"]


class Server:
    """``evalatlas serve`` on a free port; ``url``, ``log`` (the access log), ``stop()``."""

    def __init__(self, db: Path, *args: str, env: dict[str, str] | None = None,
                 location: str | None = None) -> None:
        self.db = db
        self.location = location or str(db)
        """What ``--db`` gets (a ``ducklake:`` location; ``db`` names the log files)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = db.with_name(db.name + f".{self.port}.access.log")
        self.stderr = db.with_name(db.name + f".{self.port}.stderr")
        self.args = args
        self.env = {**os.environ, **(env or {})}
        self.start()

    def start(self) -> None:
        self._err = self.stderr.open("ab")
        self.proc = subprocess.Popen(
            [EVALATLAS, "--db", self.location, "serve", "--port", str(self.port),
             "--access-log", str(self.log), *self.args],
            stdout=subprocess.DEVNULL, stderr=self._err, env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: "
                                     f"{self.stderr.read_text()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("server did not start in 60 s")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._err.close()
        return code

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)
