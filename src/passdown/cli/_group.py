"""The click group of `passdown`: its subcommands (`COMMANDS`) load when invoked."""

from __future__ import annotations

import importlib

import click

from passdown import __version__
from passdown.cli import COMMANDS


class LazyGroup(click.Group):
    @property
    def help(self) -> str | None:
        """The help as written, with the registered agents filled in (`_help`) when
        it is read: only `--help` (and a docs build) pays for listing them."""
        from passdown.cli._help import with_agents

        return None if self._help_text is None else with_agents(self._help_text)

    @help.setter
    def help(self, text: str | None) -> None:
        self._help_text = text

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attr = target[0].partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
        command: click.Command = getattr(module, attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="passdown")
def cli() -> None:
    """passdown: hand a coding agent's unfinished task to another agent or session.

    Reads the agent's local session history and the workspace's git state, extracts the
    task's durable state, redacts secrets, and writes a portable handoff that the next
    agent continues from.

    Agents: {agents}: CLI agents and editors' chats, built in or from plugins; `passdown
    agents` tells which are installed.

    Exit codes: 0 ok, 1 error, 2 bad arguments, 3 no session found (or the newest one
    cannot be placed in a workspace), 4 ambiguous session or record id, 5 unreadable
    session, 6 target agent not installed, 7 launch failed, 8 cannot write the handoff,
    9-12 store errors (9 the store failed, 10 not found, 11 conflict, 12 invalid
    record), 13 unknown agent, 14 cannot listen (serve), 15 record too large for the
    store, 130 interrupted. `switch` returns the launched agent's own code once it has
    started it.
    """
