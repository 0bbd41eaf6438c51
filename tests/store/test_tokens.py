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


def test_current_hashes_see_every_change_by_another_writer(tmp_path):
    path = tmp_path / "s.duckdb.tokens"
    server = TokenFile(path)  # the server's view: kept in memory between changes
    assert server.current_hashes() == []  # no file yet
    cli = TokenFile(path)  # `evalatlas tokens add/revoke` in another process
    cli.add("alice", "submitter", "ab" * 32)
    assert server.current_hashes() == [("alice", "submitter", "ab" * 32)]
    assert server.current_hashes() == server.current_hashes()  # unchanged: no re-read
    cli.add("bob", "reader", "cd" * 32)
    assert {h[0] for h in server.current_hashes()} == {"alice", "bob"}
    assert cli.revoke("alice")
    assert server.current_hashes() == [("bob", "reader", "cd" * 32)]
    for suffix in ("", "-wal", "-shm"):  # removed: nobody's token counts any more
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    assert server.current_hashes() == []
    TokenFile(path).add("carol", "admin", "ef" * 32)  # a new file in its place
    assert server.current_hashes() == [("carol", "admin", "ef" * 32)]
