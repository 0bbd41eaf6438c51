"""Parsing store locations (store/lake_location.py): lakes, data paths, redaction."""

from __future__ import annotations

import pytest

from evalatlas.errors import ArgumentError
from evalatlas.store.db import resolve_db_path
from evalatlas.store.lake_location import LakeLocation, is_lake, libpq_pairs


def test_postgres_location_and_its_server() -> None:
    loc = LakeLocation.parse("ducklake:postgres:dbname=atlas host=db.internal port=6543 "
                             "user=eval password=hunter2", "/shared/data")
    assert (loc.kind, loc.data_path) == ("postgres", "/shared/data")
    assert loc.catalog.startswith("dbname=atlas")
    assert loc.server == "db.internal:6543"
    assert "hunter2" not in loc.display and "hunter2" not in repr(loc)
    assert loc.display.startswith("ducklake:postgres:dbname=atlas host=db.internal")


def test_libpq_defaults_quoted_values_and_uris(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGHOST", raising=False)
    monkeypatch.delenv("PGPORT", raising=False)
    assert LakeLocation.parse("ducklake:postgres:dbname=a").server == "localhost:5432"
    monkeypatch.setenv("PGPORT", "7000")
    assert LakeLocation.parse("ducklake:postgres:dbname=a host=h").server == "h:7000"
    assert libpq_pairs("password='a b\\'c' host = x") == {"password": "a b'c", "host": "x"}
    uri = LakeLocation.parse("ducklake:postgres:postgresql://eval:s3cret@db:5433/atlas")
    assert uri.server == "db:5433" and "s3cret" not in uri.display
    quoted = LakeLocation.parse("ducklake:postgres:host=x password='two words'")
    assert "two words" not in quoted.display and "words" not in quoted.display


def test_file_catalog_and_data_path_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALATLAS_DATA_PATH", "/env/data")
    loc = LakeLocation.parse("ducklake:/tmp/x/atlas.ducklake")
    assert (loc.kind, loc.catalog, loc.data_path) == ("file", "/tmp/x/atlas.ducklake",
                                                      "/env/data")
    assert LakeLocation.parse("ducklake:a.ducklake", "/given").data_path == "/given"
    assert is_lake("ducklake:a.ducklake") and not is_lake("a.duckdb") and not is_lake(None)


@pytest.mark.parametrize(("text", "words"), [
    ("ducklake:", "needs a catalog"),
    ("ducklake:postgres:", "needs a libpq connection string"),
    ("ducklake:sqlite:x.db", "not supported"),
    ("atlas.duckdb", "starts with 'ducklake:'"),
])
def test_bad_locations_say_what_is_accepted(text: str, words: str) -> None:
    with pytest.raises(ArgumentError, match=words):
        LakeLocation.parse(text)


def test_the_printed_store_name_has_no_password() -> None:
    shown = str(resolve_db_path("ducklake:postgres:host=h password=pw123 dbname=d"))
    assert "pw123" not in shown and shown.startswith("ducklake:postgres:host=h")
    assert str(resolve_db_path("runs/a.duckdb")) == "runs/a.duckdb"


@pytest.mark.parametrize("text", [
    # seen in CI: PostgreSQL stopped mid-ingest, the scanner's ROLLBACK on the dead connection
    'TransactionContext Error: Failed to commit: Failed to execute query "ROLLBACK":\n',
    "IO Error: Unable to connect to Postgres at dbname=a: connection to server at "
    '"127.0.0.1", port 5 failed: Connection refused',
    "server closed the connection unexpectedly",
    "FATAL:  terminating connection due to administrator command",
    "no connection to the server",
])
def test_a_server_gone_in_any_words_is_the_unreachable_line(text: str) -> None:
    from evalatlas.store.lake import is_unreachable, use_error_message
    exc = RuntimeError(text)
    assert is_unreachable(exc)
    line = use_error_message("ducklake:postgres:dbname=a host=127.0.0.1 port=49293 "
                             "password=hunter2", exc)
    assert line is not None and "127.0.0.1:49293" in line and "hunter2" not in line


def test_other_errors_are_not_called_unreachable() -> None:
    from evalatlas.store.lake import is_unreachable
    assert not is_unreachable(RuntimeError('Binder Error: column "x" not found'))
    assert not is_unreachable(RuntimeError("Constraint Error: duplicate key"))


def test_a_server_that_does_not_answer_is_unreachable_whatever_the_words() -> None:
    """The words of an error raised after the server vanished mid-transaction vary (CI:
    "Current transaction is aborted", which PostgreSQL also says after any failed
    statement); the port probe decides: nothing listening -> the unreachable line,
    something listening -> the error's own line."""
    import socket

    from evalatlas.store.lake import catalog_answers, is_unreachable, use_error_message
    from evalatlas.store.lake_location import LakeLocation
    words = RuntimeError("TransactionContext Error: Failed to get global stats information "
                         "from DuckLake: Current transaction is aborted (please ROLLBACK)")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        where = f"ducklake:postgres:dbname=a host=127.0.0.1 port={port} password=hunter2"
        assert catalog_answers(LakeLocation.parse(where)) is True
        assert not is_unreachable(words, LakeLocation.parse(where))
        assert use_error_message(where, words) is None
    # the socket is closed: nothing listens on that port any more
    assert catalog_answers(LakeLocation.parse(where)) is False
    assert is_unreachable(words, LakeLocation.parse(where))
    line = use_error_message(where, words)
    assert line is not None and f"127.0.0.1:{port}" in line and "hunter2" not in line
    assert "Current transaction is aborted" in line  # the server's own words, kept
    # a file catalog has no server to ask; its errors keep their own words
    assert catalog_answers(LakeLocation.parse("ducklake:/tmp/x.ducklake")) is None
    assert not is_unreachable(words, LakeLocation.parse("ducklake:/tmp/x.ducklake"))


def test_a_unix_socket_catalog_is_probed_at_its_socket_file(tmp_path) -> None:
    import socket

    from evalatlas.store.lake import catalog_answers
    from evalatlas.store.lake_location import LakeLocation
    where = LakeLocation.parse(f"ducklake:postgres:dbname=a host={tmp_path} port=6543")
    assert where.endpoint == (str(tmp_path), 6543)
    assert catalog_answers(where) is False
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / ".s.PGSQL.6543"))
        listening.listen()
        assert catalog_answers(where) is True
