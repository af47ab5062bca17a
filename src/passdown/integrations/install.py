"""`passdown install AGENT`: put passdown inside the agent.

What is installed depends on the agent's hook integration (`passdown.integrations`,
named by each agent module): the MCP server, the hooks that write a handoff when a
session ends, compacts or stops on a limit, the session-start hook that injects the
pickup pointer (unless `--no-pickup`), and the takeover skill. Scopes: user (the agent's
home config) or project (files in the project folder, which passdown never writes
outside of).

All changes go through `files.ManagedEdits` (backups, exact uninstall).
"""

from __future__ import annotations

from pathlib import Path

from passdown.errors import UsageError
from passdown.integrations import integrated_agents, integration_for
from passdown.integrations.base import InstallTarget, Plan
from passdown.integrations.files import ManagedEdits

SCOPES = ("user", "project")
Target = InstallTarget  # the name earlier releases used


def make_target(
    agent: str, scope: str, project_dir: Path, command: str = "passdown", *, pickup: bool = True
) -> InstallTarget:
    if agent not in integrated_agents():
        raise UsageError(
            f"cannot install into {agent!r}: expected one of {', '.join(integrated_agents())}"
        )
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}: expected user or project")
    return InstallTarget(agent, scope, project_dir, command, pickup)


def install(target: InstallTarget) -> ManagedEdits:
    integration = integration_for(target.agent)
    edits = _edits(target)
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


def _plan(target: InstallTarget) -> Plan:
    return integration_for(target.agent).plan(target)


def _edits(target: InstallTarget) -> ManagedEdits:
    """A project install writes only inside the project (its files may be hostile), and
    into the files of the agent's own user config that the integration names."""
    if target.scope != "project":
        return ManagedEdits(target.key)
    outside = frozenset(integration_for(target.agent).user_files(target))
    return ManagedEdits(target.key, confine_to=target.project_dir, outside=outside)


def _codex_notify_note(target: InstallTarget) -> list[str]:
    from passdown.integrations.codex import CodexHooks, codex_home, is_our_notify, parse_toml

    if CodexHooks().lifecycle():
        return []
    config = (
        codex_home() / "config.toml"
        if target.scope == "user"
        else target.project_dir / ".codex" / "config.toml"
    )
    if is_our_notify(parse_toml(config.read_text(encoding="utf-8")).get("notify")):
        return []
    # Codex takes one notify program; replacing the user's would break it.
    return [
        f"{config} already sets notify: left as is, so Codex turns do not write "
        f"handoffs; add `{target.command} hook codex` to your notify program"
    ]
