"""A bounded Schemathesis run against ``/openapi.json``: a few hundred generated requests
(deterministic), no 5xx, and every answer as documented (status, media type, schema)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from server import EXAMPLES, Server, add_token, cli

pytest.importorskip("schemathesis")

SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path):
    db = tmp_path / "f.duckdb"
    cli(db, "ingest", str(EXAMPLES / "jsonl"))
    token = add_token(db, "fuzz", "admin")
    server = Server(db, "--rate-limit", "off", "--max-upload-bytes", "1MB")
    try:
        proc = subprocess.run(
            [SCHEMATHESIS, "run", server.url + "/openapi.json", "--max-examples", "10",
             "--generation-deterministic", "--phases", "examples,coverage,fuzzing",
             "--checks", "not_a_server_error,status_code_conformance,"
             "content_type_conformance,response_schema_conformance",
             "--header", f"Authorization: Bearer {token}", "--no-color"],
            capture_output=True, text=True, timeout=240, cwd=tmp_path)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-4000:]
        answered = [json.loads(line) for line in server.log.read_text().splitlines()]
        assert 200 <= len(answered) <= 1000, out[-2000:]  # bounded: a few hundred
        assert [a for a in answered if a["status"] >= 500] == []
        assert {a["status"] for a in answered} >= {200, 404, 415, 422}
    finally:
        assert server.stop() == 0
