"""`passdown ui`: the web view of the handoffs in the default store, on loopback."""

from __future__ import annotations

import socket
import webbrowser

import click

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@click.command("ui")
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="Port on 127.0.0.1 (default: a random free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option("--project", help="The project to show first (default: this workspace's).")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def ui_command(port: int, open_browser: bool, project: str | None, store_url: str | None) -> None:
    """Open a local web view of the stored handoffs: timeline, handoff, compare, plan
    over time. Only this machine can reach it (127.0.0.1); Ctrl-C stops it."""
    import uvicorn

    from passdown import pipeline
    from passdown.errors import UsageError
    from passdown.records import default_project
    from passdown.store import open_store
    from passdown.web import local_app

    host = "127.0.0.1"
    current = project or default_project(pipeline.workspace_for())
    try:
        port = port or free_port(host)
    except OSError as exc:
        raise UsageError(f"cannot find a free port on {host}: {exc}") from None
    with open_store(store_url) as store:
        url = f"http://{host}:{port}/"
        config = uvicorn.Config(local_app(store, current, host=host), host=host, port=port,
                                log_level="warning", timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        click.echo(url)
        click.echo(f"passdown: serving the handoffs of {store.url} (Ctrl-C stops)", err=True)
        if open_browser:
            webbrowser.open(url)
        server.run()
        if not server.started:
            raise UsageError(f"cannot listen on {host}:{port} (is the port in use?)")
