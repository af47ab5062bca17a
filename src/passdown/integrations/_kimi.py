"""Kimi CLI (1.51): Claude-style command hooks as `[[hooks]]` tables in its one config
file, `~/.kimi/config.toml` (`$KIMI_SHARE_DIR/config.toml`): `{event, command, matcher,
timeout}`. Kimi runs each with a JSON payload on stdin (`hook_event_name`, `session_id`,
`cwd`; no transcript path: the session is found by its id).

Events passdown uses: `Stop` (each turn's end), `SessionEnd`, `PreCompact`, and
`StopFailure` (a step that failed after Kimi's retries: `error_type`, `error_message`
such as "Error code: 429 - ..."). Kimi ignores what a `SessionStart` or
`UserPromptSubmit` hook prints (only a "block" decision counts), so there is no pickup
at session start: the handoff is written, and taken up by `passdown run`/`switch`.
Kimi reads hooks from the user config only: `--scope project` is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations import _toml_hooks as toml_hooks
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    PRE_COMPACT,
    SESSION_END,
    STOP_FAILURE,
    TURN_COMPLETE,
    HookIntegration,
    InstallTarget,
    Plan,
    Registered,
)

_HOOKS = toml_hooks.HookArray("config.toml")


def kimi_dir() -> Path:
    configured = os.environ.get("KIMI_SHARE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".kimi"


class KimiHooks(HookIntegration):
    agent = "kimi"
    scopes: ClassVar[tuple[str, ...]] = ("user",)  # `--scope project` is refused
    events: ClassVar[dict[str, str]] = {
        "Stop": TURN_COMPLETE,
        "SessionEnd": SESSION_END,
        "PreCompact": PRE_COMPACT,
        "StopFailure": STOP_FAILURE,
    }

    def config_file(self, target: InstallTarget) -> Path:
        if target.scope != "user":
            raise UsageError(
                "Kimi CLI reads hooks only from its user config (~/.kimi/config.toml)",
                hint="install with --scope user",
            )
        return kimi_dir() / "config.toml"

    def plan(self, target: InstallTarget) -> Plan:
        wanted = [
            {"event": event, "command": target.hook_command, "timeout": HOOK_TIMEOUT_S}
            for event in self.registered_events(target)
        ]
        return [(self.config_file(target), *toml_hooks.edits(_HOOKS, self.agent, wanted))]

    def registered_events(self, target: InstallTarget) -> list[str]:
        return list(self.events)  # no session-start hook: Kimi ignores its output

    def commands(self, target: InstallTarget) -> list[Registered]:
        return _HOOKS.registered(self.config_file(target), self.agent, "event")

    def notes(self, target: InstallTarget) -> list[str]:
        return [
            "kimi: hooks only; the handoff is written at each turn's end, session end, "
            "compaction and a failed step (a rate limit); Kimi ignores session-start hook "
            "output, so pick the handoff up with `passdown run` or `passdown switch`"
        ]

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("session_id")
        return str(value) if value else None

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        if payload.get("hook_event_name") != "StopFailure":
            return None
        from passdown.agents._endings import classify_api_error, short_message

        kind = str(payload.get("error_type") or "")
        message = str(payload.get("error_message") or kind or "error")
        return classify_api_error(message, kind=kind or None), short_message(message)
