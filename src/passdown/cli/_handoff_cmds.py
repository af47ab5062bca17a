"""inspect, export, switch, sessions, agents: thin wrappers over `passdown._pipeline`.

Only click is imported at module level; the pipeline loads when a command runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from passdown.cli._output import json_option

if TYPE_CHECKING:
    from passdown.coordinator._doors import HandoffRequest
    from passdown.handoff import Limits

F = TypeVar("F", bound=Callable[..., Any])

_FROM_HELP = "The agent whose session to hand off: claude, codex, another installed agent, or auto (the newest session of any agent)."


def _from_option(default: str | None = "auto") -> Callable[[F], F]:
    return click.option("--from", "source", default=default, show_default=True, help=_FROM_HELP)


def _session_option() -> Callable[[F], F]:
    return click.option(
        "--session",
        "session",
        default=None,
        help="A session id, an id prefix, or a session file path.",
    )


# The handoff's budgets (`passdown.handoff.Limits`, which checks their ranges): option ->
# (field, its default, help). An option not given falls back to `[handoff]` in the data
# folder's config.toml, then to the default. Not read from Limits here: the CLI imports
# only click until a command runs.
LIMIT_OPTIONS = {
    "--max-plan-items": ("max_plan_items", 40, "Plan items listed (open ones first)."),
    "--max-files": ("max_files", 50, "Files listed: touched, and changed meanwhile (each)."),
    "--max-commands": ("max_commands", 20, "Recent commands listed."),
    "--max-failures": ("max_failures", 10, "Failed edits listed."),
    "--max-subagents": ("max_subagents", 20, "Sub-agents listed."),
    "--max-notes": ("max_notes", 10, "Decisions, blockers, open questions, next steps (each)."),
    "--max-warnings": ("max_warnings", 20, "Warnings listed."),
    "--max-doc-chars": ("max_doc_chars", 100_000, "Character budget of HANDOFF.md as a whole."),
}


def _budget_options(func: F) -> F:
    """The transcript's budgets (--max-messages, --max-chars) and the handoff's; the
    command gets the latter as one `limits` argument (None: none given)."""
    names = [field for field, _default, _help in LIMIT_OPTIONS.values()]

    @functools.wraps(func)
    def with_limits(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in names}
        limits = given if any(v is not None for v in given.values()) else None
        return func(*args, limits=limits, **kwargs)

    wrapped: Any = with_limits
    for option, (field, default, help_text) in reversed(LIMIT_OPTIONS.items()):
        wrapped = click.option(
            option,
            field,
            type=click.IntRange(min=1),
            default=None,
            help=f"{help_text} Default: config.toml [handoff] {field}, else {default}.",
        )(wrapped)
    wrapped = click.option(
        "--max-chars",
        type=click.IntRange(min=1000, max=100_000_000),  # pipeline.MAX_CHARS_LIMIT
        default=80_000,
        show_default=True,
        help="Character budget of the portable transcript.",
    )(wrapped)
    wrapped = click.option(
        "--max-messages",
        type=click.IntRange(min=2, max=100_000),  # pipeline.MAX_MESSAGES_LIMIT
        default=24,
        show_default=True,
        help="Message budget of the portable transcript.",
    )(wrapped)
    return cast(F, wrapped)


def _emit_json(data: Any) -> None:
    from passdown.cli._output import emit_json

    emit_json(data)


def _workspace_option() -> Callable[[F], F]:
    return click.option(
        "--workspace",
        "workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Work as if run in DIR, like git -C: its newest session, its .agent-handoff (default: here; a --session of another workspace goes to its own).",
    )


def _out_option() -> Callable[[F], F]:
    return click.option(
        "--out",
        "out",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Folder to write into (default: <workspace>/.agent-handoff).",
    )


def _request(
    source: str,
    session: str | None,
    to: str | None,
    max_messages: int,
    max_chars: int,
    workspace: Path | None,
    limits: dict[str, int | None] | None = None,
) -> HandoffRequest:
    from passdown.coordinator._doors import HandoffRequest

    return HandoffRequest(
        source=source,
        session=session,
        target=to,
        max_messages=max_messages,
        max_chars=max_chars,
        workspace=workspace,
        limits=_limits(limits),
    )


def _limits(given: dict[str, int | None] | None) -> Limits | None:
    """The budgets the options give over config.toml's; None: no option given (the
    pipeline reads config.toml itself)."""
    if given is None:
        return None
    from passdown._budgets import load_limits

    return load_limits(given)


def _warn(warnings: list[str], quiet: bool) -> None:
    if quiet:
        return
    from passdown._text import shown

    for warning in warnings:  # as is, they could carry a session's secrets or escapes
        click.echo(f"passdown: warning: {shown(warning)}", err=True)


@click.command("inspect")
@_from_option()
@_session_option()
@_workspace_option()
@_budget_options
@json_option()
def inspect_command(
    source: str,
    session: str | None,
    workspace: Path | None,
    max_messages: int,
    max_chars: int,
    limits: dict[str, int | None] | None,
    as_json: bool,
) -> None:
    """Show the session that would be used and what would be handed off, without writing."""
    from passdown._render import render_markdown
    from passdown.coordinator import _doors as doors

    request = _request(source, session, None, max_messages, max_chars, workspace, limits)
    prepared = doors.prepare(request, Path.cwd(), store=False)  # prepare only: nothing stored
    handoff = prepared.package.handoff
    assert handoff is not None  # doors.prepare requires a session
    if as_json:
        from passdown._text import json_safe

        click.echo(json_safe(handoff.to_json()))
    else:
        click.echo(render_markdown(handoff), nl=False)
    _warn(handoff.warnings, False)  # stderr: the JSON on stdout stays one document


@click.command("export")
@_from_option()
@click.option(
    "--to", "to", default=None, help="The agent that will take over (recorded in the handoff)."
)
@_session_option()
@_workspace_option()
@_out_option()
@_budget_options
@click.option("--no-store", is_flag=True, help="Do not also save the handoff in the record store.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on success (for hooks).")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also say how the session file was read (from which offset, how many bytes).",
)
@json_option()
def export_command(
    source: str,
    to: str | None,
    session: str | None,
    workspace: Path | None,
    out: Path | None,
    max_messages: int,
    max_chars: int,
    limits: dict[str, int | None] | None,
    no_store: bool,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Write the handoff (.agent-handoff/HANDOFF.md and handoff.json) and print where."""
    from passdown.cli._progress import session_reading, wanted
    from passdown.coordinator import _doors as doors

    request = _request(source, session, to, max_messages, max_chars, workspace, limits)
    with session_reading(wanted(as_json=as_json, quiet=quiet)):
        written = doors.export(request, Path.cwd(), store=False if no_store else None, out_dir=out)
    if as_json:
        _emit_json(_written_summary(written))
    elif not quiet:
        from passdown._text import shown

        if written.unchanged_since:
            click.echo(f"unchanged since {written.unchanged_since}: no new version stored")
        did = "kept" if written.files_kept else "wrote"
        click.echo(f"{did} {shown(written.markdown_path)}\n{did} {shown(written.json_path)}")
        if written.record_id and not written.unchanged_since:
            click.echo(f"stored record {written.record_id}")
    if verbose and written.reading is not None:
        click.echo(f"passdown: {written.reading.line()}", err=True)
    _warn(written.handoff.warnings + written.warnings, quiet)


