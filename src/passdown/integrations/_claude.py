"""Claude Code's hooks (2.1.197 and later).

- MCP server `passdown`: user `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`,
  the file `claude mcp add -s user` writes) `mcpServers`; project `.mcp.json`, enabled in
  `.claude/settings.json` `enabledMcpjsonServers` so it loads without a prompt.
- Hooks in `settings.json` (user `~/.claude/`, project `.claude/`), each running
  `passdown hook claude` with the payload on stdin: `PreCompact` and `SessionEnd` write
  the handoff; `StopFailure` (the turn ended on an API error: rate limit, usage limit,
  overload, auth; it fires in `-p` mode too) writes it at the moment the limit hits and
  records how the session ended; `SessionStart` injects the pickup pointer through
  `hookSpecificOutput.additionalContext`.
- The takeover skill in `skills/passdown-takeover/SKILL.md`.

Where Claude Code runs passdown's plugin (`plugins/claude`, `_plugins.covering`) in the
target's scope, an install writes nothing and says so; an uninstall still removes what
an earlier install wrote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from passdown.integrations._agent_homes import claude_dir as claude_dir
from passdown.integrations._base import (
    PRE_COMPACT,
    SERVER_NAME,
    SESSION_END,
    SESSION_START,
    SKILL_NAME,
    STOP_FAILURE,
    InstallTarget,
    Plan,
    Registered,
    add_settings_hooks,
    drop_file,
    json_edit,
    read_config,
    remove_settings_hooks,
    settings_hook_commands,
    skill_text,
    whole_file,
)
from passdown.integrations._plugins import PluginAwareHooks

WRITE_EVENTS = ["PreCompact", "SessionEnd", "StopFailure"]

# StopFailure's `error` -> the handoff's `ended.reason`
ERROR_REASONS = {
    "rate_limit": "rate_limit",
    "billing_error": "usage_limit",
    "usage_limit": "usage_limit",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "authentication_failed": "auth",
    "auth": "auth",
    "max_output_tokens": "context_length",
    "context_length": "context_length",
}


def claude_json() -> Path:
    """Where `claude mcp add -s user` keeps MCP servers."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else Path.home() / ".claude.json"


class ClaudeHooks(PluginAwareHooks):
    agent = "claude"
    events: ClassVar[dict[str, str]] = {
        "SessionStart": SESSION_START,
        "SessionEnd": SESSION_END,
        "PreCompact": PRE_COMPACT,
        "StopFailure": STOP_FAILURE,
    }

    def _plan(self, target: InstallTarget) -> Plan:
        server = {"type": "stdio", "command": target.command, "args": ["mcp"], "env": {}}
        if target.scope == "user":
            mcp_file, settings, base = claude_json(), claude_dir() / "settings.json", claude_dir()
        else:
            base = target.project_dir / ".claude"
            mcp_file, settings = target.project_dir / ".mcp.json", base / "settings.json"
        events = WRITE_EVENTS + (["SessionStart"] if target.pickup else [])
        enable = target.scope == "project"

        def add_hooks(data: dict[str, Any]) -> None:
            add_settings_hooks(data, self.agent, target.hook_command, events)
            if enable:
                enabled = data.setdefault("enabledMcpjsonServers", [])
                if SERVER_NAME not in enabled:
                    enabled.append(SERVER_NAME)

        def remove_hooks(data: dict[str, Any]) -> None:
            remove_settings_hooks(data, self.agent)
            enabled = data.get("enabledMcpjsonServers")
            if isinstance(enabled, list) and SERVER_NAME in enabled:
                enabled.remove(SERVER_NAME)

        return [
            (mcp_file, json_edit(lambda d: _add_server(d, server)), json_edit(_remove_server)),
            (settings, json_edit(add_hooks), json_edit(remove_hooks)),
            (
                base / "skills" / SKILL_NAME / "SKILL.md",
                whole_file(skill_text(target.command)),
                drop_file,
            ),
        ]

    def commands(self, target: InstallTarget) -> list[Registered]:
        if target.scope == "user":
            mcp_file, settings = claude_json(), claude_dir() / "settings.json"
        else:
            mcp_file = target.project_dir / ".mcp.json"
            settings = target.project_dir / ".claude" / "settings.json"
        found = settings_hook_commands(settings, self.agent)
        try:
            servers = json.loads(read_config(mcp_file) or "{}").get("mcpServers")
        except (ValueError, AttributeError):
            servers = None
        server = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        if isinstance(server, dict) and server.get("command"):
            found.append(Registered(mcp_file, "MCP server", str(server["command"])))
        return found

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        if payload.get("hook_event_name") != "StopFailure":
            return None
        error = str(payload.get("error") or "error")
        details = payload.get("error_details") or payload.get("last_assistant_message")
        return ERROR_REASONS.get(error, "error"), str(details) if details else error


def _add_server(data: dict[str, Any], server: dict[str, Any]) -> None:
    data.setdefault("mcpServers", {})[SERVER_NAME] = server


def _remove_server(data: dict[str, Any]) -> None:
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(SERVER_NAME, None)
