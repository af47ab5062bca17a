"""`passdown install | uninstall | hook | run | config`: passdown inside the agents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from passdown.cli._output import json_option

if TYPE_CHECKING:
    from passdown.integrations._install import Outcome, Started

_SCOPE_HELP = "user: the agent's own config in your home; project: files in this project."
_JSON_HELP = "Print what was done (per agent: files, events, pickup; skipped agents) as JSON."


def _project_dir(scope: str) -> Path:
    from passdown import _pipeline as pipeline

    return pipeline.workspace_for() if scope == "project" else Path.cwd()


def _run(verb: str, as_json: bool, work: Callable[[Started], Outcome]) -> None:
    """Do the work with progress on a terminal, then say what was done."""
    from passdown.cli._progress import stages, wanted

    with stages(wanted(as_json=as_json), verb) as stage:
        outcome = work(lambda target: stage(target.agent))
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(outcome.to_json())
        return
    _report(outcome)


def _report(outcome: Outcome) -> None:
    """Each file changed (a dry run: its diff), the events hooked, the command the
    agents run and its check, notes and skipped agents, every value redacted and each
    on one line like all printed output."""
    from passdown._redact import redact
    from passdown._text import safe_text, shown

    for agent in outcome.agents:
        for change in agent.edits.changes:
            click.echo(f"{change.action:9} {shown(change.path)}")
            if change.diff:  # a dry run: the diff as it is (indented), redacted
                click.echo(safe_text(redact(change.diff)), nl=False)
        if agent.events is not None:
            hooked = ", ".join(shown(e) for e in agent.events) or "none"
            pickup = "" if agent.target.pickup else " (pickup off)"
            click.echo(f"{'hooks':9} {agent.target.agent}: {hooked}{pickup}")
        for note in agent.edits.notes:
            click.echo(f"note: {shown(note)}", err=True)
        if not agent.changed:
            click.echo(f"{agent.target.agent}: nothing to {outcome.action}: already done", err=True)
    for skipped in outcome.skipped:
        click.echo(f"skipped {shown(skipped.agent)}: {shown(skipped.reason)}", err=True)
    if outcome.checked is not None:
        checked = outcome.checked
        click.echo(
            f"{'checked':9} {shown(checked.command)} hook --check: runs passdown "
            f"{shown(checked.version)} from {shown(checked.package)}"
        )
    if outcome.dry_run:
        click.echo("dry run: nothing was written", err=True)


_AGENTS = click.argument("agents", nargs=-1, required=True, metavar="AGENT...")
_SCOPE = click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help=_SCOPE_HELP,
)
_JSON = json_option(_JSON_HELP)


@click.command("install")
@_AGENTS
@_SCOPE
@click.option(
    "--command",
    "command",
    default=None,
    help="The passdown executable the agents run (default: this install's own, by its "
    "absolute path; also PASSDOWN_COMMAND). A path, or a name the agents find on their PATH; "
    "checked by running it before anything is written.",
)
@click.option(
    "--no-pickup",
    is_flag=True,
    help="Do not register the session-start hook that points a new session at an unclaimed handoff.",
)
@click.option(
    "--dry-run", is_flag=True, help="Show every file it would change, as a diff; write nothing."
)
@_JSON
def install_command(
    agents: tuple[str, ...],
    scope: str,
    command: str | None,
    no_pickup: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Register passdown with agents (claude, codex, gemini, qwen, copilot, opencode, pi;
    `all`: each of them installed here; `cloud`: this repository's files that cloud
    agents read): hooks that write a handoff when a session
    ends, compacts or stops on a limit, the session-start hook that picks an unclaimed
    handoff up, and for Claude Code and Codex the MCP server and the takeover skill.
    The agents run passdown by its absolute path, checked by running it once
    (`hook --check`) before any file changes. `passdown install git`, in a repository:
    a pre-push hook (chained with the one there) that shares the handoffs on every
    push, in the background; the repository opts in. Idempotent; every changed config file is
    backed up for `passdown uninstall`; `passdown doctor` tells whether the hooks fire."""
    if "git" in agents:  # a repository's pre-push hook (`integrations._git_share`)
        from passdown.integrations._git_share import install_outcome

        _only_git(agents)
        verb = "checking" if dry_run else "installing"
        _run(verb, as_json, lambda _started: install_outcome(Path.cwd(), command, dry_run=dry_run))
        return
    from passdown.integrations._install import install_all

    project = _project_dir(scope)
    _run(
        "checking" if dry_run else "installing",
        as_json,
        lambda started: install_all(
            agents,
            scope,
            project,
            command,
            pickup=not no_pickup,
            started=started,
            dry_run=dry_run,
        ),
    )