def _written_summary(written: Any) -> dict[str, Any]:
    h = written.handoff
    return {
        "handoff_id": h.id,
        "markdown": str(written.markdown_path),
        "json": str(written.json_path),
        "record_id": written.record_id,
        "unchanged_since": written.unchanged_since,
        "source": {"agent": h.source.agent, "session_id": h.source.session_id},
        "warnings": h.warnings + written.warnings,
        "read": written.reading.as_dict() if written.reading is not None else None,
    }


@click.command("switch")
@_from_option()
@click.option("--to", "to", required=True, help="The agent to launch: claude, codex, ...")
@_session_option()
@_workspace_option()
@_out_option()
@_budget_options
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the exact command that would run; write, store and launch nothing.",
)
@click.option(
    "--non-interactive",
    is_flag=True,
    help="Run the target once, non-interactively (claude -p, codex exec).",
)
@click.option("--no-store", is_flag=True, help="Do not also save the handoff in the record store.")
@json_option()
def switch_command(
    source: str,
    to: str,
    session: str | None,
    workspace: Path | None,
    out: Path | None,
    max_messages: int,
    max_chars: int,
    limits: dict[str, int | None] | None,
    dry_run: bool,
    non_interactive: bool,
    no_store: bool,
    as_json: bool,
) -> int:
    """Export a handoff, then launch the target agent in the workspace to continue."""
    from passdown._launch import check_argv, format_argv
    from passdown.agents import get_agent
    from passdown.coordinator import _doors as doors

    target = get_agent(to)
    store = not no_store and not dry_run  # a dry run does not even open the store
    request = _request(source, session, to, max_messages, max_chars, workspace, limits)
    prepared = doors.prepare(request, Path.cwd(), store=None if store else False)

    def announce(_spec: Any, result: Any) -> None:
        _warn(result.written.handoff.warnings + result.warnings, False)
        from passdown._text import shown

        click.echo(
            f"passdown: handoff written to {shown(result.written.markdown_path)}; starting {target.display_name}",
            err=True,
        )

    # force: the CLI always hands off (as before); failed checks are shown as warnings.
    # The target is checked before anything is stored or written (exit 6 leaves the
    # previous handoff active), and a dry run writes nothing.
    with prepared.coordinator as coordinator:
        result = coordinator.execute_handoff_sync(
            prepared.package,
            to,
            launch=True,
            interactive=not non_interactive,
            force=True,
            out_dir=out,
            store=store,
            dry_run=dry_run,
            on_launch=None if dry_run else announce,
        )
    if dry_run:
        assert result.argv is not None and result.written is not None  # a dry run plans both
        check_argv(result.argv)
        if as_json:
            _emit_json(
                {
                    **_written_summary(result.written),
                    "argv": result.argv,
                    "cwd": str(result.written.handoff.workspace.path),
                    "target": target.name,
                }
            )
        else:
            click.echo(format_argv(result.argv))
        _warn(result.written.handoff.warnings, as_json)
        return 0
    _warn([f"check {c.name}: {c.message}" for c in result.checks if c.blocking], False)
    return int(result.exit_code or 0)


