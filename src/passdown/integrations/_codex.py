"""Codex CLI's hooks.

- `[mcp_servers.passdown]` in `$CODEX_HOME/config.toml` (project: `.codex/config.toml`).
- Lifecycle hooks, where the installed Codex has them (0.171: the `hooks` feature,
  stable and on by default; `codex features list` says so): `[hooks]` tables in the same
  config.toml running `passdown hook codex` with the payload on stdin. `SessionStart`
  injects the pickup pointer (`hookSpecificOutput.additionalContext`); `PreCompact`,
  `Stop` (every turn) and `SessionEnd` write the handoff. Codex runs only hooks the user
  trusted: passdown records the trust as Codex does, `[hooks.state."<file>:<event>:<group>:<handler>"]`
  with `trusted_hash` = sha256 of the hook's normalised identity (canonical JSON of
  event_name + matcher group), so a plain `codex exec` runs them.
- Older Codex: `notify = ["passdown", "hook", "codex"]` (turn completion, JSON as the last
  argument), never replacing a user's own notify program.
- A Codex that cannot be asked (not on PATH yet, or failing) gets the form the newest
  Codex passdown knows reads, the lifecycle hooks, and the install says so; `passdown
  doctor` says when an install no longer fits the Codex installed since (hooks that an
  older Codex does not run, or a notify where the Codex now has hooks).
- The skill in `$CODEX_HOME/skills/passdown-takeover/` (project: a snippet in AGENTS.md).
- Codex also installs passdown's Claude Code plugin (`codex plugin marketplace add`,
  `codex plugin add passdown@passdown`; `_plugins.codex_plugins`): where it is enabled,
  `install` writes nothing and says so.

tomlkit is imported where a config file is read or edited, not with the module: a hook
event loads this module and edits nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations._agent_homes import codex_home
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    PRE_COMPACT,
    SERVER_NAME,
    SESSION_END,
    SESSION_START,
    SKILL_NAME,
    TURN_COMPLETE,
    InstallTarget,
    Plan,
    Registered,
    add_md_block,
    drop_file,
    program_of,
    read_config,
    remove_md_block,
    skill_text,
    whole_file,
)
from passdown.integrations._codex_version import (
    NEWEST_KNOWN,
    codex_version,
    has_lifecycle_hooks,
)
from passdown.integrations._command import hook_line
from passdown.integrations._plugins import PluginAwareHooks, covering

if TYPE_CHECKING:
    import tomlkit

FORWARDED_ENV = ("PASSDOWN_STORE", "PASSDOWN_DATA_DIR")
NOTIFY_MARK = "# passdown: turn-complete hook (managed by `passdown install`)"
# markers of installs made before the TOML editor (removed when met)
LEGACY_BEGIN = "# >>> passdown (managed by `passdown install`; `passdown uninstall` removes it)"
LEGACY_END = "# <<< passdown"
# Codex's event names in config and the snake-case labels its trust keys and hashes use
EVENT_LABELS = {
    "SessionStart": "session_start",
    "PreCompact": "pre_compact",
    "Stop": "stop",
    "SessionEnd": "session_end",
}
WRITE_EVENTS = ["PreCompact", "Stop", "SessionEnd"]
# Codex cuts a SessionEnd hook's timeout to 3 s and hashes the cut value into the hook's
# trust: registered with more, its recorded trust never matches and Codex skips the hook
# (hooks/src/engine/config: "clamping SessionEnd hook timeout to 3s").
SESSION_END_TIMEOUT_S = 3


def hook_timeout(event: str, configured: int = HOOK_TIMEOUT_S) -> int:
    """The timeout Codex runs (and hashes) a hook of `event` with."""
    return min(configured, SESSION_END_TIMEOUT_S) if event == "SessionEnd" else configured


def trusted_hash(event: str, command: str, timeout: int = HOOK_TIMEOUT_S) -> str:
    """Codex's `current_hash` of a command hook (hooks/src/engine/discovery.rs
    `command_hook_hash`): the TOML of {event_name, matcher?, hooks: [normalised handler]}
    turned into JSON with sorted keys, compact, sha256."""
    identity = {
        "event_name": EVENT_LABELS[event],
        "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}],
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class CodexHooks(PluginAwareHooks):
    agent = "codex"
    events: ClassVar[dict[str, str]] = {
        "SessionStart": SESSION_START,
        "PreCompact": PRE_COMPACT,
        "Stop": TURN_COMPLETE,
        "SessionEnd": SESSION_END,
        "agent-turn-complete": TURN_COMPLETE,
    }

    def __init__(self, lifecycle: bool | None = None) -> None:
        self._lifecycle = lifecycle  # None: ask the installed Codex

    def codex_says(self) -> bool | None:
        """Whether the installed Codex has lifecycle hooks; None: it cannot be asked."""
        return has_lifecycle_hooks() if self._lifecycle is None else self._lifecycle

    def lifecycle(self) -> bool:
        """Whether an install writes the lifecycle hooks: where the installed Codex has
        them, and where it cannot be asked (the form the newest Codex reads)."""
        return self.codex_says() is not False

    def _plan(self, target: InstallTarget) -> Plan:
        config = self.config_file(target)
        if target.scope == "user":
            skill_edit = (
                codex_home() / "skills" / SKILL_NAME / "SKILL.md",
                whole_file(skill_text(target.command, self.agent)),
                drop_file,
            )
        else:
            skill_edit = (
                target.project_dir / "AGENTS.md",
                lambda text: add_md_block(text, target.command),
                remove_md_block,
            )
        events = self._lifecycle_events(target)
        key_file = str(config.absolute())
        trust_here = target.scope == "user"
        plan: Plan = [
            (
                config,
                lambda text: add_toml(text, target.command, events, key_file, trust=trust_here),
                lambda text: remove_toml(text, key_file),
            ),
            skill_edit,
        ]
        if events and not trust_here:
            # Codex reads hook trust from the user's config only (a repository cannot trust
            # its own hooks): record it there, for this project's config file
            plan.append(
                (
                    codex_home() / "config.toml",
                    lambda text: add_trust(text, config, key_file),
                    lambda text: remove_trust(text, config, key_file),
                )
            )
        return plan

    def _lifecycle_events(self, target: InstallTarget) -> list[str]:
        if not self.lifecycle():
            return []
        return (["SessionStart"] if target.pickup else []) + WRITE_EVENTS

    def registered_events(self, target: InstallTarget) -> list[str]:
        """The lifecycle hooks; without them the turn-complete `notify`, unless the
        user's own notify program kept its place (then none); none where passdown's
        plugin runs them."""
        if covering(target):
            return []
        if self.lifecycle():
            return self._lifecycle_events(target)
        return ["agent-turn-complete"] if self.notifies_passdown(target) else []

    def notifies_passdown(self, target: InstallTarget) -> bool:
        """Whether the config's `notify` runs passdown, as the file stands (not through
        `parse_toml`, which drops passdown's own marked notify line for `add_toml`); in a
        dry run, as the plan leaves it."""
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        from passdown.integrations._files import read_planned

        try:
            doc = tomlkit.parse(read_planned(self.config_file(target)))
        except (OSError, UnicodeDecodeError, TOMLKitError):
            return False
        return is_our_notify(doc.get("notify"))

    def commands(self, target: InstallTarget) -> list[Registered]:
        import tomlkit
        from tomlkit.exceptions import TOMLKitError

        path = self.config_file(target)
        try:
            doc = tomlkit.parse(read_config(path) or "")
        except TOMLKitError:
            return []
        found: list[Registered] = []
        notify = doc.get("notify")
        if isinstance(notify, list) and is_our_notify(notify):
            found.append(Registered(path, "notify", str(notify[0])))
        servers = doc.get("mcp_servers")
        server = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        if isinstance(server, dict) and server.get("command"):
            found.append(Registered(path, "MCP server", str(server["command"])))
        hooks = doc.get("hooks")
        for event in EVENT_LABELS:
            groups = hooks.get(event) if isinstance(hooks, dict) else None
            for group in groups if isinstance(groups, list) else []:
                if _is_our_group(group):
                    line = str(group["hooks"][0].get("command", ""))
                    found.append(Registered(path, f"hook {event}", program_of(line)))
        return found

    def problems(self, target: InstallTarget) -> list[str]:
        """Lifecycle hooks where the installed Codex has none (an install made before
        this Codex was, or one it was downgraded to): it never runs them. And Codex
        runs only hooks whose trust it has recorded in the user's config, with the hash
        of the hook as it stands: a hook edited since (or trust removed) is skipped
        without a word."""
        config = self.config_file(target)
        hooked = any(r.what.startswith("hook ") for r in self.commands(target))
        if hooked and self.codex_says() is False:
            return [
                f"{_the_installed_codex()} has no lifecycle hooks: it does not run passdown's "
                f"hooks in {config}; run `passdown install codex` again (it writes the "
                "turn-complete notify this Codex reads)"
            ]
        expected = _our_trust(_read_toml(config), str(config.absolute()))
        hooks = _read_toml(codex_home() / "config.toml").get("hooks")
        state = hooks.get("state") if isinstance(hooks, dict) else None
        untrusted = [
            key.rsplit(":", 3)[1]
            for key, digest in expected.items()
            if not (
                isinstance(state, dict)
                and isinstance(state.get(key), dict)
                and state[key].get("trusted_hash") == digest
            )
        ]
        if not untrusted:
            return []
        return [
            f"Codex does not trust passdown's {', '.join(untrusted)} hook(s) in {config} "
            f"(it skips them): run `passdown install codex` again"
        ]

    def warnings(self, target: InstallTarget) -> list[str]:
        """The turn-complete notify where the installed Codex has lifecycle hooks: it
        writes handoffs, but none at session end or compaction, and no pickup."""
        found = self.commands(target)
        notify_only = not any(r.what.startswith("hook ") for r in found) and any(
            r.what == "notify" for r in found
        )
        if not notify_only or self.codex_says() is not True:
            return []
        return [
            f"{_the_installed_codex()} has lifecycle hooks, but passdown is installed as its "
            "turn-complete notify: no handoff at compaction or session end, no pickup at "
            "session start; run `passdown install codex` again"
        ]

    def config_file(self, target: InstallTarget) -> Path:
        """The config.toml that holds the MCP server and the hooks of `target`."""
        if target.scope == "user":
            return codex_home() / "config.toml"
        return target.project_dir / ".codex" / "config.toml"

    def user_files(self, target: InstallTarget) -> list[Path]:
        return (
            [codex_home() / "config.toml"] if target.scope == "project" and self.lifecycle() else []
        )

    def own_notes(self, target: InstallTarget) -> list[str]:
        notes = []
        if self.codex_says() is None:
            notes.append(
                "could not ask Codex which hooks it has (not on PATH, or `codex features list` "
                f"failed): wrote the lifecycle hooks Codex {NEWEST_KNOWN} reads; once Codex "
                "is installed, `passdown doctor codex` says whether they fit it"
            )
        if self.lifecycle() and target.scope == "project":
            notes.append(
                "Codex loads .codex/config.toml (and so these hooks) only in a project you "
                f'trusted: `[projects."{target.project_dir}"] trust_level = "trusted"`'
            )
        if self.lifecycle():
            return notes
        return [
            "this Codex has no lifecycle hooks: handoffs are written on turn completion "
            "(notify) and picked up through the skill, not injected at session start"
        ]

    # -- payloads: lifecycle hooks on stdin, notify as the last argument ------------------
    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        raw = args[-1] if args else (stdin_text or "{}")
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("hook payload is not a JSON object")
        return data

    def event(self, payload: dict[str, Any]) -> str:
        name = str(payload.get("hook_event_name") or payload.get("type") or "")
        return self.events.get(name, name or "?")

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        spec = payload.get("transcript_path") or self.session_id(payload)
        return str(spec) if spec else None

    def session_id(self, payload: dict[str, Any]) -> str | None:
        value = payload.get("session_id") or payload.get("thread-id") or payload.get("thread_id")
        return str(value) if value else None


def _the_installed_codex() -> str:
    version = codex_version()
    return f"the installed Codex ({version})" if version else "the installed Codex"


# -- config.toml -------------------------------------------------------------------------


def parse_toml(text: str | None) -> tomlkit.TOMLDocument:
    """Codex's config as a document that keeps comments and layout; a file passdown
    cannot parse is refused rather than edited blind (exit 2, nothing written)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(_strip_legacy_blocks(text or ""))
    except TOMLKitError as exc:
        raise UsageError(
            f"cannot change a config file that is not valid TOML: {exc}",
            hint="fix the file (Codex would not load it either), then install again",
        ) from None


