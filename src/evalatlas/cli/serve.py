"""``evalatlas serve``, ``evalatlas tokens`` and ``evalatlas submit`` (docs/serve.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from evalatlas import EvalAtlasError
from evalatlas.cli.common import FormatOption, db_path, emit, err_console, fail
from evalatlas.cli.render import Col, OutputFormat, render

tokens_app = typer.Typer(help="API tokens of `evalatlas serve`: add, list, revoke.",
                         no_args_is_help=True)


def serve_cmd(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on (put a TLS proxy in "
                                      "front for anything but 127.0.0.1).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port.")] = 8765,
    workers: Annotated[int, typer.Option(min=1, help="On a lake: processes that parse and "
                                         "stage submissions in parallel (each commits in a "
                                         "short lake transaction). A .duckdb store has one "
                                         "writing process: 1 (requests are still served "
                                         "concurrently).")] = 1,
    public_read: Annotated[bool, typer.Option(
        "--public-read", help="Anyone may read the leaderboard, compare, matrix, atlas "
        "and report without a token.")] = False,
    max_upload_bytes: Annotated[str, typer.Option(
        help="Largest upload (as sent, compressed or not).")] = "1GiB",
    max_file_bytes: Annotated[str, typer.Option(
        help="The most bytes a submission may decompress to.")] = "4GiB",
    rate_limit: Annotated[str, typer.Option(
        help="Requests per token (or client address without one): N/s, N/min, N/hour or "
        "off.")] = "60/min",
    spool: Annotated[Path | None, typer.Option(
        help="Folder for uploads being received (emptied at start). Default: "
        "<store>.spool")] = None,
    access_log: Annotated[Path | None, typer.Option(
        help="Append the JSON-lines access log here (default: standard error).")] = None,
) -> None:
    """Serve the store over HTTP: submissions, leaderboard, matrix, atlas and report."""
    from evalatlas import serve

    if workers != 1 and not str(db_path(ctx)).startswith("ducklake:"):
        fail("--workers: a .duckdb store has one writing process, whose one writer commits "
             "submissions in arrival order (it still answers requests concurrently: "
             "uploads and reads in threads); a lake (--db ducklake:...) stages "
             "submissions in --workers processes")
    try:
        upload = serve.parse_size(max_upload_bytes, "--max-upload-bytes")
        unpacked = serve.parse_size(max_file_bytes, "--max-file-bytes")
        rate = serve.parse_rate(rate_limit)
        shown = serve.store_name(db_path(ctx) or None)  # a lake's password redacted
        err_console.print(f"evalatlas serve: {shown} on "
                          f"http://{host}:{port} (SIGTERM or Ctrl-C stops it)",
                          markup=False, highlight=False)
        serve.run_server(db_path(ctx), host=host, port=port, public_read=public_read,
                         max_upload_bytes=upload, max_file_bytes=unpacked, rate_limit=rate,
                         spool=spool, access_log=access_log, workers=workers)
    except (EvalAtlasError, ValueError) as exc:
        fail(str(exc).replace("rate_limit", "--rate-limit"))
    except OSError as exc:  # the port is taken, the spool folder cannot be made ...
        fail(f"cannot serve on {host}:{port}: {exc}")


def tokens_add_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Who holds the token (letters, digits, - _ . @).")],
    role: Annotated[str, typer.Option(help="submitter, reader or admin.")],
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", case_sensitive=False,
                                              help="table or json.")] = OutputFormat.table,
) -> None:
    """Create a token and print it once (it is stored only as a hash)."""
    from evalatlas import serve

    try:
        token = serve.add_token(db_path(ctx), name, role)
    except (EvalAtlasError, ValueError) as exc:
        fail(str(exc).replace("role must", "--role must").replace("name must", "NAME must"))
        return
    if fmt is OutputFormat.json:
        typer.echo(json.dumps({"name": name, "role": role, "token": token}))
        return
    err_console.print(f"token {name!r} ({role}); shown once, store it now:", markup=False,
                      highlight=False)
    typer.echo(token)


def tokens_list_cmd(ctx: typer.Context, fmt: FormatOption = OutputFormat.table) -> None:
    """Names, roles, created and last used (never the tokens)."""
    from evalatlas import serve

    try:
        rows = serve.token_rows(db_path(ctx))
    except EvalAtlasError as exc:
        fail(str(exc))
        return
    cols = [Col("name", "name"), Col("role", "role"), Col("created_at", "created"),
            Col("last_used_at", "last used")]
    emit(render(rows, cols, fmt, schema="evalatlas.tokens/1", title="Tokens"))


def tokens_revoke_cmd(ctx: typer.Context, name: Annotated[str, typer.Argument()]) -> None:
    """Revoke a token: it is refused from the server's next request on."""
    from evalatlas import serve

    try:
        gone = serve.revoke_token(db_path(ctx), name)
    except EvalAtlasError as exc:
        fail(str(exc))
        return
    if not gone:
        fail(f"no token named {name!r} (see `evalatlas tokens list`)")
    err_console.print(f"revoked {name!r}", markup=False, highlight=False)


def submit_cmd(
    url: Annotated[str, typer.Argument(help="The server, e.g. https://atlas.example.org")],
    paths: Annotated[list[Path], typer.Argument(help="Files to submit (one submission "
                                                "each).")],
    token: Annotated[str | None, typer.Option(envvar="EVALATLAS_TOKEN", show_default=False,
                                              help="A submitter token (default: "
                                              "$EVALATLAS_TOKEN).")] = None,
) -> None:
    """Upload result files to an `evalatlas serve` and print its answers (JSON lines)."""
    from evalatlas import Client, ServerError

    try:
        client = Client(url, token or None)
    except EvalAtlasError as exc:
        fail(str(exc).replace("url must", "URL must"))
        return
    failed = 0
    with client:
        for path in paths:
            try:
                answer = client.submit(path)
            except ServerError as exc:
                failed += 1
                answer = {"file": str(path), "status": exc.status, **(
                    exc.body if isinstance(exc.body, dict) else {"detail": exc.body})}
            except (EvalAtlasError, OSError) as exc:
                failed += 1
                answer = {"file": str(path), "error": str(exc)}
            except Exception as exc:  # httpx transport errors: server down, refused
                failed += 1
                answer = {"file": str(path), "error": f"{type(exc).__name__}: {exc}"}
            else:
                answer = {"file": str(path), **answer}
            typer.echo(json.dumps(answer, ensure_ascii=False))
    if failed:
        print(f"{failed} of {len(paths)} file(s) not accepted", file=sys.stderr)
        raise typer.Exit(1)


tokens_app.command("add")(tokens_add_cmd)
tokens_app.command("list")(tokens_list_cmd)
tokens_app.command("revoke")(tokens_revoke_cmd)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    app.command("submit")(submit_cmd)
    app.add_typer(tokens_app, name="tokens")
