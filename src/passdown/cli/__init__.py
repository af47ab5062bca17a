"""The `passdown` (alias `agent-handoff`) command line: a thin door into the pipeline.

Subcommands load lazily so `passdown --help` answers without importing pydantic,
msgspec or a database driver. Errors become a message and an exit code here, in one
place.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

# name -> (module:attribute, one-line help). The help lives here so listing the
# commands does not import them.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": (
        "passdown.cli.handoff_cmds:inspect_command",
        "Show the session that would be handed off, without writing.",
    ),
    "export": (
        "passdown.cli.handoff_cmds:export_command",
        "Write .agent-handoff/HANDOFF.md and handoff.json.",
    ),
    "switch": (
        "passdown.cli.handoff_cmds:switch_command",
        "Export a handoff, then launch the target agent on it.",
    ),
    "sessions": (
        "passdown.cli.handoff_cmds:sessions_command",
        "List agent sessions for this workspace (or all).",
    ),
    "agents": (
        "passdown.cli.handoff_cmds:agents_command",
        "List the agents passdown knows and whether each is installed.",
    ),
    "store": ("passdown.cli.store_cmds:store_command", "Store a record (a file or - for stdin)."),
    "retrieve": ("passdown.cli.store_cmds:retrieve_command", "Print a stored record by id."),
    "find": (
        "passdown.cli.store_cmds:find_command",
        "Query stored records by scope, type, kind, time and text.",
    ),
    "delete": ("passdown.cli.store_cmds:delete_command", "Delete a stored record by id."),
    "mcp": (
        "passdown.cli.mcp_cmds:mcp_command",
        "Serve passdown's tools to an agent over MCP (stdio).",
    ),
    "serve": (
        "passdown.cli.mcp_cmds:serve_command",
        "Team server: MCP over HTTP plus a JSON API, with tokens.",
    ),
    "ui": (
        "passdown.cli.ui_cmds:ui_command",
        "Open a local web view of the stored handoffs (127.0.0.1).",
    ),
    "token": (
        "passdown.cli.mcp_cmds:token_command",
        "Create or revoke bearer tokens for `passdown serve`.",
    ),
    "install": (
        "passdown.cli.install_cmds:install_command",
        "Register passdown's hooks (Claude Code, Codex: MCP, skill) with agents, or all.",
    ),
    "uninstall": (
        "passdown.cli.install_cmds:uninstall_command",
        "Undo `passdown install`, restoring the config files.",
    ),
    "hook": (
        "passdown.cli.install_cmds:hook_command",
        "Run by agent hooks: export a handoff quietly; never fails.",
    ),
    "run": (
        "passdown.cli.install_cmds:run_command",
        "Run an agent; on a rate or usage limit, continue in the next one.",
    ),
    "config": (
        "passdown.cli.install_cmds:config_command",
        "Read or change settings: fallback chain, pickup.",
    ),
}


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


def main(argv: list[str] | None = None) -> int:
    from passdown.errors import PassdownError, exit_code_for

    args = sys.argv[1:] if argv is None else argv
    as_json = _wants_json(args)
    try:
        result = cli.main(args=args, prog_name="passdown", standalone_mode=False)
    except PassdownError as exc:
        _print_error(exc.message, exc.hint, exit_code_for(exc), as_json=as_json)
        return exit_code_for(exc)
    except click.exceptions.Abort:
        _print_error("aborted", None, 130, as_json=as_json)
        return 130
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        code = 2 if isinstance(exc, click.UsageError) else exc.exit_code
        _print_error(exc.format_message(), _usage_hint(exc), code, as_json=as_json)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly; the traceback only on request
        if os.environ.get("PASSDOWN_DEBUG"):
            raise
        _print_error(
            f"internal error ({type(exc).__name__}): {exc}",
            "this is a bug in passdown; rerun with PASSDOWN_DEBUG=1 for the traceback",
            1,
            as_json=as_json,
        )
        return 1
    return result if isinstance(result, int) else 0


def _wants_json(args: list[str]) -> bool:
    """`--json` among the options (not after `--`, where the target agent's args go)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def _usage_hint(exc: click.ClickException) -> str | None:
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return "run 'passdown --help'"
    return f"run '{ctx.command_path} --help'"


def _print_error(message: str, hint: str | None, code: int, *, as_json: bool) -> None:
    """Every error, one format: `passdown: error: ...` and a hint, or with --json one JSON
    object on stderr. Redacted, and flattened to one line each (a message may quote
    session text)."""
    import json

    from passdown.text import shown

    message = shown(message)
    hint = shown(hint) if hint else None
    if as_json:
        click.echo(json.dumps({"error": message, "code": code, "hint": hint}), err=True)
        return
    click.echo(f"passdown: error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)


def run() -> None:
    sys.exit(main())
