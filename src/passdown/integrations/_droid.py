"""Factory Droid (0.225): Claude-style command hooks in `settings.json`.

Droid reads `hooks.<Event>: [{"hooks": [{"type": "command", "command": ..., "timeout":
seconds}]}]` from the user's `~/.factory/settings.json` (`$FACTORY_HOME_OVERRIDE`
replaces the home folder) and the project's `.factory/settings.json`, runs each with a
JSON payload on stdin (`session_id`, `transcript_path` = the session's JSONL, `cwd`,
`hook_event_name`) and takes `hookSpecificOutput.additionalContext` from a SessionStart
hook. Its events are Claude's without StopFailure: passdown writes the handoff at `Stop`
(each turn's end: a turn a 429 ended records its outcome in the log, which the export
reads), `SessionEnd` and `PreCompact`, and picks it up at `SessionStart`.

Droid also installs passdown's Claude Code plugin from the repository's marketplace
(`droid plugin install`; `_plugins.droid_plugins`), whose launcher runs its hooks as
`passdown hook droid`: where it fires, `install` writes nothing and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from passdown.integrations._agent_homes import factory_home
from passdown.integrations._base import (
    PRE_COMPACT,
    SESSION_END,
    SESSION_START,
    TURN_COMPLETE,
    InstallTarget,
)
from passdown.integrations._settings_json import SettingsJsonHooks


class DroidHooks(SettingsJsonHooks):
    agent = "droid"
    folder = ".factory"
    write_events: ClassVar[list[str]] = ["Stop", "SessionEnd", "PreCompact"]
    events: ClassVar[dict[str, str]] = {
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
        "PreCompact": PRE_COMPACT,
        "Stop": TURN_COMPLETE,
    }

    def home(self) -> Path:
        return factory_home()

    def own_notes(self, target: InstallTarget) -> list[str]:
        return [
            "droid: hooks only (no MCP server or skill yet); the handoff is written at each "
            "turn's end, session end and compaction, and picked up at session start"
        ]
