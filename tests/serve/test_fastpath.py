"""Kept answers sent by the middleware: only for a path and query string a route has
validated, only to a caller the routes would let read, with the same bytes and labels;
everything else is left to the route (which answers errors as before)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from evalatlas.serve.answers import Answers, Shortcuts
from evalatlas.serve.auth import add_token
from evalatlas.serve.fastpath import send_kept
from evalatlas.store.tokens import TokenFile


@pytest.fixture
def state(tmp_path):
    tokens = TokenFile(tmp_path / "s.duckdb.tokens")
    box = {"version": 0}
    answers = Answers(lambda: box["version"])
    st = SimpleNamespace(shortcuts=Shortcuts(), answers=answers, tokens=tokens, touched={},
                         config=SimpleNamespace(public_read=False), box=box, poller=None,
                         reader=add_token(tokens, "rita", "reader"))
    yield st
    answers.stop()


def scope(query=b"", auth=None, method="GET", path="/v1/leaderboard"):
    headers = [(b"host", b"x")]
    if auth is not None:
        headers.append((b"authorization", auth))
    return {"type": "http", "method": method, "path": path, "query_string": query,
            "headers": headers}


def send_of(state, sc):
    sent = []

    async def send(message):
        sent.append(message)

    answered = asyncio.run(send_kept(state, sc, send))
    return answered, sent


def learn(state, query=b"by=agent", fresh=False):
    key = ("leaderboard", "agent")  # fresh or not: one question
    state.answers.get(key, lambda: b'{"rows": []}\n')
    state.shortcuts.learn(scope(query), key, fresh, "application/json")
    return key


def test_a_learned_query_is_answered_with_the_kept_bytes_and_labels(state):
    learn(state)
    sc = scope(b"by=agent", b"Bearer " + state.reader.encode())
    answered, sent = send_of(state, sc)
    assert answered
    start, body = sent
    assert start["status"] == 200 and body["body"] == b'{"rows": []}\n'
    head = dict(start["headers"])
    assert head[b"content-type"] == b"application/json"
    assert head[b"content-length"] == b"13"
    assert head[b"x-evalatlas-stale"] == b"false"
    assert head[b"x-evalatlas-answer-version"] == head[b"x-evalatlas-store-version"] == b"0"
    assert sc["state"] == {"route": "/v1/leaderboard", "token_name": "rita"}
    assert state.tokens.rows()[0]["last_used_at"] is not None  # as the routes do


@pytest.mark.parametrize("auth", [None, b"Bearer not-a-token", b"Basic cml0YTp4",
                                  b"Bearer ", b"bearer"])
def test_a_caller_the_routes_would_refuse_is_left_to_the_route(state, auth):
    learn(state)
    assert send_of(state, scope(b"by=agent", auth)) == (False, [])


def test_anyone_reads_with_public_read(state):
    learn(state)
    state.config.public_read = True
    answered, sent = send_of(state, scope(b"by=agent"))
    assert answered and sent[1]["body"] == b'{"rows": []}\n'


def test_a_revoked_token_is_refused_from_the_next_request(state):
    learn(state)
    auth = b"Bearer " + state.reader.encode()
    assert send_of(state, scope(b"by=agent", auth))[0]
    assert state.tokens.revoke("rita")
    assert send_of(state, scope(b"by=agent", auth)) == (False, [])


@pytest.mark.parametrize("sc", [scope(b"by=agent&x=1"), scope(b"by=agent", method="POST"),
                                scope(b"by=agent", path="/report")])
def test_only_the_exact_learned_request_is_answered(state, sc):
    learn(state)
    sc["headers"].append((b"authorization", b"Bearer " + state.reader.encode()))
    assert send_of(state, sc) == (False, [])


def test_fresh_after_a_write_is_left_to_the_route_which_waits(state):
    learn(state, b"by=agent&fresh=true", fresh=True)
    learn(state, b"by=agent")
    auth = b"Bearer " + state.reader.encode()
    state.box["version"] = 1  # a write; its answer not computed yet
    assert send_of(state, scope(b"by=agent&fresh=true", auth)) == (False, [])
    answered, sent = send_of(state, scope(b"by=agent", auth))  # the previous, labelled
    head = dict(sent[0]["headers"])
    assert answered and head[b"x-evalatlas-stale"] == b"true"
    assert (head[b"x-evalatlas-answer-version"], head[b"x-evalatlas-store-version"]) == (
        b"0", b"1")


def test_fresh_on_a_lake_others_write_is_left_to_the_route_which_reads_the_snapshot(state):
    """With a PostgreSQL-catalog lake (a poller), even a kept answer of the current
    version is not fresh enough: another process may have committed since the last poll,
    so the route reads the lake's newest snapshot first."""
    learn(state, b"by=agent&fresh=true", fresh=True)
    auth = b"Bearer " + state.reader.encode()
    assert send_of(state, scope(b"by=agent&fresh=true", auth))[0]  # a file store: kept
    state.poller = object()
    assert send_of(state, scope(b"by=agent&fresh=true", auth)) == (False, [])