@click.command("doctor")
@click.argument("agents", nargs=-1, metavar="[AGENT...]")
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default=None,
    help="Look only at this scope (default: both, the user's config and this project's).",
)
@click.option(
    "--plugins-dir",
    is_flag=True,
    help="Print the folder this passdown serves its agent plugins from (a Claude Code "
    "marketplace; the Gemini CLI and Qwen Code extensions in its plugins/) and exit.",
)
@json_option("Print each agent's diagnosis as JSON ({agents: [...], ok}).")
def doctor_command(
    agents: tuple[str, ...], scope: str | None, plugins_dir: bool, as_json: bool
) -> int:
    """Tell, per agent (default: every agent with a hook integration), whether
    passdown's hooks would fire and why not: installed into the agent, and in which
    scope (user, project; both warns: the hooks may run twice)? does each command its
    config runs exist, and run (`hook --check`)? does the install fit the agent's
    version? is the agent on PATH? Then a line per repository that shares its handoffs
    on push (`passdown install git`): handoffs pending since when, the last error. Exits
    1 when an installed integration cannot fire."""
    if plugins_dir:
        return _print_plugins_dir(as_json)
    from passdown.integrations._doctor import BROKEN, diagnose_all, shared_repositories

    diagnoses = diagnose_all(agents, scope, _project_dir(scope or "project"))
    broken = [d for d in diagnoses if d.status == BROKEN]
    shared = [] if agents else shared_repositories(Path.cwd())
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(
            {
                "agents": [d.to_json() for d in diagnoses],
                "shared": [s.to_json() for s in shared],
                "ok": not broken,
            }
        )
    else:
        _doctor_report(diagnoses)
        _shared_report(shared)
    if broken:
        names = ", ".join(d.agent for d in broken)
        click.echo(f"passdown: error: the hooks of {names} cannot fire (see above)", err=True)
        return 1
    return 0


def _print_plugins_dir(as_json: bool) -> int:
    from passdown.errors import PassdownError
    from passdown.integrations._plugins import plugins_dir

    found = plugins_dir()
    if found is None:
        raise PassdownError(
            "this passdown carries no agent plugins (its package has no agent-plugins "
            "folder and it does not run from a checkout): reinstall it from a wheel or a clone"
        )
    if as_json:
        from passdown.cli._output import emit_json

        emit_json({"plugins_dir": str(found)})
    else:
        click.echo(str(found))
    return 0


def _doctor_report(diagnoses: list[Any]) -> None:
    from passdown._text import shown

    for d in diagnoses:
        status = d.status.replace("_", " ")
        detail = "; ".join(shown(reason) for reason in d.why_not())
        if d.would_fire:
            runs = ", ".join(
                f"{shown(p.program)} (passdown {shown(p.version)})" for p in d.programs
            )
            detail = f"hooks run {runs}"
        where = " and ".join(d.installed_in)
        plural = "s" if len(d.installed_in) > 1 else ""
        scope = f" ({where} scope{plural})" if where else ""
        click.echo(f"{d.agent:9} {status:14} {detail}{scope}".rstrip())
        for warning in d.warnings:
            click.echo(f"warning: {d.agent}: {shown(warning)}", err=True)
        for note in d.notes:
            click.echo(f"note: {d.agent}: {shown(note)}", err=True)


def _shared_report(shared: list[Any]) -> None:
    """A line per repository that shares its handoffs on push (`passdown install git`)."""
    from passdown._text import shown

    for status in shared:
        state = "ok" if status.ok else ("hook broken" if status.hook_problem else "pending")
        click.echo(f"{'git':9} {state:14} {shown(status.line())}")


@click.command("uninstall")
@_AGENTS
@_SCOPE
@_JSON
def uninstall_command(agents: tuple[str, ...], scope: str, as_json: bool) -> None:
    """Undo `passdown install` (`all`: every agent installed into in this scope):
    restore each config file exactly as it was (or, for a file changed since, remove
    only passdown's entries)."""
    if "git" in agents:
        from passdown.integrations._git_share import uninstall_outcome

        _only_git(agents)
        _run("uninstalling", as_json, lambda _started: uninstall_outcome(Path.cwd()))
        return
    from passdown.integrations._install import uninstall_all

    project = _project_dir(scope)
    _run(
        "uninstalling",
        as_json,
        lambda started: uninstall_all(agents, scope, project, started=started),
    )


def _only_git(agents: tuple[str, ...]) -> None:
    if set(agents) != {"git"}:
        from passdown.errors import UsageError

        raise UsageError("`git` goes on its own: `passdown install git`, then the agents")