@click.command("sessions")
@_from_option()
@click.option("--all", "all_", is_flag=True, help="Every workspace, not only this one.")
@json_option()
def sessions_command(source: str, all_: bool, as_json: bool) -> None:
    """List sessions for this workspace (or all), newest first."""
    from passdown import _pipeline as pipeline
    from passdown._redact import redact
    from passdown._text import one_line

    workspace = None if all_ else pipeline.workspace_for()
    agents = pipeline.source_agents(source)
    found = [agent.discover_all(workspace) for agent in agents]
    refs = sorted(
        (ref for each in found for ref in each.refs), key=lambda r: r.updated_at, reverse=True
    )
    # a session file that cannot be opened is not listed (it names no workspace), but said
    _warn([f"cannot read {s.path}: {s.reason}" for each in found for s in each.skipped], False)
    # one that cannot be placed is listed, its workspace unknown ("?"), and said why
    _warn([f"workspace unknown for {r.path}: {r.unplaced}" for r in refs if r.unplaced], False)
    if as_json:
        _emit_json([_ref_json(r) for r in refs])
        return
    if not refs:  # a note, not an error: listing nothing is a valid answer (exit 0)
        from passdown._text import shown

        where = "in any workspace" if workspace is None else f"for {shown(workspace)}"
        click.echo(
            f"passdown: no sessions found {where} (searched: {pipeline.searched(agents)})", err=True
        )
        return
    # AGENT, UPDATED and SESSION as wide as their longest cell (the header too, as in
    # `agents`), CWD last; paths can hold secrets too (a token in a folder name)
    cells = [("AGENT", "UPDATED", "SESSION", "CWD")] + [
        (ref.agent, _when(ref.updated_at), one_line(ref.session_id), one_line(ref.cwd or "?"))
        for ref in refs
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    for row in cells:
        line = "  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True))
        click.echo(redact(f"{line}  {row[3]}"))


def _ref_json(ref: Any) -> dict[str, Any]:
    return {
        "agent": ref.agent,
        "session_id": ref.session_id,
        "path": str(ref.path),
        "cwd": ref.cwd,
        "started_at": ref.started_at,
        "updated_at": _when(ref.updated_at),
        "size": ref.size,
        "unplaced": ref.unplaced,  # why its workspace is unknown (cwd null), else null
    }


def _when(epoch: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@click.command("agents")
@json_option()
def agents_command(as_json: bool) -> None:
    """List the agents passdown knows (built-in and plugins) and whether each is installed."""
    from passdown.agents import load_agents

    rows = [_agent_json(agent) for agent in load_agents().values()]
    if as_json:
        _emit_json(rows)  # redacted like every output: a plugin's path or name may hold a secret
        return
    for line in _agents_table(rows):
        click.echo(line)


def _agent_json(agent: Any) -> dict[str, Any]:
    path = agent.executable()
    return {
        "name": agent.name,
        "display_name": agent.display_name,
        "program": agent.program,
        "installed": path is not None,
        "path": path,
    }


def _agents_table(rows: list[dict[str, Any]]) -> list[str]:
    """NAME, AGENT, INSTALLED (yes/no) and PATH, each column as wide as its longest
    cell, so a long plugin name moves the next column instead of breaking it."""
    from passdown._text import shown

    cells = [("NAME", "AGENT", "INSTALLED", "PATH")] + [
        (
            shown(r["name"]),
            shown(r["display_name"]),
            "yes" if r["installed"] else "no",
            shown(r["path"] or "-"),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in cells
    ]
