"""`passdown mcp`, `passdown serve`, `passdown token`: passdown as a server for agents.

The MCP SDK, starlette and uvicorn load only when a command runs, so `passdown --help`
stays fast.
"""

from __future__ import annotations

from pathlib import Path

import click

_STORE_HELP = "Store URL (default: $PASSDOWN_STORE, the config file, or SQLite in the data folder)."


def _workspace() -> Path:
    from passdown import pipeline

    return pipeline.workspace_for()


@click.command("mcp")
@click.option("--project", help="The scope to serve (default: the project of this workspace).")
@click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)
def mcp_command(project: str | None, store_url: str | None) -> None:
    """Serve passdown's tools to an agent over MCP (stdio), bound to one project."""
    from passdown.mcp.server import run_stdio
    from passdown.records import default_project
    from passdown.store import open_store

    workspace = _workspace()
    with open_store(store_url) as store:
        run_stdio(store, project or default_project(workspace), workspace)
