"""`passdown mcp`, `passdown serve`, `passdown token`: passdown as a server for agents.

The MCP SDK, starlette and uvicorn load only when a command runs, so `passdown --help`
stays fast.
"""

from __future__ import annotations

from pathlib import Path

import click

from passdown.cli._output import json_option

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."


def _workspace() -> Path:
    from passdown import _pipeline as pipeline

    return pipeline.workspace_for()


@click.command("mcp")
@click.option("--project", help="The scope to serve (default: the project of this workspace).")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def mcp_command(project: str | None, store_url: str | None) -> None:
    """Serve passdown's tools to an agent over MCP (stdio), bound to one project."""
    from passdown.mcp._handshake import answer_early

    early = answer_early()  # initialize and tools/list, before the MCP SDK's slow import
    from passdown.mcp._server import run_stdio
    from passdown.records import default_project
    from passdown.store import open_store

    workspace = _workspace()
    with open_store(store_url) as store:
        run_stdio(store, project or default_project(workspace), workspace, early)


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind (loopback unless you say otherwise).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES",
    help="Largest request body accepted; larger ones get 413 (default: $PASSDOWN_SERVE_MAX_BODY or 1048576).",
)
@click.option(
    "--certfile",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Serve https with this PEM certificate (chain); needs --keyfile. Or put a reverse "
    "proxy that speaks TLS in front.",
)
@click.option(
    "--keyfile",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The private key (PEM, unencrypted) of --certfile.",
)
@json_option('Print {"url", "mcp", "api"} as one line of JSON on stdout, then serve.')
def serve_command(
    host: str,
    port: int,
    store_url: str | None,
    max_body: int | None,
    certfile: Path | None,
    keyfile: Path | None,
    as_json: bool,
) -> None:
    """Team server: the MCP tools over streamable HTTP at /mcp, a JSON API at
    /api/records, and the store API that `PASSDOWN_STORE=https://HOST:PORT` on another
    machine uses, for tokens from `passdown token create` (each bound to one project)."""
    from passdown.mcp._http import bind, max_body_from_env, run, tls_files
    from passdown.store import open_store

    limit = max_body or max_body_from_env()
    tls = tls_files(certfile, keyfile)  # a certificate that does not load fails first
    sock = bind(host, port)  # a port in use is an error before anything says "serving"
    try:
        with open_store(store_url) as store:
            bound = sock.getsockname()[1]
            # listening before saying so: a client that connects as soon as it reads the
            # URL waits in the backlog instead of being refused while the server starts
            sock.listen(128)
            scheme = "https" if tls else "http"
            _say_serving(f"{scheme}://{_url_host(host)}:{bound}/", as_json)
            run(
                store,
                host=host,
                port=bound,
                workspace=_workspace(),
                max_body=limit,
                sock=sock,
                tls=tls,
            )
    finally:
        sock.close()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _say_serving(url: str, as_json: bool) -> None:
    if as_json:
        from passdown.cli._output import emit_json

        emit_json({"url": url, "mcp": f"{url}mcp", "api": f"{url}api/records"}, one_line=True)
        return
    click.echo(f"passdown: serving {url} (pages), /mcp and /api/records", err=True)


@click.group("token")
def token_command() -> None:
    """Bearer tokens for `passdown serve`, each bound to one project."""


@token_command.command("create")
@click.option(
    "--project",
    required=True,
    help="The project scope the token may read and write: a scope, its name or a unique "
    "prefix (api for api~3f9c2a1b7d0e), or . for this repository's.",
)
@click.option("--new", "new", is_flag=True, help="PROJECT is a new team project (no records yet).")
@click.option("--label", default="", help="A note kept with the token (who it is for).")
@json_option('Print {"token", "project", "label"} as JSON.')
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def token_create(project: str, new: bool, label: str, as_json: bool, store_url: str | None) -> None:
    """Create a token and print it (once: only its hash is stored)."""
    from passdown.errors import UsageError
    from passdown.store import open_store
    from passdown.store._tokens import create_token, token_project

    if not project.strip() or project != project.strip():
        raise UsageError("--project must be a project name (not empty, no surrounding spaces)")
    with open_store(store_url) as store:
        project = token_project(store, project, new=new)
        token = create_token(store, project, label)
    # the token itself is the output: printed as is, never redacted (it is shown once)
    _print_token_result(as_json, token, {"token": token, "project": project, "label": label})


@token_command.command("revoke")
@click.argument("token")
@json_option('Print {"revoked": true} as JSON.')
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def token_revoke(token: str, as_json: bool, store_url: str | None) -> None:
    """Revoke a token (it stops working at once, on every server that shares the store)."""
    from passdown.errors import UsageError
    from passdown.store import open_store
    from passdown.store._tokens import revoke_token

    with open_store(store_url) as store:
        if not revoke_token(store, token):
            raise UsageError("no such token")
    _print_token_result(as_json, "revoked", {"revoked": True})


def _print_token_result(as_json: bool, text: str, data: dict[str, object]) -> None:
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(data, redacted=False, one_line=True)  # the token is the output
    else:
        click.echo(text)
