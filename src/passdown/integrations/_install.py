"""`passdown install AGENT`: put passdown inside the agent.

What is installed depends on the agent's hook integration (`passdown.integrations`,
named by each agent module): the MCP server, the hooks that write a handoff when a
session ends, compacts or stops on a limit, the session-start hook that injects the
pickup pointer (unless `--no-pickup`), and the takeover skill. Scopes: user (the agent's
home config) or project (files in the project folder, which passdown never writes
outside of).

All changes go through `files.ManagedEdits` (backups, exact uninstall). `install_all`
and `uninstall_all` take several agents, or `all`, and say what each did and which were
skipped (`Outcome`), which the CLI prints as text or as one JSON document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from passdown.errors import UnknownAgent, UsageError
from passdown.integrations import integrated_agents, integration_for
from passdown.integrations._base import HookIntegration, InstallTarget, Plan
from passdown.integrations._cloud import TARGET as CLOUD
from passdown.integrations._command import CheckedCommand, resolve_command
from passdown.integrations._files import ManagedEdits, planning

SCOPES = ("user", "project")
ALL = "all"  # every agent with a hook integration (those not installed here are skipped)
Target = InstallTarget  # the name earlier releases used


def make_target(
    agent: str, scope: str, project_dir: Path, command: str = "passdown", *, pickup: bool = True
) -> InstallTarget:
    if agent == CLOUD:  # the repository's files, whatever scope the agents were given
        from passdown._pipeline import workspace_for

        return InstallTarget(agent, "project", workspace_for(project_dir), command, pickup)
    if agent not in integrated_agents():
        from passdown.agents._registry import load_agents

        known = load_agents()
        if agent not in known:
            raise UnknownAgent(f"unknown agent {agent!r} (known: {', '.join(sorted(known))})")
        why = getattr(known[agent], "no_hooks", None)  # an agent that says why it has none
        if why:
            raise UsageError(
                f"cannot install into {agent!r}: {why}",
                hint=f"hand a {agent} session off with `passdown run` or `passdown switch`",
            )
        raise UsageError(
            f"cannot install into {agent!r}: expected one of {', '.join(integrated_agents())}"
        )
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}: expected user or project")
    return InstallTarget(agent, scope, project_dir, command, pickup)


def install(target: InstallTarget, *, dry_run: bool = False) -> ManagedEdits:
    """Edit the agent's files for `target` (with `dry_run`, only say how, as diffs)."""
    integration = _integration(target.agent)
    edits = _edits(target)
    edits.dry_run = dry_run
    for path, add, _remove in integration.plan(target):
        edits.apply(path, add)
    edits.notes.extend(integration.notes(target))
    if target.agent == "codex":
        edits.notes.extend(_codex_notify_note(target))
    return edits


def uninstall(target: InstallTarget) -> ManagedEdits:
    edits = _edits(target)
    edits.revert({path: remove for path, _add, remove in _plan(target)})
    return edits


# -- several agents, and what each got -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Skipped:
    agent: str
    reason: str


@dataclass(slots=True)
class AgentOutcome:
    """One agent's install or uninstall: its files as changed, and for an install the
    events its hooks were registered on."""

    target: InstallTarget
    edits: ManagedEdits
    events: list[str] | None = None  # None for an uninstall

    @property
    def changed(self) -> bool:
        return any(change.action != "unchanged" for change in self.edits.changes)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"agent": self.target.agent, "scope": self.target.scope}
        if self.events is not None:
            data["command"] = self.target.command
            data["pickup"] = self.target.pickup
            data["events"] = list(self.events)
        data["changed"] = self.changed
        data["files"] = [change.to_json() for change in self.edits.changes]
        data["notes"] = list(self.edits.notes)
        return data


@dataclass(slots=True)
class Outcome:
    action: str  # install | uninstall
    agents: list[AgentOutcome] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    checked: CheckedCommand | None = None  # install: the command the agents run, as it ran
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "action": self.action,
            "agents": [agent.to_json() for agent in self.agents],
            "skipped": [{"agent": s.agent, "reason": s.reason} for s in self.skipped],
        }
        if self.checked is not None:
            data["check"] = {
                "command": self.checked.command,
                "ok": True,
                "passdown": self.checked.version,
                "package": self.checked.package,
            }
        if self.dry_run:
            data["dry_run"] = True
        return data


# called before each agent's work starts (progress on a terminal)
Started = Callable[[InstallTarget], None]


def _unobserved(_target: InstallTarget) -> None:
    pass


