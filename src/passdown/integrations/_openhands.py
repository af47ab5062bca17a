"""OpenHands CLI (1.16, SDK 1.21): Claude-style command hooks in `hooks.json`,
`{"hooks": {"<Event>": [{"matcher": "*", "hooks": [{"type": "command", "command": ...,
"timeout": seconds}]}]}}`. OpenHands reads ONE file, the first it finds: the project's
`.openhands/hooks.json`, else the user's `~/.openhands/hooks.json` (the home folder's,
whatever `OPENHANDS_PERSISTENCE_DIR` says). It runs each hook with a JSON payload on
stdin: `{"event_type", "session_id" (a dashed uuid; the folder drops the dashes),
"working_dir", "message", "metadata"}`; there is no transcript path.

Events passdown uses: `Stop` (the agent finished a run: `metadata.reason`), `SessionEnd`
(the CLI exits, also after a run that stopped on an error) and `UserPromptSubmit` for the
pickup: OpenHands adds a hook's `additionalContext` to the user's message there (what a
`SessionStart` hook prints is only logged), so the pointer comes with the first prompt of
a session. OpenHands has no compaction event.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    SESSION_END,
    SESSION_START,
    TURN_COMPLETE,
    HookIntegration,
    InstallTarget,
    Plan,
    Registered,
    add_settings_hooks,
    json_edit,
    remove_settings_hooks,
    settings_hook_commands,
)


class OpenHandsHooks(HookIntegration):
    agent = "openhands"
    merges_scopes = False  # it reads one hooks.json: the project's, else the user's
    pickup_once_per_session = True  # the pointer comes with a prompt: only the first one
    events: ClassVar[dict[str, str]] = {
        "Stop": TURN_COMPLETE,
        "SessionEnd": SESSION_END,
        "UserPromptSubmit": SESSION_START,
    }

    def config_file(self, target: InstallTarget) -> Path:
        base = Path.home() if target.scope == "user" else target.project_dir
        return base / ".openhands" / "hooks.json"

    def plan(self, target: InstallTarget) -> Plan:
        events = self.registered_events(target)
        agent, command = self.agent, target.hook_command

        def add(data: dict[str, Any]) -> None:
            add_settings_hooks(data, agent, command, events, timeout=HOOK_TIMEOUT_S)
            for event in events:  # OpenHands' own shape: each group names its matcher
                for group in data["hooks"][event]:
                    if isinstance(group, dict) and "matcher" not in group:
                        group["matcher"] = "*"

        return [
            (
                self.config_file(target),
                json_edit(add),
                json_edit(lambda d: remove_settings_hooks(d, agent)),
            )
        ]

    def commands(self, target: InstallTarget) -> list[Registered]:
        return settings_hook_commands(self.config_file(target), self.agent)

    def problems(self, target: InstallTarget) -> list[str]:
        if target.scope != "user":
            return []
        project = target.project_dir / ".openhands" / "hooks.json"
        if project.is_file():
            return [
                f"{project} exists: OpenHands reads only that file in this project, "
                "not the user's hooks.json (install with --scope project there)"
            ]
        return []

    def notes(self, target: InstallTarget) -> list[str]:
        return [
            "openhands: hooks only; the handoff is written when the agent finishes and "
            "when the CLI exits, and picked up with the session's first prompt "
            "(OpenHands reads one hooks.json: the project's, else the user's)"
        ]

    # -- the payload -----------------------------------------------------------------
    def event(self, payload: dict[str, Any]) -> str:
        name = str(payload.get("event_type") or payload.get("hook_event_name") or "")
        return self.events.get(name, name or "?")

    def session_id(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("session_id")
        return str(value).replace("-", "") if value else None  # the folder's spelling

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        return self.session_id(payload)

    def cwd(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("working_dir") or payload.get("cwd")
        return str(value) if value else None

    def context_output(self, text: str) -> str:
        return json.dumps({"additionalContext": text}, ensure_ascii=False)
