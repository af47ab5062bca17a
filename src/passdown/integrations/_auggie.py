"""Auggie (0.36): Claude-style command hooks in `settings.json`.

Auggie reads `hooks.<Event>: [{"hooks": [{"type": "command", "command": ...}]}]` from
`~/.augment/settings.json` (`$PASSDOWN_AUGGIE_DIR` for passdown; Auggie itself moves the
folder only with `--augment-cache-dir`) and a project's `.augment/settings.json`, and runs
each with a JSON payload on stdin: `hook_event_name`, `conversation_id` (the session: its
file is `sessions/<conversation_id>.json`; there is no transcript path) and
`workspace_roots`.

Events passdown uses: `Stop` (each turn's end) and `SessionEnd`. Auggie has no compaction
event and no failure event: a turn its retries gave up on fires `SessionEnd` without
`Stop`, and the export reads the stopped turn from the file. There is no pickup at session
start: the pinned Auggie runs `SessionStart` and `PromptSubmit` hooks but drops what they
return for the model (it only logs it), so the handoff is taken up by `passdown run` or
`passdown switch`. Hooks run only when the Augment backend turns them on
(`feature_flags.enable_hooks` in its `get-models` reply); `passdown doctor` cannot see
that flag, so the install says so.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations._base import SESSION_END, TURN_COMPLETE, InstallTarget, Plan
from passdown.integrations._settings_json import SettingsJsonHooks


def augment_dir() -> Path:
    configured = os.environ.get("PASSDOWN_AUGGIE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".augment"


class AuggieHooks(SettingsJsonHooks):
    agent = "auggie"
    folder = ".augment"
    write_events: ClassVar[list[str]] = ["Stop", "SessionEnd"]
    events: ClassVar[dict[str, str]] = {"SessionEnd": SESSION_END, "Stop": TURN_COMPLETE}

    def home(self) -> Path:
        return augment_dir()

    def plan(self, target: InstallTarget) -> Plan:
        # no SessionStart hook: Auggie would run it and drop the pointer it prints
        return super().plan(replace(target, pickup=False))

    def notes(self, target: InstallTarget) -> list[str]:
        return [
            "auggie: hooks only (no MCP server or skill yet); the handoff is written at each "
            "turn's end and session end; Auggie drops what a session-start hook prints, so "
            "pick the handoff up with `passdown run` or `passdown switch`; Auggie runs hooks "
            "only when your Augment account has them enabled"
        ]

    def session_id(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("conversation_id") or payload.get("session_id")
        return str(value) if value else None

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        """The session file itself (named by the conversation id), else the id."""
        session = self.session_id(payload)
        if not session or "/" in session or "\\" in session or session in (".", ".."):
            return None
        path = augment_dir() / "sessions" / f"{session}.json"
        return str(path) if path.is_file() else session

    def cwd(self, payload: dict[str, Any]) -> str | None:
        roots = payload.get("workspace_roots")
        if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
            return roots[0]
        value = payload.get("cwd")
        return str(value) if value else None
