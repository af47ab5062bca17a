"""The click group of `passdown`: its subcommands (`COMMANDS`) load when invoked."""

from __future__ import annotations

import importlib

import click

from passdown import __version__

# name -> (module:attribute, one-line help). The help lives here so listing the
# commands does not import them.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": (
        "passdown.cli._handoff_cmds:inspect_command",
        "Show the session that would be handed off, without writing.",
    ),
    "export": (
        "passdown.cli._handoff_cmds:export_command",
        "Write .agent-handoff/HANDOFF.md and handoff.json.",
    ),
    "switch": (
        "passdown.cli._handoff_cmds:switch_command",
        "Export a handoff, then launch the target agent on it.",
    ),
    "sessions": (
        "passdown.cli._handoff_cmds:sessions_command",
        "List agent sessions for this workspace (or all).",
    ),
    "agents": (
        "passdown.cli._handoff_cmds:agents_command",
        "List the agents passdown knows and whether each is installed.",
    ),
    "store": ("passdown.cli._store_cmds:store_command", "Store a record (a file or - for stdin)."),
    "retrieve": ("passdown.cli._store_cmds:retrieve_command", "Print a stored record by id."),
    "find": (
        "passdown.cli._store_cmds:find_command",
        "Query stored records by scope, type, kind, time and text.",
    ),
    "delete": ("passdown.cli._store_cmds:delete_command", "Delete a stored record by id."),
    "push": (
        "passdown.cli._share_cmds:push_command",
        "Push this repository's handoffs to a git remote (refs/passdown/).",
    ),
    "pull": (
        "passdown.cli._share_cmds:pull_command",
        "Import the handoffs a git remote holds for this repository.",
    ),
    "scope": (
        "passdown.cli._share_cmds:scope_command",
        "Print this repository's project scope, or name it for every clone.",
    ),
    "mcp": (
        "passdown.cli._mcp_cmds:mcp_command",
        "Serve passdown's tools to an agent over MCP (stdio).",
    ),
    "serve": (
        "passdown.cli._mcp_cmds:serve_command",
        "Team server: MCP over HTTP plus a JSON API, with tokens.",
    ),
    "ui": (
        "passdown.cli._ui_cmds:ui_command",
        "Open a local web view of the stored handoffs (127.0.0.1).",
    ),
    "token": (
        "passdown.cli._mcp_cmds:token_command",
        "Create or revoke bearer tokens for `passdown serve`.",
    ),
    "install": (
        "passdown.cli._install_cmds:install_command",
        "Register passdown's hooks (Claude Code, Codex: MCP, skill) with agents, or all.",
    ),
    "uninstall": (
        "passdown.cli._install_cmds:uninstall_command",
        "Undo `passdown install`, restoring the config files.",
    ),
    "doctor": (
        "passdown.cli._install_cmds:doctor_command",
        "Tell, per agent, whether passdown's hooks would fire, and why not.",
    ),
    "demo": (
        "passdown.cli._demo_cmds:demo_command",
        "Hand off an example session (shipped) into a scratch folder: see it work.",
    ),
    "hook": (
        "passdown.cli._install_cmds:hook_command",
        "Run by agent hooks: export a handoff quietly; never fails.",
    ),
    "run": (
        "passdown.cli._install_cmds:run_command",
        "Run an agent; on a rate or usage limit, continue in the next one.",
    ),
    "config": (
        "passdown.cli._install_cmds:config_command",
        "Read or change settings: fallback chain, pickup.",
    ),
    "completion": (
        "passdown.cli._completion_cmds:completion_command",
        "Print the shell-completion script for bash, zsh or fish.",
    ),
}


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
    store, 16 push/pull could not reach or update the remote, 17 pull refused some
    records, 18 team server unreachable, 19 token refused (none, unknown or revoked), 20
    token of another project, 130 interrupted. `switch` returns the launched agent's own
    code once it has started it.
    """
