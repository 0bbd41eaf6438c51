"""Seed 002 invariants 1-3 and secret redaction."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from evalatlas.errors import UnsafeIdError
from evalatlas.records import (
    REDACTED,
    AgentInfo,
    agent_id_for,
    check_safe_id,
    experiment_id_for,
    redact_secrets,
    task_version_hash_for,
)

CONFIG = {"model_name": "gpt-4o", "temperature": 0.0, "max_steps": 30,
          "llm_config": {"model": "gpt-4o", "max_tokens": 4096}, "_type": "ReactAgentConfig"}


def test_agent_id_is_sha256_of_sorted_json() -> None:
    expected = hashlib.sha256(json.dumps(CONFIG, sort_keys=True).encode()).hexdigest()
    assert agent_id_for(CONFIG) == expected
    assert len(expected) == 64


def test_agent_id_ignores_key_order() -> None:
    reordered = dict(reversed(list(CONFIG.items())))
    reordered["llm_config"] = {"max_tokens": 4096, "model": "gpt-4o"}
    assert agent_id_for(reordered) == agent_id_for(CONFIG)


def test_agent_id_is_stable_across_processes() -> None:
    code = ("import json,sys; from evalatlas.records import agent_id_for; "
            "print(agent_id_for(json.loads(sys.argv[1])))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(CONFIG)],
                         capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "7"})
    assert out.stdout.strip() == agent_id_for(CONFIG)


def test_agent_info_fills_agent_id_and_config_type() -> None:
    info = AgentInfo(config=CONFIG)
    assert info.agent_id == agent_id_for(CONFIG)
    assert info.config_type == "ReactAgentConfig"


def test_experiment_id_recipe() -> None:
    expected = hashlib.sha256(b"my-exp/tmp/out/run1").hexdigest()[:16]
    assert experiment_id_for("my-exp", "/tmp/out/run1") == expected
    assert experiment_id_for("my-exp", "/tmp/out/run2") != expected


def test_task_version_hash_covers_full_config() -> None:
    a = {"task_id": "t1", "prompt": "do it", "env": {"image": "v1"}}
    b = {"task_id": "t1", "prompt": "do it", "env": {"image": "v2"}}
    assert task_version_hash_for(a) == hashlib.sha256(
        json.dumps(a, sort_keys=True).encode()).hexdigest()
    assert task_version_hash_for(a) != task_version_hash_for(b)
    text = '{"task_id":"t1"}'
    assert task_version_hash_for(text) == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("key", ["api_key", "OPENAI_API_KEY", "hf_token", "Authorization",
                                 "password", "client_secret", "aws_secret_access_key",
                                 "private-key", "credentials", "x-api-key"])
def test_secret_keys_are_redacted(key: str) -> None:
    assert redact_secrets({key: "hunter2hunter2"}) == {key: REDACTED}


@pytest.mark.parametrize("key", ["max_tokens", "token_limit", "n_tokens", "tokenizer",
                                 "model", "keyboard", "secretary_name"])
def test_ordinary_keys_are_kept(key: str) -> None:
    assert redact_secrets({key: 5}) == {key: 5}


def test_secret_looking_values_are_redacted_anywhere() -> None:
    cfg = {"headers": ["Bearer abcdefghijklmnopqrstuvwxyz"], "note": "sk-" + "a" * 30,
           "nested": {"llm": {"apiKey": "k"}}}
    out = redact_secrets(cfg)
    assert out == {"headers": [REDACTED], "note": REDACTED, "nested": {"llm": {"apiKey": REDACTED}}}


def test_redaction_happens_before_hashing() -> None:
    a = AgentInfo(config={"model": "m", "api_key": "sk-" + "1" * 30})
    b = AgentInfo(config={"model": "m", "api_key": "sk-" + "2" * 30})
    assert a.agent_id == b.agent_id
    assert a.config["api_key"] == REDACTED
    assert "sk-1" not in a.model_dump_json()


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/b", "a\\b", "a\x00b", "/abs",
                                 "C:evil", "x..y", "t\nb", "task.archived_123"])
def test_unsafe_ids_rejected(bad: str) -> None:
    with pytest.raises(UnsafeIdError):
        check_safe_id(bad)


@pytest.mark.parametrize("good", ["task_1_ep0", "miniwob.click-dialog_ep3", "ü-42", "a b"])
def test_safe_ids_accepted(good: str) -> None:
    assert check_safe_id(good) == good


def test_safe_id_decisions_equal_the_rules_one_by_one() -> None:
    """The common case is decided by string methods first; every string is decided as
    by the rules one by one (the full checks, or one regex scan of them), edge cases of
    the fast test included: non-printable but not control characters, a second
    character ':' with and without a drive letter, 63/64 characters of 4-byte UTF-8, a
    short lone surrogate (accepted, as before)."""
    import re

    rules = re.compile(r"\.\.|[/\\\x00-\x1f\x7f]|^[A-Za-z]:|\.archived_")

    def safe(v: str) -> bool:  # (a lone surrogate is no UTF-8: only short ones here)
        return (rules.search(v) is None and v not in ("", ".")
                and (len(v) <= 63 or len(v.encode("utf-8")) <= 255))

    cases = ["astropy__astropy-12907", "a\u00a0b", "a\u2028b", "x\u200bz", "\x85next",
             "1:x", "::", "a:", "C:", "é:x", ":", "x", ".", ".x", "x.", "a.b.c",
             "\U0001f600" * 63, "\U0001f600" * 64, "a" * 255, "a" * 256, "é" * 127,
             "é" * 128, "tab\there", "del\x7f", ".archived", "x.archived_", "\\", "a..",
             "a\ud800b", "\ud800"]
    for v in cases:
        try:
            check_safe_id(v)
            accepted = True
        except UnsafeIdError:
            accepted = False
        assert accepted == safe(v), repr(v)
