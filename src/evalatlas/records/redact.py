"""The one redaction function: credentials out of every string evalatlas stores or prints.

Why one function: a rule that only one of several scrubbers knows is a leak in the
others (the judge client and the EEE export once disagreed). Everything that stores,
exports or prints text calls :func:`redact` (structures) or :func:`redact_text` (one
string); nothing else decides what a secret is.

What counts as a secret (each replaced by :data:`REDACTED`):

1. **Values under credential-named keys**, at any depth of dicts and lists: a key whose
   name, lower-cased with runs of non-alphanumerics turned into ``_``, *ends* with
   ``api_key``, ``apikey``, ``secret``, ``secret_key``, ``client_secret``, ``password``,
   ``passwd``, ``pwd``, ``passphrase``, ``token`` (``access_token``, ``hf_token`` ...),
   ``auth``, ``authorization``, ``credential(s)``, ``private_key``, ``access_key(_id)``,
   ``cookie``. Every non-null leaf below such a key is replaced (booleans and numbers
   too). ``max_tokens``, ``token_limit`` or ``tokenizer`` are not credentials.
2. **Well-known key formats** anywhere in text (not glued to a preceding letter or
   digit): OpenAI/Anthropic ``sk-...`` (incl. ``sk-proj-``, ``sk-ant-``), Stripe-style
   ``sk_live_``/``rk_live_``, GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and
   ``github_pat_``, Hugging Face ``hf_``, AWS access key ids ``AKIA``/``ASIA``, Google API
   keys ``AIza...`` and OAuth tokens ``ya29.``, Slack ``xox?-``, Groq ``gsk_``, xAI
   ``xai-``, Perplexity ``pplx-``, Replicate ``r8_``, JSON Web Tokens, PEM private keys.
3. **Assignments and headers** in text: ``NAME=value``, ``NAME: value``, ``"name": "v"``,
   ``--name value`` where NAME ends with a credential word as in rule 1 (so
   ``OPENAI_API_KEY=...``, ``aws_secret_access_key = ...``, ``Authorization: Bearer ...``,
   ``{'api_key': '...'}`` in an error message); ``Bearer <token>``; the password of a
   URL (``https://user:pw@host``).

Not redacted: a bare 40-character AWS *secret* key with no credential name next to it
(indistinguishable from a git SHA-1 or a hash), and short ``sk-`` strings (< 8 chars
after the dash). Identifiers (experiment/trajectory ids) are not passed through here.

:data:`PREFILTER` is a necessary condition for any change: :func:`redact_text` returns
its input unchanged when the prefilter does not match, by construction. The same pattern
(RE2-compatible) lets SQL passes (DuckDB ``regexp_matches``) pick the few rows that need
the Python function, so bulk paths cost one regex scan, not one Python call per cell.
"""

from __future__ import annotations

import functools
import re
from typing import Any

REDACTED = "***REDACTED***"
"""The fixed marker that replaces a credential."""

# Credential words a key name must END with (after normalising, see module docstring).
_KEY_WORDS = (
    r"api_?keys?|apikeys?|secrets?|secret_?key|client_?secret|passwords?|passwd|pwd|passphrase"
    r"|token|access_?token|refresh_?token|auth_?token|bearer_?token|session_?token"
    r"|id_?token|authorization|auth|credentials?|private_?key|access_?key|access_?key_?id"
    r"|cookie|set_?cookie|x_?api_?key"
)
_SECRET_KEY = re.compile(rf"(^|_)({_KEY_WORDS})$")

PREFILTER = (
    # sk- as rule 2 matches it: not glued to a letter or digit (``task-1``, ``desk-``),
    # where a JSON text's \n, \t ... escape counts as the character it stands for
    r"(?i)((^|[^a-z0-9]|\\[bfnrt])sk-|"
    r"[sr]k_live|[sr]k_test|gh[pousr]_|github_pat_|hf_|akia|asia|aiza|ya29\.|"
    r"xox[baprs]-|gsk_|xai-|pplx-|r8_|eyj|bearer|api[^a-z0-9]*key|secret|passw|pwd|"
    r"passphrase|token([^s]|$)|auth|credential|private[^a-z0-9]*key|access[^a-z0-9]*key|"
    r"cookie|://[^/\s]*@)"
)
"""Case-insensitive pattern (Python ``re`` and RE2/DuckDB) matching every string that
:func:`redact_text` could change, and every JSON text of a structure :func:`redact`
could change."""
_PREFILTER = re.compile(PREFILTER)
# Literal substrings, one implied by each branch of PREFILTER: a lower-cased text holding
# none of them cannot match it. Python's ``in`` is ~20x faster than the regex here (40 us
# a cell), and most cells hold none.
_NEEDLES = ("sk-", "k_live", "k_test", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
            "hf_", "akia", "asia", "aiza", "ya29.", "xox", "gsk_", "xai-", "pplx-", "r8_",
            "eyj", "bearer", "key", "secret", "passw", "pwd", "passphrase", "token", "auth",
            "credential", "cookie", "://")
