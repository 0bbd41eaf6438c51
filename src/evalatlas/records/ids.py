"""Stable identifiers and secret redaction for the record contract (seed 002).

The ids are the join keys of the agent x task matrix, so they must be byte-for-byte
reproducible across processes and machines. The recipes follow cube-harness exactly
(``json.dumps(..., sort_keys=True)`` with Python's default separators and
``ensure_ascii=True``), so an evalatlas id equals the upstream id for the same config.

Secrets are redacted *before* hashing: two runs that differ only in their API key are
the same agent, and an id must never be a function of a secret.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from evalatlas.errors import UnsafeIdError

REDACTED = "***REDACTED***"
"""The fixed marker that replaces a credential-looking value."""

# A key is a credential when, after lower-casing and turning every non-alphanumeric into
# "_", it *ends* with one of these words. "max_tokens" or "token_limit" do not match,
# "openai_api_key", "hf_token" and "Authorization" do.
_SECRET_KEY = re.compile(
    r"(^|_)("
    r"api_?key|apikey|secret|secret_?key|client_?secret|password|passwd|pwd|passphrase"
    r"|token|access_?token|refresh_?token|auth_?token|bearer_?token|session_?token|id_?token"
    r"|authorization|auth|credentials?|private_?key|access_?key|access_?key_?id"
    r"|cookie|set_?cookie|x_?api_?key"
    r")$"
)
# Values that are credentials whatever their key is called (OpenAI/Anthropic style keys,
# GitHub and Hugging Face tokens, bearer headers).
_SECRET_VALUE = re.compile(
    r"^(sk-[A-Za-z0-9_\-]{16,}|sk-ant-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|hf_[A-Za-z0-9]{20,}|Bearer\s+\S{16,})$"
)


def is_secret_key(key: str) -> bool:
    """True when a config key names a credential (see module docstring for the rule)."""
    norm = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")
    return bool(_SECRET_KEY.search(norm))


def redact_secrets(value: Any) -> Any:
    """Return a copy of ``value`` with every credential replaced by :data:`REDACTED`.

    Applied to agent configs before storing, exporting and hashing. Keys are judged by
    :func:`is_secret_key`; string values that look like well-known key formats are
    redacted under any key. ``None`` values are left alone (nothing to leak).
    """
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and v is not None and not isinstance(
                v, dict | list
            ):
                out[k] = REDACTED
            else:
                out[k] = redact_secrets(v)
        return out
    if isinstance(value, list):
        return [redact_secrets(v) for v in value]
    if isinstance(value, str) and _SECRET_VALUE.match(value.strip()):
        return REDACTED
    return value


def canonical_json(value: Any) -> str:
    """Serialise like cube-harness: sorted keys, default separators, ASCII only."""
    return json.dumps(value, sort_keys=True)


def agent_id_for(config: dict[str, Any]) -> str:
    """``agent_id`` = SHA-256 hex of the (redacted) agent config as sorted-key JSON.

    Seed 002 invariant 1; recipe from cube-harness ``AgentInfo.from_agent_config``.
    """
    payload = canonical_json(redact_secrets(config)).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()


def experiment_id_for(experiment_name: str, output_dir: str | Path) -> str:
    """``experiment_id`` = first 16 hex chars of SHA-256(experiment_name + str(output_dir)).

    Seed 002 invariant 2: plain string concatenation, no separator (as upstream).
    """
    return hashlib.sha256(f"{experiment_name}{output_dir}".encode()).hexdigest()[:16]


def task_version_hash_for(task_config: dict[str, Any] | str) -> str:
    """``task_version_hash`` = SHA-256 of the task config JSON (seed 002 invariant 3).

    A string is hashed as given (it is already the serialised config, e.g. upstream's
    pydantic ``model_dump_json``); a dict is serialised with :func:`canonical_json` so
    key order does not change the hash.
    """
    text = task_config if isinstance(task_config, str) else canonical_json(task_config)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
ARCHIVED_MARKER = ".archived_"


def check_safe_id(value: str, what: str = "trajectory_id") -> str:
    """Reject an id that could escape the directory it names; return it unchanged.

    Rejected: empty, ``.``/``..`` or any ``..``, path separators ``/`` and ``\\``, NUL
    and other control characters, absolute or drive-letter paths, and the
    ``.archived_`` marker cube-harness uses for retried attempts (such an id would be
    skipped on load).
    """
    if not isinstance(value, str) or value == "":
        raise UnsafeIdError(f"{what} must be a non-empty string, got {value!r}")
    if ".." in value or value == ".":
        raise UnsafeIdError(f"{what} {value!r} contains '..' or is '.', which could escape")
    if "/" in value or "\\" in value:
        raise UnsafeIdError(f"{what} {value!r} contains a path separator")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UnsafeIdError(f"{what} {value!r} contains NUL or a control character")
    if _WINDOWS_DRIVE.match(value):
        raise UnsafeIdError(f"{what} {value!r} looks like an absolute (drive) path")
    if ARCHIVED_MARKER in value:
        raise UnsafeIdError(f"{what} {value!r} contains the retried-attempt marker")
    if len(value.encode("utf-8")) > 255:
        raise UnsafeIdError(f"{what} is longer than 255 bytes and cannot name a directory")
    return value