@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.option(
    "--check",
    is_flag=True,
    help="Say which passdown runs (version, package, Python) and exit 0, doing nothing "
    "else: what `install` and `doctor` run to see that the agents' command works.",
)
@json_option("With --check: print the answer as JSON.")
@click.argument("agent", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_command(check: bool, as_json: bool, agent: str | None, args: tuple[str, ...]) -> int:
    """Run by agent hooks: export the session in the hook's payload (JSON on stdin, or
    Codex notify's last argument), or at session start print the pickup pointer. Never
    fails: errors go to the hook log in the data folder and the exit code is 0.
    `passdown hook --check [AGENT]` only answers (and fails on an unknown AGENT)."""
    if check:
        return _hook_check(None if agent == "git" else agent, as_json)
    if agent == "git":  # the pre-push hook of `passdown install git`
        from passdown.integrations._git_share_run import hook_main

        return hook_main(list(args))
    if agent is None:
        from passdown.errors import UsageError

        raise UsageError(
            "`passdown hook` needs the agent's name (agents run `passdown hook AGENT`)"
        )
    from passdown.integrations._hooks import main

    return main(agent, list(args))


def _hook_check(agent: str | None, as_json: bool) -> int:
    from passdown.integrations._hooks import check_report

    report = check_report(agent)
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(report)
    else:
        from passdown._text import shown

        hooked = f" (hooks of {report['agent']})" if agent else ""
        click.echo(
            f"ok: passdown {shown(report['passdown'])} from {shown(report['package'])}"
            f" with {shown(report['python'])}{hooked}"
        )
    return 0


@click.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.option(
    "--fallback",
    "fallbacks",
    multiple=True,
    help="The agent to continue in when this one stops on a rate or usage limit (repeatable; default: `passdown config get fallback`).",
)
@click.option(
    "--non-interactive",
    is_flag=True,
    help="Run the agent once on a task (the last AGENT_ARG), as its -p/exec mode does.",
)
@click.argument("agent_args", nargs=-1, type=click.UNPROCESSED)
def run_command(
    agent: str, fallbacks: tuple[str, ...], non_interactive: bool, agent_args: tuple[str, ...]
) -> int:
    """Run AGENT as you would; when its session ends on a rate or usage limit (read from
    the session's handoff, never from the terminal), hand off to the next agent of the
    chain with the takeover prompt `switch` uses. Without a fallback, write the handoff
    and print the one command that continues elsewhere. Arguments after `--` go to the
    agent. Exits with the last agent's exit code."""
    from passdown._settings import fallback_chain
    from passdown.integrations._continuity_run import run

    chain = list(fallbacks) or [a for a in fallback_chain() if a != agent]
    return run(agent, chain, list(agent_args), interactive=not non_interactive)


@click.command("config")
@click.argument("action", type=click.Choice(["get", "set", "unset", "list"]))
@click.argument("key", required=False)
@click.argument("value", required=False)
@json_option("Print the settings as a JSON object ({name: value}; null when unset).")
def config_command(action: str, key: str | None, value: str | None, as_json: bool) -> None:
    """Read or change passdown's settings (<data folder>/config.json): `fallback`
    (agents `run` falls over to, e.g. claude,codex), `pickup` (on|off),
    `pickup_max_age_days` (default 7)."""
    settings = _config_change(action, key, value)
    if as_json:
        from passdown.cli._output import emit_json

        emit_json(settings)
        return
    from passdown._settings import SETTINGS
    from passdown._text import shown

    for name, setting in settings.items():
        if action == "list":
            click.echo(f"{name} = {shown(_show(setting))}    # {SETTINGS[name]}")
        elif action == "get":
            click.echo(shown(_show(setting)))
        elif action == "set":
            click.echo(f"{name} = {shown(_show(setting))}")


def _config_change(action: str, key: str | None, value: str | None) -> dict[str, object]:
    """Do `action` and return the settings it is about, as stored ({name: value})."""
    from passdown._settings import SETTINGS, load_config, set_config
    from passdown.errors import UsageError

    if action == "list":
        config = load_config()
        return {name: config.get(name) for name in SETTINGS}
    if key is None:
        raise UsageError(f"`passdown config {action}` needs a setting name: {', '.join(SETTINGS)}")
    if action == "get":
        if key not in SETTINGS:
            raise UsageError(f"unknown setting {key!r}: expected one of {', '.join(SETTINGS)}")
        return {key: load_config().get(key)}
    if action == "set":
        if value is None:
            raise UsageError(f"`passdown config set {key}` needs a value")
        return {key: set_config(key, value)}
    return {key: set_config(key, None)}


def _show(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
