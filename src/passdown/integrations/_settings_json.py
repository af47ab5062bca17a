"""Gemini CLI (0.61) and Qwen Code (0.24): Claude-style command hooks in `settings.json`.

Both read `hooks.<Event>: [{"hooks": [{"type": "command", "command": ...}]}]` from the
user's settings (`~/.gemini/settings.json`, `~/.qwen/settings.json`) and the project's
(`.gemini/settings.json`, `.qwen/settings.json`), run them with a JSON payload on stdin
(`session_id`, `transcript_path`, `cwd`, `hook_event_name`) and take
`hookSpecificOutput.additionalContext` from a `SessionStart` hook. Hooks are on by
default in both (Gemini `hooksConfig.enabled`, Qwen `disableAllHooks`); passdown does not
turn them on where a user turned them off.

Events passdown uses: Gemini `SessionStart`, `SessionEnd`, `PreCompress`; Qwen
`SessionStart`, `Stop` (each turn: the pinned Qwen fires no `SessionEnd` in `-p` runs),
`SessionEnd`, `PreCompact`, `StopFailure` (a turn that ended on an API error; not seen
firing in `-p` runs of the pinned version). The MCP server and skill are not installed for these agents yet.

Where passdown's extension (`plugins/gemini`, `plugins/qwen`: `_plugins.covering`) fires
in the target's scope, an install writes nothing and says so; an uninstall still removes
what an earlier install wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations._agent_homes import gemini_home, qwen_home
from passdown.integrations._base import (
    PRE_COMPACT,
    SESSION_END,
    SESSION_START,
    STOP_FAILURE,
    TURN_COMPLETE,
    InstallTarget,
    Plan,
    Registered,
    add_settings_hooks,
    json_edit,
    remove_settings_hooks,
    settings_hook_commands,
)
from passdown.integrations._claude import ERROR_REASONS
from passdown.integrations._plugins import PluginAwareHooks


class SettingsJsonHooks(PluginAwareHooks):
    folder = ""  # ".gemini"
    write_events: ClassVar[list[str]] = []

    def home(self) -> Path:
        raise NotImplementedError

    def _plan(self, target: InstallTarget) -> Plan:
        base = self.home() if target.scope == "user" else target.project_dir / self.folder
        events = [*self.write_events, *(["SessionStart"] if target.pickup else [])]
        agent = self.agent

        def add(data: dict[str, Any]) -> None:
            # no timeout: the units differ between these CLIs; their defaults are ample
            add_settings_hooks(data, agent, target.hook_command, events, timeout=None)

        return [
            (
                base / "settings.json",
                json_edit(add),
                json_edit(lambda d: remove_settings_hooks(d, agent)),
            )
        ]

    def own_notes(self, target: InstallTarget) -> list[str]:
        return self._hooks_notes()

    def commands(self, target: InstallTarget) -> list[Registered]:
        base = self.home() if target.scope == "user" else target.project_dir / self.folder
        return settings_hook_commands(base / "settings.json", self.agent)

    def _hooks_notes(self) -> list[str]:
        return [
            f"{self.agent}: hooks only (no MCP server or skill yet); the handoff is "
            "written at session end and compaction and picked up at session start"
        ]

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        if payload.get("hook_event_name") != "StopFailure":
            return None
        error = str(payload.get("error") or payload.get("error_type") or "error")
        details = payload.get("error_details") or payload.get("error_message")
        return ERROR_REASONS.get(error, "error"), str(details) if details else error


class GeminiHooks(SettingsJsonHooks):
    agent = "gemini"
    folder = ".gemini"
    write_events: ClassVar[list[str]] = ["SessionEnd", "PreCompress"]
    events: ClassVar[dict[str, str]] = {
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
        "PreCompress": PRE_COMPACT,
    }

    def home(self) -> Path:
        return gemini_home()


class QwenHooks(SettingsJsonHooks):
    agent = "qwen"
    folder = ".qwen"
    # Stop (each turn's end): the pinned Qwen fires no SessionEnd in `-p` runs
    write_events: ClassVar[list[str]] = ["Stop", "SessionEnd", "PreCompact", "StopFailure"]
    events: ClassVar[dict[str, str]] = {
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
        "PreCompact": PRE_COMPACT,
        "StopFailure": STOP_FAILURE,
        "Stop": TURN_COMPLETE,
    }

    def home(self) -> Path:
        return qwen_home()
