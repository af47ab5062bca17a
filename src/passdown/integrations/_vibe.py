"""Mistral Vibe (3.0): command hooks as `[[hooks]]` tables in `hooks.toml`, the user's
`~/.vibe/hooks.toml` (`$VIBE_HOME/hooks.toml`) or a trusted project's
`.vibe/hooks.toml`: `{name, type: post_agent|pre_tool|post_tool, command, timeout}`.
Vibe runs each in the session's cwd with a JSON payload on stdin (`hook_event_name`,
`session_id`, `transcript_path` = the session's folder in the unified store, `cwd`,
`agent_name`); a hook must print nothing or a structured-response object.

Vibe has no session start, end or compaction event: passdown writes the handoff at
`post_agent` (each turn's end, main agent only: `match = "main"`). The turn's records are
then still in the store's recovery journal (the new generation is written after the
hook), which the reader replays. There is no pickup at session start: the handoff is
taken up by `passdown run`/`switch`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations import _toml_hooks as toml_hooks
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    TURN_COMPLETE,
    HookIntegration,
    InstallTarget,
    Plan,
    Registered,
)

HOOK_NAME = "passdown-handoff"  # Vibe wants a name unique within the file
_HOOKS = toml_hooks.HookArray("hooks.toml")


def vibe_home() -> Path:
    configured = os.environ.get("VIBE_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".vibe"


class VibeHooks(HookIntegration):
    agent = "vibe"
    events: ClassVar[dict[str, str]] = {"post_agent": TURN_COMPLETE}

    def config_file(self, target: InstallTarget) -> Path:
        if target.scope == "user":
            return vibe_home() / "hooks.toml"
        return target.project_dir / ".vibe" / "hooks.toml"

    def plan(self, target: InstallTarget) -> Plan:
        wanted = {
            "name": HOOK_NAME,
            "type": "post_agent",
            "match": "main",  # the session's own agent, not each subagent's turns
            "command": target.hook_command,
            "timeout": float(HOOK_TIMEOUT_S),
        }
        return [(self.config_file(target), *toml_hooks.edits(_HOOKS, self.agent, [wanted]))]

    def registered_events(self, target: InstallTarget) -> list[str]:
        return list(self.events)  # no session-start event in Vibe

    def commands(self, target: InstallTarget) -> list[Registered]:
        return _HOOKS.registered(self.config_file(target), self.agent, "type")

    def notes(self, target: InstallTarget) -> list[str]:
        where = "" if target.scope == "user" else " (Vibe reads it only in trusted folders)"
        return [
            f"vibe: hooks only{where}; the handoff is written at each turn's end "
            "(post_agent); Vibe has no session-start hook, so pick the handoff up with "
            "`passdown run` or `passdown switch`"
        ]

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        # transcript_path is the session's folder; the id finds it in the store
        value = payload.get("session_id")
        return str(value) if value else None
