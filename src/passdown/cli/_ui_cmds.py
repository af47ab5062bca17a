"""`passdown ui`: the web view of the handoffs in the default store, on loopback."""

from __future__ import annotations

import contextlib
import socket
import webbrowser
from collections.abc import Callable
from typing import Any

import click

from passdown.cli._output import json_option

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a port in use is a clear error before any URL
    is printed (port 0: a free one the system picks)."""
    from passdown import _platform
    from passdown.errors import UsageError

    sock = socket.socket(socket.AF_INET)
    try:
        _platform.listen_exclusively(sock)  # no second server on a port in use (Windows)
        sock.bind((host, port))
        sock.listen(128)  # a browser started by --open queues here until the server runs
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another --port, or leave it out for a free one",
        ) from None
    return sock


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    help="Port on 127.0.0.1 (default: a random free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option("--project", help="The project to show first (default: this workspace's).")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
@json_option('Print {"url", "project", "store"} as one line of JSON, then serve.')
def ui_command(
    port: int, open_browser: bool, project: str | None, store_url: str | None, as_json: bool
) -> None:
    """Open a local web view of the stored handoffs: timeline, handoff, compare, plan
    over time. Only this machine can reach it (127.0.0.1); Ctrl-C stops it."""
    import uvicorn

    from passdown import _pipeline as pipeline
    from passdown.records import default_project
    from passdown.store import open_store
    from passdown.web import local_app

    host = "127.0.0.1"
    workspace = pipeline.workspace_for()
    current = project or default_project(workspace)
    with open_store(store_url) as store:
        sock = bind(host, port)
        url = f"http://{host}:{sock.getsockname()[1]}/"
        config = uvicorn.Config(
            local_app(store, current, host=host), log_level="warning", timeout_graceful_shutdown=2
        )

        def started() -> None:
            _say_url(url, current, store.url, as_json)
            if open_browser:
                webbrowser.open(url)

        # the URL goes out once the server runs; Ctrl-C, the documented way to stop,
        # then stops it cleanly: exit 0
        with contextlib.suppress(KeyboardInterrupt):
            _serve(config, sock, started)
    click.echo("passdown: ui stopped", err=True)


def _serve(config: Any, sock: socket.socket, started: Callable[[], None]) -> None:
    """Run the server; `started` once it is up, not before (a Ctrl-C before then stops
    it as cleanly)."""
    import uvicorn

    class AnnouncedServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                started()

    AnnouncedServer(config).run(sockets=[sock])


def _say_url(url: str, project: str, store: str, as_json: bool) -> None:
    if as_json:
        from passdown.cli._output import emit_json

        emit_json({"url": url, "project": project, "store": store}, one_line=True)
        return
    from passdown._text import shown

    click.echo(url)
    click.echo(f"passdown: serving the handoffs of {shown(store)} (Ctrl-C stops)", err=True)
