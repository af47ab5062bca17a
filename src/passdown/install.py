"""`passdown install claude|codex`: put passdown inside the agent.

What is installed, per agent and scope (user = the agent's home config; project = files
in the project folder):

Claude Code
- MCP server `passdown` (`passdown mcp`): user `~/.claude.json` (or
  `$CLAUDE_CONFIG_DIR/.claude.json`) `mcpServers`, the file `claude mcp add -s user`
  writes; project `.mcp.json` (and `enabledMcpjsonServers` in `.claude/settings.json` so
  it loads without a prompt).
- Hooks `PreCompact` and `SessionEnd` running `passdown hook claude` (export --quiet in
  hook mode): user `~/.claude/settings.json`; project `.claude/settings.json`.
- The takeover skill: `~/.claude/skills/passdown-takeover/SKILL.md` (project:
  `.claude/skills/...`).

Codex CLI
- `[mcp_servers.passdown]` and `notify = ["passdown", "hook", "codex"]` (turn completion)
  in `$CODEX_HOME/config.toml` (project: `.codex/config.toml`), as a marked block.
- The skill in `$CODEX_HOME/skills/passdown-takeover/` (project: a marked snippet in
  `AGENTS.md`).

All changes go through `install_files.ManagedEdits` (backups, exact uninstall).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from passdown.errors import UsageError
from passdown.install_files import ManagedEdits, Transform

AGENTS = ("claude", "codex")
SCOPES = ("user", "project")
SERVER_NAME = "passdown"
SKILL_NAME = "passdown-takeover"
SKILLS_DIR = Path(__file__).parent / "skills"
CLAUDE_HOOK_EVENTS = ("PreCompact", "SessionEnd")
HOOK_TIMEOUT_S = 30
BEGIN = "# >>> passdown (managed by `passdown install`; `passdown uninstall` removes it)"
END = "# <<< passdown"
FORWARDED_ENV = ("PASSDOWN_STORE", "PASSDOWN_DATA_DIR")
NOTIFY_MARK = "# passdown: turn-complete hook (managed by `passdown install`)"
MD_BEGIN = "<!-- >>> passdown takeover (managed by `passdown install`) -->"
MD_END = "<!-- <<< passdown takeover -->"


@dataclass(frozen=True, slots=True)
class Target:
    agent: str
    scope: str
    project_dir: Path
    command: str  # the passdown executable the agent runs

    @property
    def key(self) -> str:
        if self.scope == "user":
            return f"{self.agent}-user"
        digest = hashlib.sha256(str(self.project_dir.resolve()).encode()).hexdigest()[:12]
        return f"{self.agent}-project-{digest}"


def skill_text() -> str:
    return (SKILLS_DIR / SKILL_NAME / "SKILL.md").read_text(encoding="utf-8")


def agents_snippet() -> str:
    return (SKILLS_DIR / "AGENTS.md").read_text(encoding="utf-8")


def make_target(agent: str, scope: str, project_dir: Path, command: str = "passdown") -> Target:
    if agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}: expected one of {', '.join(AGENTS)}")
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}: expected user or project")
    return Target(agent, scope, project_dir, command)


def install(target: Target) -> ManagedEdits:
    edits = ManagedEdits(target.key, confine_to=_confinement(target))
    for path, add, _remove in _plan(target):
        edits.apply(path, add)
        if path.name == "config.toml" and not _is_our_notify(parse_toml(path.read_text(encoding="utf-8")).get("notify")):
            # Codex takes one notify program; replacing the user's would break it.
            edits.notes.append(
                f"{path} already sets notify: left as is, so Codex turns do not write "
                f"handoffs; add `{target.command} hook codex` to your notify program"
            )
    return edits


def uninstall(target: Target) -> ManagedEdits:
    edits = ManagedEdits(target.key, confine_to=_confinement(target))
    edits.revert({path: remove for path, _add, remove in _plan(target)})
    return edits


Plan = list[tuple[Path, Transform, Transform]]


def _confinement(target: Target) -> Path | None:
    """A project install writes only inside the project (its files may be hostile)."""
    return target.project_dir if target.scope == "project" else None


def _plan(t: Target) -> Plan:
    return _claude_plan(t) if t.agent == "claude" else _codex_plan(t)


# -- Claude Code ---------------------------------------------------------------------------


def claude_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def claude_json() -> Path:
    """Where `claude mcp add -s user` keeps MCP servers."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else Path.home() / ".claude.json"


def _claude_plan(t: Target) -> Plan:
    server = {"type": "stdio", "command": t.command, "args": ["mcp"], "env": {}}
    hook = f"{t.command} hook claude"
    if t.scope == "user":
        mcp_file, settings, skills = claude_json(), claude_dir() / "settings.json", claude_dir()
    else:
        base = t.project_dir / ".claude"
        mcp_file, settings, skills = t.project_dir / ".mcp.json", base / "settings.json", base
    enable = t.scope == "project"
    return [
        (mcp_file, _json_edit(lambda d: _add_server(d, server)), _json_edit(_remove_server)),
        (settings, _json_edit(lambda d: _add_hooks(d, hook, enable)), _json_edit(_remove_hooks)),
        (skills / "skills" / SKILL_NAME / "SKILL.md", _whole_file(skill_text()), _drop_file),
    ]


