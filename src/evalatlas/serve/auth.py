"""API tokens: how they are made, hashed and checked.

A token is ``secrets.token_urlsafe(32)``: 256 random bits. Only its SHA-256 is stored
(:mod:`evalatlas.store.tokens`). A fast, unsalted hash is right here, unlike for
passwords: salts and slow hashes (bcrypt, scrypt) exist to stop guessing of low-entropy
secrets, and 2**256 candidates cannot be guessed at any hash speed; a fast hash keeps the
per-request check cheap. Every stored hash is compared with :func:`hmac.compare_digest`
(constant time, no early exit), so response timing says nothing about a token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from evalatlas.store.tokens import ROLES, TokenFile

READ_ROLES = frozenset(ROLES)
"""Who may read (leaderboard, compare, matrix, atlas, report): every role."""
SUBMIT_ROLES = frozenset({"submitter", "admin"})
ADMIN_ROLES = frozenset({"admin"})


@dataclass(frozen=True)
class Principal:
    """Who made a request: the token's name and role (never the token)."""

    name: str
    role: str

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def new_token() -> str:
    """A new 256-bit random token, URL-safe text (43 characters)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The stored form of a token: hex SHA-256 of its UTF-8 bytes (see the module
    docstring for why no salt or slow hash)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def authenticate(tokens: TokenFile, token: str) -> Principal | None:
    """The principal of ``token``, None when no stored token matches. Every stored hash is
    compared in constant time (the loop does not stop at a match)."""
    digest = token_hash(token).encode()
    found: Principal | None = None
    for name, role, stored in tokens.current_hashes():
        if hmac.compare_digest(digest, stored.encode()):
            found = Principal(name, role)
    return found


def add_token(tokens: TokenFile, name: str, role: str) -> str:
    """Create a token for ``name`` with ``role``; returns it (the only time it exists
    outside its holder's hands)."""
    from evalatlas.errors import ArgumentError

    if role not in ROLES:
        raise ArgumentError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if not name or len(name) > 100 or not all(c.isalnum() or c in "-_.@" for c in name):
        raise ArgumentError(f"name must be 1 to 100 letters, digits or - _ . @, got {name!r}")
    token = new_token()
    tokens.add(name, role, token_hash(token))
    return token