def add_toml(
    text: str | None, command: str, events: list[str], key_file: str, *, trust: bool = True
) -> str:
    """`[mcp_servers.passdown]` (updated in place when the user already has one, as
    `codex mcp add` writes it); the lifecycle hooks with their trust, or else a
    top-level `notify` unless the user has their own notify program (Codex takes one,
    and replacing it would break theirs)."""
    import tomlkit

    doc = parse_toml(remove_toml(text, key_file, server=False) if text is not None else None)
    if not events and "notify" not in doc:
        doc.add("notify", notify_value(command))
        doc["notify"].comment(NOTIFY_MARK)
    _set_server(doc, command)
    if events:
        hook_command = hook_line(command, "codex")
        _add_hooks(doc, hook_command, events)
        if trust:
            _set_trust(doc, _our_trust(doc, key_file))
    if text is not None and doc.unwrap() == parse_toml(text).unwrap():
        return text  # already installed: leave the bytes (and the layout) alone
    return tomlkit.dumps(doc)


def notify_value(command: str) -> list[str]:
    return [command, "hook", "codex"]


def is_our_notify(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 3 and list(value[1:]) == ["hook", "codex"]


def _set_server(doc: tomlkit.TOMLDocument, command: str) -> None:
    import tomlkit

    # Codex gives MCP servers a minimal environment: pass passdown's own settings on.
    server = {"command": command, "args": ["mcp"], "env_vars": list(FORWARDED_ENV)}
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise UsageError("cannot add passdown's MCP server: `mcp_servers` is not a table")
    ours = servers.get(SERVER_NAME)
    if not isinstance(ours, dict):
        servers[SERVER_NAME] = server
        return
    for key, value in server.items():
        if ours.get(key) != value:
            ours[key] = value


def _hooks_table(doc: tomlkit.TOMLDocument) -> Any:
    import tomlkit

    hooks = doc.get("hooks")
    if hooks is None:
        hooks = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks
    elif not isinstance(hooks, dict):
        raise UsageError("cannot add passdown's hooks: `hooks` is not a table")
    return hooks


def _add_hooks(doc: tomlkit.TOMLDocument, hook_command: str, events: list[str]) -> None:
    import tomlkit

    hooks = _hooks_table(doc)
    for event in events:
        handler = {"type": "command", "command": hook_command, "timeout": hook_timeout(event)}
        group = {"hooks": [handler]}
        groups = hooks.get(event)
        if groups is None:
            groups = tomlkit.aot()
            hooks[event] = groups
        elif not isinstance(groups, list):
            raise UsageError(f"cannot add passdown's hooks: `hooks.{event}` is not an array")
        groups.append(tomlkit.item(group) if isinstance(groups, tomlkit.items.AoT) else group)


def _our_trust(doc: Any, key_file: str) -> dict[str, str]:
    """Codex's trust keys (`<file>:<event>:<group>:<handler>`) and hashes of passdown's
    hooks as they stand in `doc`, the config file named `key_file`."""
    hooks = doc.get("hooks")
    trust: dict[str, str] = {}
    if not isinstance(hooks, dict):
        return trust
    for event, label in EVENT_LABELS.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        for index, group in enumerate(groups):
            if _is_our_group(group):
                handler = group["hooks"][0]
                command = str(handler.get("command", ""))
                timeout = hook_timeout(event, int(handler.get("timeout", HOOK_TIMEOUT_S)))
                trust[f"{key_file}:{label}:{index}:0"] = trusted_hash(event, command, timeout)
    return trust


def _set_trust(doc: tomlkit.TOMLDocument, trust: dict[str, str]) -> None:
    import tomlkit

    if not trust:
        return
    hooks = _hooks_table(doc)
    state = hooks.get("state")
    if state is None:
        state = tomlkit.table(is_super_table=True)
        hooks["state"] = state
    for key, digest in trust.items():
        entry = state.get(key)
        if isinstance(entry, dict):
            if entry.get("trusted_hash") != digest:
                entry["trusted_hash"] = digest
        else:
            state[key] = {"trusted_hash": digest}


def add_trust(text: str | None, config: Path, key_file: str) -> str:
    """The user's config with the trust of passdown's hooks in the project `config`
    (already written: plans apply in order)."""
    import tomlkit

    doc = parse_toml(remove_trust(text, config, key_file) if text is not None else None)
    _set_trust(doc, _our_trust(_read_toml(config), key_file))
    if text is not None and doc.unwrap() == parse_toml(text).unwrap():
        return text
    return tomlkit.dumps(doc)


def remove_trust(text: str | None, config: Path, key_file: str) -> str | None:
    """The trust of passdown's hooks in the project `config` out of the user's config
    (uninstall undoes this file before the project's, so those hooks are still there)."""
    import tomlkit

    if text is None:
        return None
    doc = parse_toml(text)
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(hooks, dict) or not isinstance(state, dict):
        return text
    for key, digest in _our_trust(_read_toml(config), key_file).items():
        entry = state.get(key)
        if isinstance(entry, dict) and entry.get("trusted_hash") == digest:
            del state[key]
    if not state:
        del hooks["state"]
        if not hooks:
            del doc["hooks"]
    return tomlkit.dumps(doc)


def _read_toml(path: Path) -> tomlkit.TOMLDocument:
    import tomlkit

    from passdown.integrations._files import read_planned

    try:
        return parse_toml(read_planned(path))
    except (OSError, UsageError):
        return tomlkit.document()


def remove_toml(text: str | None, key_file: str, *, server: bool = True) -> str | None:
    """passdown's entries out of a config.toml (on uninstall of a file changed since
    install; an unchanged one is restored byte for byte from the backup instead)."""
    import tomlkit

    if text is None:
        return None
    doc = parse_toml(text)
    if is_our_notify(doc.get("notify")):
        del doc["notify"]
    servers = doc.get("mcp_servers")
    if server and isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
    hooks = doc.get("hooks")
    if isinstance(hooks, dict):
        _remove_hooks(hooks, key_file)
        if not hooks:
            del doc["hooks"]
    return tomlkit.dumps(doc)


def _remove_hooks(hooks: Any, key_file: str) -> None:
    state = hooks.get("state")  # trust of this file's hooks, when kept in the same file
    for event, label in EVENT_LABELS.items():
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        ours = [i for i, g in enumerate(groups) if _is_our_group(g)]
        for i in reversed(ours):
            del groups[i]
            if isinstance(state, dict):
                state.pop(f"{key_file}:{label}:{i}:0", None)
        if not groups:
            del hooks[event]
    if isinstance(state, dict) and not state:
        del hooks["state"]


def _is_our_group(group: Any) -> bool:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and any(
        isinstance(h, dict) and str(h.get("command", "")).endswith(" hook codex") for h in handlers
    )


def _strip_legacy_blocks(text: str) -> str:
    text = re.sub(rf"(?ms)\n?^{re.escape(LEGACY_BEGIN)}\n.*?^{re.escape(LEGACY_END)}\n?", "", text)
    return re.sub(rf"(?m)^notify = .*{re.escape(NOTIFY_MARK)}\n", "", text)
