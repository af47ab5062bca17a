"""GitHub Copilot CLI (1.0.102): command hooks in `$COPILOT_HOME/settings.json` `hooks`
(user scope; the schema of `.github/hooks/*.json`, which is the project scope).

Each handler is `{"type": "command", "bash": ..., "timeoutSec": N}` and gets a JSON
payload on stdin that does not name its event (`sessionId`, `cwd`, and per event
`source`, `prompt`, `reason`, `error`...), so the event is the command's argument:
`passdown hook copilot sessionEnd`. Copilot takes `additionalContext` from a
`userPromptSubmitted` hook (not from `sessionStart`), so the pickup pointer is injected
with the session's first prompt. `sessionEnd` and `preCompact` write the handoff;
`errorOccurred` records a rate or usage limit as the session's ending (not a
context-limit error, which Copilot answers by compacting and retrying).

Where Copilot runs passdown's Claude Code plugin (`_plugins.covering`), an install writes
nothing and says so; an uninstall still removes what an earlier install wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations._agent_homes import copilot_home as copilot_home
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    PRE_COMPACT,
    SESSION_END,
    SESSION_START,
    STOP_FAILURE,
    InstallTarget,
    Plan,
    Registered,
    json_edit,
    settings_hook_commands,
)
from passdown.integrations._command import POSIX, POWERSHELL, hook_line, hook_shell
from passdown.integrations._plugins import PluginAwareHooks

WRITE_EVENTS = ["sessionEnd", "preCompact", "errorOccurred"]
# An error Copilot answers by compacting the history and retrying (compaction trigger
# `context_limit_retry`): no ending. Should the retry fail too, its session file says so.
CONTEXT_OVERFLOW = (
    "context_length_exceeded",
    "maximum context length",
    "context limit",
    "context window",
    "prompt is too long",
)
PICKUP_EVENT = "userPromptSubmitted"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class CopilotHooks(PluginAwareHooks):
    agent = "copilot"
    pickup_once_per_session = True  # the pointer comes with a prompt: only the first one
    events: ClassVar[dict[str, str]] = {
        PICKUP_EVENT: SESSION_START,
        "sessionEnd": SESSION_END,
        "preCompact": PRE_COMPACT,
        "errorOccurred": STOP_FAILURE,
    }

    def wants_stdin(self, args: list[str]) -> bool:
        return True

    def _plan(self, target: InstallTarget) -> Plan:
        events = [*WRITE_EVENTS, *([PICKUP_EVENT] if target.pickup else [])]
        if target.scope == "user":
            path, wrapped = copilot_home() / "settings.json", False
        else:
            path, wrapped = target.project_dir / ".github" / "hooks" / "passdown.json", True

        def add(data: dict[str, Any]) -> None:
            if wrapped:
                data.setdefault("version", 1)
            _remove(data)
            hooks = data.setdefault("hooks", {})
            for event in events:
                # Copilot runs `bash` on Linux and macOS, `powershell` on Windows
                handler = {
                    "type": "command",
                    "bash": hook_line(target.command, "copilot", event, shell=POSIX),
                    "powershell": hook_line(target.command, "copilot", event, shell=POWERSHELL),
                    "timeoutSec": HOOK_TIMEOUT_S,
                }
                hooks[event] = [*hooks.get(event, []), handler]

        def remove(data: dict[str, Any]) -> None:
            _remove(data)
            if wrapped and set(data) <= {"version"}:
                data.clear()

        return [(path, json_edit(add), _drop_if_empty(json_edit(remove)))]

    def commands(self, target: InstallTarget) -> list[Registered]:
        if target.scope == "user":
            path = copilot_home() / "settings.json"
        else:
            path = target.project_dir / ".github" / "hooks" / "passdown.json"
        key = "powershell" if hook_shell(self.agent) == POWERSHELL else "bash"
        return settings_hook_commands(path, self.agent, key=key)

    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        data = json.loads(stdin_text or "{}")
        if not isinstance(data, dict):
            raise ValueError("hook payload is not a JSON object")
        if args:
            data["hook_event_name"] = args[0]  # Copilot's payload does not say its event
        return data

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        return self.session_id(payload)

    def session_id(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("sessionId")
        return str(value) if value else None

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        if payload.get("hook_event_name") != "errorOccurred":
            return None
        error = payload.get("error")
        message = str(error.get("message") if isinstance(error, dict) else error or "")
        lowered = message.lower()
        if any(marker in lowered for marker in CONTEXT_OVERFLOW):
            return None
        if "rate limit" in lowered or "rate_limit" in lowered or "429" in lowered:
            reason = "rate_limit"
        elif "quota" in lowered or "usage limit" in lowered or "billing" in lowered:
            reason = "usage_limit"
        else:
            reason = "error"
        return reason, message[:500] or None

    def context_output(self, text: str) -> str:
        return json.dumps({"additionalContext": text}, ensure_ascii=False)

    def retry_log(self, payload: dict[str, Any]) -> Path | None:
        # 1.0.102 fires errorOccurred on every retry of a 429, `recoverable: true` even on
        # the last: the events file tells a retry (only hook records added) from a new turn
        session = self.session_id(payload)
        if not session or not _SESSION_ID.fullmatch(session):
            return None  # a payload's id never leads out of the session store
        return copilot_home() / "session-state" / session / "events.jsonl"

    def only_retry_noise(self, appended: bytes) -> bool:
        """Between two retries Copilot appends only `hook.start`/`hook.end` records (of
        the errorOccurred hook itself), whole lines."""
        if appended and not appended.endswith(b"\n"):
            return False  # a record still being written: count it as news
        for line in appended.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                return False
            if not (isinstance(record, dict) and str(record.get("type")).startswith("hook.")):
                return False
        return True


def _remove(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        handlers = hooks[event]
        if not isinstance(handlers, list):
            continue
        kept = [
            h
            for h in handlers
            if not (isinstance(h, dict) and " hook copilot " in f"{h.get('bash', '')} ")
        ]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]


def _drop_if_empty(transform: Any) -> Any:
    """A hooks file passdown created and emptied goes (on a changed file's uninstall)."""

    def run(text: str | None) -> str | None:
        result = transform(text)
        return None if result is not None and json.loads(result) == {} else result

    return run
