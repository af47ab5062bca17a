"""`passdown install | uninstall | hook`: wire passdown into Claude Code and Codex."""

from __future__ import annotations

from pathlib import Path

import click

_AGENT = click.Choice(["claude", "codex"])
_SCOPE_HELP = "user: the agent's own config in your home; project: files in this project."


def _target(agent: str, scope: str, command: str) -> object:
    from passdown import pipeline
    from passdown.install import make_target

    project = pipeline.workspace_for() if scope == "project" else Path.cwd()
    return make_target(agent, scope, project, command)


def _report(edits: object, verb: str) -> None:
    from passdown.install_files import ManagedEdits

    assert isinstance(edits, ManagedEdits)
    for change in edits.changes:
        click.echo(f"{change.action:9} {change.path}")
    for note in edits.notes:
        click.echo(f"note: {note}", err=True)
    if not any(c.action != "unchanged" for c in edits.changes):
        click.echo(f"nothing to {verb}: already done", err=True)


@click.command("install")
@click.argument("agent", type=_AGENT)
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True, help=_SCOPE_HELP)
@click.option("--command", "command", default="passdown", show_default=True, help="The passdown executable the agent runs (a name on PATH or an absolute path).")
def install_command(agent: str, scope: str, command: str) -> None:
    """Register passdown with an agent: the MCP server, hooks that write a handoff when a
    session ends or compacts (Claude Code) or a turn completes (Codex), and the takeover
    skill. Idempotent; every changed config file is backed up for `passdown uninstall`."""
    from passdown.install import install

    _report(install(_target(agent, scope, command)), "install")  # type: ignore[arg-type]


@click.command("uninstall")
@click.argument("agent", type=_AGENT)
@click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True, help=_SCOPE_HELP)
def uninstall_command(agent: str, scope: str) -> None:
    """Undo `passdown install`: restore each config file exactly as it was (or, for a file
    changed since, remove only passdown's entries)."""
    from passdown.install import uninstall

    _report(uninstall(_target(agent, scope, "passdown")), "uninstall")  # type: ignore[arg-type]


@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_command(agent: str, args: tuple[str, ...]) -> int:
    """Run by agent hooks: `export --quiet` for the session in the hook's payload
    (Claude Code: JSON on stdin; Codex notify: JSON as the last argument). Never fails:
    errors go to the hook log in the data folder and the exit code is 0."""
    from passdown.hooks import main

    return main(agent, list(args))
