"""The click group of `passdown`: its subcommands (`COMMANDS`) load when invoked."""

from __future__ import annotations

import importlib

import click

from passdown.cli import COMMANDS


class LazyGroup(click.Group):
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
@click.version_option(package_name="passdown", prog_name="passdown")
def cli() -> None:
    """passdown: hand a coding agent's unfinished task to another agent or session.

    Reads the agent's local session history (nine agents: Claude Code, Codex CLI, Gemini
    CLI, Qwen Code, opencode, pi, Copilot CLI, Cursor agent, Aider; `passdown agents`
    lists them) and the workspace's git state, extracts the task's durable state, redacts
    secrets, and writes a portable handoff that the next agent continues from.

    Exit codes: 0 ok, 1 error, 2 bad arguments, 3 no session found, 4 ambiguous session,
    5 unreadable session, 6 target agent not installed, 7 launch failed, 8 cannot write
    the handoff, 9-12 store errors, 13 unknown agent.
    """
