"""The token file beside the store (SQLite): hashes only, shared by CLI and server."""

from __future__ import annotations

import pytest

from evalatlas.errors import StoreError
from evalatlas.store.tokens import ENV_TOKENS, TokenFile, tokens_path


def test_rows_never_hold_the_hash(tmp_path):
    tokens = TokenFile(tmp_path / "s.duckdb.tokens")
    assert tokens.rows() == [] and tokens.hashes() == []
    assert not tokens.path.exists()  # reading creates nothing
    tokens.add("alice", "submitter", "ab" * 32)
    [row] = tokens.rows()
    assert row["name"] == "alice" and row["role"] == "submitter"
    assert row["last_used_at"] is None and "ab" * 32 not in str(row)
    assert tokens.hashes() == [("alice", "submitter", "ab" * 32)]
    tokens.touch("alice")
    assert tokens.rows()[0]["last_used_at"] is not None
    assert oct(tokens.path.stat().st_mode & 0o777) == "0o600"


def test_names_are_unique_and_revoke_deletes(tmp_path):
    tokens = TokenFile(tmp_path / "t")
    tokens.add("bob", "reader", "cd" * 32)
    with pytest.raises(StoreError, match="exists already"):
        tokens.add("bob", "admin", "ef" * 32)
    assert tokens.revoke("bob") is True
    assert tokens.revoke("bob") is False
    assert tokens.hashes() == []


def test_tokens_path(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_TOKENS, raising=False)
    assert tokens_path(tmp_path / "x.duckdb") == tmp_path / "x.duckdb.tokens"
    with pytest.raises(StoreError, match=ENV_TOKENS):
        tokens_path("ducklake:postgres:dbname=atlas")
    monkeypatch.setenv(ENV_TOKENS, str(tmp_path / "lake.tokens"))
    assert tokens_path("ducklake:postgres:dbname=atlas") == tmp_path / "lake.tokens"