def _json_edit(change: Callable[[dict[str, Any]], None]) -> Transform:
    def transform(text: str | None) -> str | None:
        data = _load_json(text)
        before = json.dumps(data, sort_keys=True)
        change(data)
        if json.dumps(data, sort_keys=True) == before:
            return text  # nothing to do: leave the bytes alone
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    return transform


def _load_json(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"cannot change a config file that is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError("cannot change a config file whose JSON is not an object")
    return data


def _add_server(data: dict[str, Any], server: dict[str, Any]) -> None:
    data.setdefault("mcpServers", {})[SERVER_NAME] = server


def _remove_server(data: dict[str, Any]) -> None:
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        servers.pop(SERVER_NAME, None)


def _is_ours(group: Any) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and " hook claude" in str(h.get("command", "")) for h in hooks
    )


def _add_hooks(data: dict[str, Any], command: str, enable_mcpjson: bool) -> None:
    hooks = data.setdefault("hooks", {})
    ours = {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}
    for event in CLAUDE_HOOK_EVENTS:
        groups = [g for g in hooks.get(event, []) if not _is_ours(g)]
        hooks[event] = [*groups, ours]
    if enable_mcpjson:
        enabled = data.setdefault("enabledMcpjsonServers", [])
        if SERVER_NAME not in enabled:
            enabled.append(SERVER_NAME)


def _remove_hooks(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event in CLAUDE_HOOK_EVENTS:
            kept = [g for g in hooks.get(event, []) if not _is_ours(g)]
            if kept:
                hooks[event] = kept
            else:
                hooks.pop(event, None)
    enabled = data.get("enabledMcpjsonServers")
    if isinstance(enabled, list) and SERVER_NAME in enabled:
        enabled.remove(SERVER_NAME)


def _whole_file(content: str) -> Transform:
    return lambda _text: content


def _drop_file(text: str | None) -> str | None:
    return None  # a file passdown created (the skill): on uninstall it goes


# -- Codex ---------------------------------------------------------------------------------


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def _codex_plan(t: Target) -> Plan:
    if t.scope == "user":
        config, skill = codex_home() / "config.toml", codex_home() / "skills" / SKILL_NAME
        skill_edit: tuple[Path, Transform, Transform] = (
            skill / "SKILL.md", _whole_file(skill_text()), _drop_file,
        )
    else:
        config = t.project_dir / ".codex" / "config.toml"
        skill_edit = (t.project_dir / "AGENTS.md", _add_md_block, _remove_md_block)
    return [
        (config, lambda text: _add_toml(text, t.command), _remove_toml),
        skill_edit,
    ]


def _server_table(command: str) -> dict[str, Any]:
    # Codex gives MCP servers a minimal environment: pass passdown's own settings on.
    return {"command": command, "args": ["mcp"], "env_vars": list(FORWARDED_ENV)}


def _notify_value(command: str) -> list[str]:
    return [command, "hook", "codex"]


def parse_toml(text: str | None) -> tomlkit.TOMLDocument:
    """Codex's config as a document that keeps comments and layout; a file passdown
    cannot parse is refused rather than edited blind (exit 2, nothing written)."""
    try:
        return tomlkit.parse(_strip_legacy_blocks(text or ""))
    except TOMLKitError as exc:
        raise UsageError(
            f"cannot change a config file that is not valid TOML: {exc}",
            hint="fix the file (Codex would not load it either), then install again",
        ) from None


def _add_toml(text: str | None, command: str) -> str:
    """`[mcp_servers.passdown]` (updated in place when the user already has one, as
    `codex mcp add` writes it) and a top-level `notify`, unless the user has their own
    notify program: Codex takes one, and replacing it would break theirs."""
    doc = parse_toml(text)
    if "notify" not in doc:
        doc.add("notify", _notify_value(command))
        doc["notify"].comment(NOTIFY_MARK)
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise UsageError("cannot add passdown's MCP server: `mcp_servers` is not a table")
    ours = servers.get(SERVER_NAME)
    if not isinstance(ours, dict):
        servers[SERVER_NAME] = _server_table(command)
    else:
        for key, value in _server_table(command).items():
            if ours.get(key) != value:
                ours[key] = value
    return tomlkit.dumps(doc)


def _is_our_notify(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and list(value[1:]) == ["hook", "codex"]


def _remove_toml(text: str | None) -> str | None:
    """passdown's entries out of a config.toml changed since install (an unchanged one
    is restored byte for byte from the backup instead)."""
    if text is None:
        return None
    doc = parse_toml(text)
    if _is_our_notify(doc.get("notify")):
        del doc["notify"]
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
    return tomlkit.dumps(doc)


def _strip_legacy_blocks(text: str) -> str:
    """What installs before the TOML editor wrote: a marked block and a marked line."""
    text = re.sub(rf"(?ms)\n?^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n?", "", text)
    return re.sub(rf"(?m)^notify = .*{re.escape(NOTIFY_MARK)}\n", "", text)


def _add_md_block(text: str | None) -> str:
    body = _remove_md_block(text) or ""
    sep = "\n" if body and not body.endswith("\n") else ""
    gap = "\n" if body.strip() else ""
    return f"{body}{sep}{gap}{MD_BEGIN}\n{agents_snippet()}{MD_END}\n"


def _remove_md_block(text: str | None) -> str | None:
    if text is None:
        return None
    return re.sub(rf"(?ms)\n?^{re.escape(MD_BEGIN)}\n.*?^{re.escape(MD_END)}\n?", "", text)