def install_all(
    names: Sequence[str],
    scope: str,
    project_dir: Path,
    command: str | None = None,
    *,
    pickup: bool = True,
    started: Started = _unobserved,
    dry_run: bool = False,
) -> Outcome:
    """Install into each named agent; `all` is every agent with a hook integration
    whose program is on PATH here (the others are skipped, with the reason). Every name,
    and the command the agents will run (`command`, else this install's own script:
    `command.resolve_command`), is checked before any file changes. With `dry_run`
    nothing is written: each file's change is a unified diff."""
    targets, skipped = _targets(names, scope, project_dir, "passdown", pickup, _not_on_path)
    outcome = Outcome("install", skipped=skipped, dry_run=dry_run)
    if not targets:
        return outcome  # `all` with no agent here: no command to check either
    # the cloud files run `passdown` by name in the cloud box: no command to check here
    agents = [target for target in targets if target.agent != CLOUD]
    checked = outcome.checked = resolve_command(command, agents[0].agent) if agents else None
    with planning(dry_run):
        for target in targets:
            if checked is not None and target.agent != CLOUD:
                target = replace(target, command=checked.command)
            started(target)
            edits = install(target, dry_run=dry_run)
            if checked is not None and checked.by_name and target.agent != CLOUD:
                edits.notes.append(
                    f"the hooks run `{checked.command}` by name: the agent must find it on its "
                    "own PATH (it was checked on this one)"
                )
            events = _integration(target.agent).registered_events(target)
            outcome.agents.append(AgentOutcome(target, edits, events))
    return outcome


def uninstall_all(
    names: Sequence[str], scope: str, project_dir: Path, *, started: Started = _unobserved
) -> Outcome:
    """Undo each named agent's install; `all` is every agent installed into in this
    scope (an agent with nothing installed is skipped, with the reason)."""
    targets, skipped = _targets(names, scope, project_dir, "passdown", True, _nothing_installed)
    outcome = Outcome("uninstall", skipped=skipped)
    for target in targets:
        started(target)
        outcome.agents.append(AgentOutcome(target, uninstall(target)))
    return outcome


def _targets(
    names: Sequence[str],
    scope: str,
    project_dir: Path,
    command: str,
    pickup: bool,
    skip_reason: Callable[[InstallTarget], str | None],
) -> tuple[list[InstallTarget], list[Skipped]]:
    """The targets named (`all` expanded, each once, in order), and, for `all` only,
    the agents left out and why; an explicitly named agent is never skipped."""
    targets: list[InstallTarget] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for name in names:
        expanded = integrated_agents() if name == ALL else [name]
        for agent in expanded:
            if agent in seen:
                continue
            seen.add(agent)
            target = make_target(agent, scope, project_dir, command, pickup=pickup)
            reason = skip_reason(target) if name == ALL else None
            if reason is None:
                targets.append(target)
            else:
                skipped.append(Skipped(agent, reason))
    if ALL in names:
        skipped.extend(_without_integration())
    return targets, skipped


def _not_on_path(target: InstallTarget) -> str | None:
    from passdown.agents._registry import get_agent

    agent = get_agent(target.agent)
    return None if agent.is_installed() else f"not installed ({agent.program} is not on PATH)"


def _nothing_installed(target: InstallTarget) -> str | None:
    manifest = ManagedEdits(target.key).manifest_path
    return None if manifest.exists() else f"nothing installed (scope {target.scope})"


def _without_integration() -> list[Skipped]:
    from passdown.agents._registry import load_agents

    integrated = set(integrated_agents())
    return [
        Skipped(name, "no hook integration (use `passdown export` / `switch` by hand)")
        for name in sorted(load_agents())
        if name not in integrated
    ]


# -- helpers -------------------------------------------------------------------------------


def _integration(name: str) -> HookIntegration:
    if name == CLOUD:
        from passdown.integrations._cloud import CloudSetup

        return CloudSetup()
    return integration_for(name)


def _plan(target: InstallTarget) -> Plan:
    return _integration(target.agent).plan(target)


def _edits(target: InstallTarget) -> ManagedEdits:
    """A project install writes only inside the project (its files may be hostile), and
    into the files of the agent's own user config that the integration names."""
    if target.scope != "project":
        return ManagedEdits(target.key)
    outside = frozenset(_integration(target.agent).user_files(target))
    return ManagedEdits(target.key, confine_to=target.project_dir, outside=outside)


def _codex_notify_note(target: InstallTarget) -> list[str]:
    from passdown.integrations._codex import CodexHooks

    hooks = CodexHooks()
    if hooks.lifecycle() or hooks.notifies_passdown(target):
        return []
    # Codex takes one notify program; replacing the user's would break it.
    return [
        f"{hooks.config_file(target)} already sets notify: left as is, so Codex turns do not write "
        f"handoffs; add `{target.command} hook codex` to your notify program"
    ]
