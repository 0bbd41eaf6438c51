"""A refusal names an option the user has: ingest's, or the server's (issue 24)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalatlas.errors import InputError
from evalatlas.records.jsonio import read_json_file
from evalatlas.records.limits import MiB, ReadLimits, using


def test_ingest_limits_name_ingest_options():
    lim = ReadLimits()
    assert lim.raise_hint("max_record_bytes") == "raise it with --max-record-bytes"
    assert lim.raise_hint("max_line_bytes") == "raise it with --max-line-bytes"
    assert lim.raise_hint("max_json_depth") == "raise it with --max-json-depth"


def test_server_limits_name_the_servers_max_file_bytes_or_say_fixed():
    # a server started with --max-file-bytes 2MB: a record is bounded by it
    small = ReadLimits(max_file_bytes=2_000_000, max_record_bytes=2_000_000, set_by="serve")
    assert small.raise_hint("max_record_bytes") == "raise it with the server's --max-file-bytes"
    assert small.raise_hint("max_file_bytes") == "raise it with the server's --max-file-bytes"
    # the default 4 GiB: a record is held to ingest's 256 MiB, which the server cannot raise
    big = ReadLimits(max_file_bytes=4 << 30, max_record_bytes=256 * MiB, set_by="serve")
    assert big.raise_hint("max_record_bytes") == "a fixed limit of evalatlas serve"
    assert big.raise_hint("max_line_bytes") == "a fixed limit of evalatlas serve"
    for hint in (small.raise_hint("max_record_bytes"), big.raise_hint("max_record_bytes")):
        assert "--max-record-bytes" not in hint


@pytest.mark.parametrize(("set_by", "words"), [
    ("ingest", "(raise it with --max-record-bytes)"),
    ("serve", "(raise it with the server's --max-file-bytes)")])
def test_json_document_over_the_record_limit(tmp_path: Path, set_by, words):
    doc = tmp_path / "big.json"
    doc.write_text('{"a": "' + "x" * 2000 + '"}')
    with using(ReadLimits(max_file_bytes=1000, max_record_bytes=1000, set_by=set_by)), \
            pytest.raises(InputError) as caught:
        read_json_file(doc)
    assert "over the 1,000-byte limit for one JSON document" in str(caught.value)
    assert words in str(caught.value)
