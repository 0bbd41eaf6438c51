"""The one redaction function: what it catches, what it leaves alone, and its prefilter."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import pytest

from evalatlas.records import REDACTED, redact, redact_text
from evalatlas.records.ids import agent_id_for
from evalatlas.records.redact import PREFILTER, is_secret_key, might_hold_secret

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# (text with a secret, the secret that must disappear)
TEXT_SECRETS = [
    ("key sk-proj-Ab3dEf6hIj9kLm2nOp5q in a sentence", "sk-proj-Ab3dEf6hIj9kLm2nOp5q"),
    ("anthropic sk-ant-api03-Zx8cV7bN6m-5Lk4J3h", "sk-ant-api03-Zx8cV7bN6m-5Lk4J3h"),
    ("glued_sk-Qw1Er2Ty3Ui4Op5 after an underscore", "sk-Qw1Er2Ty3Ui4Op5"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("gh ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    ("pat github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP", "github_pat_11ABCDEFG0123456789"),
    ("hf hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    ("aws id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("google AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("oauth ya29.a0AfH6SMBx7fT9qk2LmNoPqRsTuV", "ya29.a0AfH6SMBx7fT9qk2LmNoPqRsTuV"),
    ("slack xoxb-123456789012-abcdefghij", "xoxb-123456789012-abcdefghij"),
    ("groq gsk_AbCdEfGhIjKlMnOpQrStUv12", "gsk_AbCdEfGhIjKlMnOpQrStUv12"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
     "dozjgNryP4J3jVmNHl0w5N"),
    ("Authorization: Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    ("sent bearer 0123456789abcdef to the proxy", "0123456789abcdef"),
    ("OPENAI_API_KEY=plainvalue123 python run.py", "plainvalue123"),
    ("export HF_TOKEN='quoted value 42'", "quoted value 42"),
    ("config: {'api_key': 'repr-style-secret'}", "repr-style-secret"),
    ('{"password": "json in text", "user": "bob"}', "json in text"),
    ("x-api-key: header-secret-77", "header-secret-77"),
    ("run --api-key flagsecret99 --model m", "flagsecret99"),
    ("clone https://bob:urlpassw0rd@git.example.com/r.git", "urlpassw0rd"),
    ("GET /v1?access_token=querytok55&x=1", "querytok55"),
    ("Cookie: session=cookiesecret; path=/", "session=cookiesecret"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nline2\n-----END RSA PRIVATE KEY-----",
     "MIIEowIBAAKCAQEA"),
    ("client.secret: dotted-name-secret", "dotted-name-secret"),
]


@pytest.mark.parametrize(("text", "secret"), TEXT_SECRETS, ids=[s for _, s in TEXT_SECRETS])
def test_secrets_in_text_are_redacted(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out
    assert REDACTED in out
    assert redact_text(out) == out  # idempotent: the marker is never redacted again


ORDINARY = [
    "The agent used 1,234 prompt tokens and max_tokens=512.",
    "task-abcdefghijklmnopqrstuvwxyz (a task id ending like an sk- key)",
    "risk-averse scikit-learn desk-top",
    "git commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "/home/user/../../etc/passwd",
    "authentication failed; see the author's notes",
    "The tokenizer splits text into tokens: 17 of them.",
    "keyboard=US; monkey=3",
    "-0.5",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact_text(text) == text


def test_credential_keys_at_any_depth_of_dicts_and_lists() -> None:
    value = {"model": "gpt-4o", "max_tokens": 512, "token_limit": 9, "tokenizer": "bpe",
             "llm": {"api_key": "k1", "params": [{"Authorization": "Basic zz"}]},
             "env": {"ANTHROPIC_API_KEY": "k2", "PATH": "/usr/bin"},
             "secrets": ["a", {"b": "c"}, 7], "auth": None,
             "note": "use sk-abcdefghij0123456789"}
    assert redact(value) == {
        "model": "gpt-4o", "max_tokens": 512, "token_limit": 9, "tokenizer": "bpe",
        "llm": {"api_key": REDACTED, "params": [{"Authorization": REDACTED}]},
        "env": {"ANTHROPIC_API_KEY": REDACTED, "PATH": "/usr/bin"},
        "secrets": [REDACTED, {"b": REDACTED}, REDACTED], "auth": None,
        "note": f"use {REDACTED}"}


@pytest.mark.parametrize("key", ["api_key", "OPENAI_API_KEY", "hf_token", "Authorization",
                                 "password", "client_secret", "aws_secret_access_key",
                                 "private-key", "credentials", "x-api-key", "Set-Cookie",
                                 "access_key_id", "passphrase", "session_token"])
def test_secret_key_names(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "token_limit", "n_tokens", "tokenizer",
                                 "model", "keyboard", "secretary_name", "author", "oauth_url"])
def test_ordinary_key_names(key: str) -> None:
    assert not is_secret_key(key)


def _all_strings_and_structures() -> list[object]:
    values: list[object] = [t for t, _ in TEXT_SECRETS] + ORDINARY
    values += [{"api_key": 1}, {"a": [{"HF_TOKEN": "x"}]}, {"tok": {"Cookie": True}},
               {"x": "ordinary"}, {"max_tokens": 5}, {"API__KEY": "v"}, {"TOKEN_": "v"}]
    return values


def test_prefilter_is_a_necessary_condition_in_python_and_duckdb() -> None:
    """Bulk SQL passes only call the Python function where PREFILTER matches; that is
    safe only if nothing the function would change escapes the prefilter."""
    con = duckdb.connect()
    for v in _all_strings_and_structures():
        text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        changed = redact(v) != v
        py = bool(re.search(PREFILTER, text))
        sql = con.execute("SELECT regexp_matches(?, ?)", [text, PREFILTER]).fetchone()[0]
        assert py == sql, text
        assert might_hold_secret(text) == py, text  # the literal pre-check loses nothing
        if changed:
            assert py, text


def _fixture_configs() -> list[dict]:
    files = [FIXTURES / "cube" / "examples" / "experiment_record.rfc.json",
             *sorted(EXAMPLES.rglob("experiment_record.json"))]
    configs = [json.loads(f.read_text())["agent"]["config"] for f in files]
    assert len(configs) >= 2
    return configs


def test_ids_stay_stable_for_configs_without_secrets() -> None:
    """Redaction runs before hashing; a config without secrets hashes exactly as upstream
    does (SHA-256 of the sorted JSON), one with secrets does not depend on them."""
    for config in _fixture_configs():
        clean = {k: v for k, v in config.items() if not is_secret_key(k)}
        assert redact(clean) == clean
        assert agent_id_for(clean) == hashlib.sha256(
            json.dumps(clean, sort_keys=True).encode()).hexdigest()
    plain = {"model": "m", "temperature": 0.0, "max_tokens": 100, "prompt": "be brief"}
    assert agent_id_for(plain) == hashlib.sha256(
        json.dumps(plain, sort_keys=True).encode()).hexdigest()
    assert agent_id_for({**plain, "api_key": "sk-one-aaaaaaaaaaaaaaaa"}) == agent_id_for(
        {**plain, "api_key": "sk-two-bbbbbbbbbbbbbbbb"})


def test_prefilter_skips_sk_glued_to_a_word_but_not_an_escaped_one() -> None:
    """``task-00001`` (every synthetic and many real task ids) must not send each cell
    through Python; ``sk-`` after a JSON escape (``\\n``) is a key after a newline."""
    con = duckdb.connect()
    for text in ("task-00001", "Task-7", "risk-averse desk-top"):
        assert not re.search(PREFILTER, text), text
        assert not con.execute("SELECT regexp_matches(?, ?)", [text, PREFILTER]).fetchone()[0]
    for esc in "\n\t\r\b\f":
        value = {"v": esc + "sk-abcdefghij0123456789"}
        text = json.dumps(value)
        assert redact(value) != value
        assert re.search(PREFILTER, text), text
        assert con.execute("SELECT regexp_matches(?, ?)", [text, PREFILTER]).fetchone()[0]
