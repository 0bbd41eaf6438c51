"""Tokens: 256 random bits, stored as SHA-256, checked against every stored hash."""

from __future__ import annotations

import hashlib

import pytest

from evalatlas.errors import ArgumentError
from evalatlas.serve.auth import add_token, authenticate, new_token, token_hash
from evalatlas.store.tokens import TokenFile


def test_tokens_are_256_bit_and_distinct():
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    assert all(len(t) == 43 for t in tokens)  # 32 bytes, URL-safe base64 without padding


def test_only_the_hash_is_stored_and_checked(tmp_path):
    file = TokenFile(tmp_path / "t")
    token = add_token(file, "ann", "submitter")
    assert token_hash(token) == hashlib.sha256(token.encode()).hexdigest()
    assert token not in (tmp_path / "t").read_bytes().decode("latin-1")
    who = authenticate(file, token)
    assert (who.name, who.role) == ("ann", "submitter")
    assert authenticate(file, token + "x") is None
    assert authenticate(file, "") is None
    with pytest.raises(ArgumentError, match="role must be one of"):
        add_token(file, "bob", "owner")
    with pytest.raises(ArgumentError, match="name must be"):
        add_token(file, "bad name\n", "reader")