_NEEDLE_RE = re.compile("|".join(re.escape(n) for n in _NEEDLES))


def might_hold_secret(text: str) -> bool:
    """True when :data:`PREFILTER` matches ``text`` (a fast literal check first;
    ``tokens`` alone, as in ``max_tokens``, is not ``token``)."""
    low = text.lower()
    if "tokens" in low:
        low = low.replace("tokens", "")
    return _NEEDLE_RE.search(low) is not None and _PREFILTER.search(text) is not None


_FORMATS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-[A-Za-z0-9_\-]{8,}"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|ya29\.[0-9A-Za-z_\-]{20,}"
    r"|xox[baprs]-[A-Za-z0-9\-]{10,}"
    r"|gsk_[A-Za-z0-9]{20,}"
    r"|xai-[A-Za-z0-9]{20,}"
    r"|pplx-[A-Za-z0-9]{20,}"
    r"|r8_[A-Za-z0-9]{20,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
    r")"
)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    re.DOTALL)
# Text form of a credential word at the end of a name: segments joined by _ . - or space
# are allowed inside the word ("api key", "x-api-key", "client.secret").
_TEXT_WORDS = (
    r"api[_.\- ]*key|apikey|secret(?:[_.\-]*key)?|password|passwd|pwd|passphrase"
    r"|token|authorization|auth|credentials?|private[_.\- ]*key"
    r"|access[_.\-]*key(?:[_.\-]*id)?|cookie"
)
_NAME = rf"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.\-])*(?:{_TEXT_WORDS})"
_VALUE = r"""(?:"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"',;&<>(){}\[\]]+)"""
_SCHEME = r"(?:(?:bearer|basic|token|digest)\s+)?"
_ASSIGN = re.compile(
    rf"(?P<name>{_NAME})(?P<sep>[\"']?\s*[:=]\s*){_SCHEME}(?P<val>{_VALUE})", re.IGNORECASE)
_FLAG = re.compile(rf"(?P<name>--{_NAME})(?P<sep>\s+){_SCHEME}(?P<val>{_VALUE})",
                   re.IGNORECASE)
_BEARER = re.compile(r"\bbearer\s+(?!\*\*\*REDACTED)[^\s\"'<>,;]{6,}", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<pre>://[^/\s:@]+:)(?P<val>[^/\s@]+)(?P<at>@)")


def _mask_value(m: re.Match[str]) -> str:
    val = m.group("val")
    if REDACTED in val:
        return m.group(0)
    if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'":
        val = val[0] + REDACTED + val[0]
    else:
        val = REDACTED
    return m.group(0)[: m.start("val") - m.start(0)] + val


def redact_text(text: str) -> str:
    """``text`` with every credential (rules 2 and 3 of the module docstring) replaced.

    Returns the same object when nothing matched :data:`PREFILTER` (the common case).
    Short strings (model names, statuses, labels) repeat across rows and are cached.
    """
    if len(text) <= 64:
        return _redact_short(text)
    return _redact_text(text)


@functools.lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return _redact_text(text)


def _redact_text(text: str) -> str:
    if not might_hold_secret(text):
        return text
    out = _PEM.sub(REDACTED, text)
    out = _FORMATS.sub(REDACTED, out)
    out = _ASSIGN.sub(_mask_value, out)
    out = _FLAG.sub(_mask_value, out)
    out = _BEARER.sub(REDACTED, out)  # the whole header value, scheme included
    return _URL_PASSWORD.sub(lambda m: m.group("pre") + REDACTED + m.group("at"), out)


def redact_strings(value: Any) -> Any:
    """A copy of ``value`` with every string leaf through :func:`redact_text` (text rules
    only: the keys of a result envelope, such as ``cost_per_token``, are column names,
    not credential keys, so the key rule of :func:`redact` does not apply). Used for
    every JSON/CSV output of results (``TableResult.to_dict()``, the CLI renderer)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_strings(v) for v in value]
    return value


def is_secret_key(key: str) -> bool:
    """True when a dict key names a credential (rule 1 of the module docstring)."""
    norm = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")
    return bool(_SECRET_KEY.search(norm))


def _mask_all(value: Any) -> Any:
    if isinstance(value, dict):
        return {redact_text(k) if isinstance(k, str) else k: _mask_all(v)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_all(v) for v in value]
    return None if value is None else REDACTED


def redact(value: Any) -> Any:
    """A copy of ``value`` with every credential replaced by :data:`REDACTED`.

    Dicts and lists are walked to any depth: every leaf under a credential-named key is
    masked (rule 1), every other string (dict keys included) goes through
    :func:`redact_text`. Other scalars are returned as they are; tuples become lists.
    Applied before hashing agent configs (so an id never depends on a secret), at ingest
    to every stored string, and before every export.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k):
                out[redact_text(k)] = _mask_all(v)
            else:
                out[redact_text(k) if isinstance(k, str) else k] = redact(v)
        return out
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
