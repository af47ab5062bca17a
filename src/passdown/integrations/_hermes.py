"""Hermes Agent (0.19): shell hooks under `hooks:` in `config.yaml` of the Hermes home
(`~/.hermes/`, `%LOCALAPPDATA%\\hermes\\` on Windows, `$HERMES_HOME`):

    hooks:
      on_session_end:
        - command: "/path/passdown hook hermes"
          timeout: 30

Hermes splits the command into words itself (no shell) and sends a JSON payload on
stdin: `{hook_event_name, session_id, cwd, extra{...}}`. A hook runs only once approved:
Hermes keeps approvals in `shell-hooks-allowlist.json` beside the config (what its own
consent prompt writes), so `passdown install hermes` records its commands there too.

Events passdown uses: `pre_llm_call` (before the model is called for a user's turn: the
one hook whose `{"context": ...}` output Hermes adds to the turn, so the pickup pointer
goes there, once per session), `on_session_end` (each turn's end) and
`on_session_finalize` (the session closes). Hermes has no compaction hook.

passdown has no YAML library: the `hooks:` block is a marked block of lines it appends
and removes whole. A config that already has a `hooks:` key of the user's own is not
edited (two `hooks:` keys would make Hermes drop one): the install says what to add.

passdown's Hermes plugin (`plugins/hermes`, `hermes plugins install URL#plugins/hermes
--enable`) registers the same three events in Hermes's own plugin system and sends the
same payload. Hermes keeps it in `plugins/passdown/` of its home and loads it once
`plugins.enabled` of config.yaml lists it (and `plugins.disabled` does not); where it
is, `passdown install hermes` writes nothing (`PluginAwareHooks`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    SESSION_END,
    SESSION_START,
    TURN_COMPLETE,
    InstallTarget,
    Plan,
    Registered,
    json_edit,
    program_of,
    read_config,
)
from passdown.integrations._plugins import PluginAwareHooks, PluginInstall, finds_plugins

BEGIN = "# >>> passdown hooks (managed by `passdown install`)"
END = "# <<< passdown hooks"
ALLOWLIST = "shell-hooks-allowlist.json"
PLUGIN = "passdown"  # the name in plugins/hermes/plugin.yaml
_BLOCK = re.compile(rf"(?ms)^{re.escape(BEGIN)}\n.*?^{re.escape(END)}\n?")
_HOOKS_KEY = re.compile(r"^hooks\s*:", re.MULTILINE)
_COMMAND_LINE = re.compile(r"^\s*-?\s*command:\s*(.+?)\s*$", re.MULTILINE)


def hermes_dir() -> Path:
    from passdown.agents.hermes import hermes_home

    return hermes_home()


@finds_plugins("hermes")
def hermes_plugins(project_dir: Path | None = None) -> list[PluginInstall]:
    """Hermes's install of passdown's plugin: `plugins/passdown` of the Hermes home with
    its `plugin.yaml` named `passdown`, enabled where config.yaml's `plugins.enabled`
    lists it and `plugins.disabled` does not."""
    folder = hermes_dir() / "plugins" / PLUGIN
    manifest = read_config(folder / "plugin.yaml") or ""
    if not re.search(rf"^name:\s*[\"']?{PLUGIN}[\"']?\s*$", manifest, re.MULTILINE):
        return []
    plugins = _yaml_block(read_config(hermes_dir() / "config.yaml") or "", "plugins")
    on = PLUGIN in _yaml_list(plugins, "enabled") and PLUGIN not in _yaml_list(plugins, "disabled")
    return [PluginInstall("hermes", PLUGIN, "user", folder, None, on)]


def _yaml_block(text: str, key: str) -> list[str]:
    """The lines under the top-level `key:` of a YAML mapping (block style)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"^{re.escape(key)}\s*:\s*(#.*)?$", line):
            block = []
            for inner in lines[i + 1 :]:
                if inner.strip() and not inner.startswith((" ", "\t", "#")):
                    break
                block.append(inner)
            return block
    return []


def _yaml_list(block: list[str], key: str) -> list[str]:
    """The strings of `key:` in `block`: a flow list (`[a, b]`) or `- item` lines."""
    for i, line in enumerate(block):
        found = re.match(rf"^(\s+){re.escape(key)}\s*:\s*(.*?)\s*$", line)
        if not found:
            continue
        indent, rest = len(found.group(1)), found.group(2)
        if rest.startswith("["):
            return [_unquote(x.strip()) for x in rest.strip("[]").split(",") if x.strip()]
        items = []
        for inner in block[i + 1 :]:
            item = re.match(r"^(\s*)-\s*(.+?)\s*$", inner)
            if item and len(item.group(1)) >= indent:
                items.append(_unquote(item.group(2)))
            elif inner.strip() and not inner.lstrip().startswith("#"):
                break
        return items
    return []


class HermesHooks(PluginAwareHooks):
    agent = "hermes"
    scopes: ClassVar[tuple[str, ...]] = ("user",)  # `--scope project` is refused
    pickup_once_per_session = True  # pre_llm_call fires at every turn: point once
    events: ClassVar[dict[str, str]] = {
        "pre_llm_call": SESSION_START,
        "on_session_end": TURN_COMPLETE,
        "on_session_finalize": SESSION_END,
    }

    def config_file(self, target: InstallTarget) -> Path:
        if target.scope != "user":
            raise UsageError(
                "Hermes Agent reads hooks only from its own config (~/.hermes/config.yaml)",
                hint="install with --scope user",
            )
        return hermes_dir() / "config.yaml"

    def _plan(self, target: InstallTarget) -> Plan:
        config = self.config_file(target)
        events = self.registered_events(target)
        command = target.hook_command
        block = _block(events, command)

        def install(text: str | None) -> str | None:
            body = _BLOCK.sub("", text or "")
            if _HOOKS_KEY.search(body):
                raise UsageError(
                    f"{config} has a `hooks:` key of its own; passdown does not edit YAML it "
                    "did not write",
                    hint="add these entries under it yourself:\n" + block,
                )
            sep = "\n" if body and not body.endswith("\n") else ""
            new = f"{body}{sep}{BEGIN}\n{block}{END}\n"
            return text if new == text else new

        def uninstall(text: str | None) -> str | None:
            return None if text is None else _BLOCK.sub("", text)

        pairs = [(event, command) for event in events]
        approve = json_edit(lambda data: _approve(data, pairs, self.agent))
        revoke = json_edit(lambda data: _approve(data, [], self.agent))
        return [(config, install, uninstall), (config.parent / ALLOWLIST, approve, revoke)]

    def commands(self, target: InstallTarget) -> list[Registered]:
        path = self.config_file(target)
        found = _BLOCK.search(read_config(path) or "")
        if found is None:
            return []
        registered = []
        event = "?"
        for line in found.group(0).splitlines():
            name = re.match(r"^  (\w+):\s*$", line)
            if name:
                event = name.group(1)
            command = _COMMAND_LINE.match(line)
            if command:
                text = _unquote(command.group(1))
                registered.append(Registered(path, f"hook {event}", program_of(text)))
        return registered

    def own_notes(self, target: InstallTarget) -> list[str]:
        return [
            "hermes: hooks only; the handoff is written at each turn's end and when the "
            "session closes, and pointed to before the first model call of a session "
            "(the commands are approved in Hermes's shell-hooks-allowlist.json)"
        ]

    def context_output(self, text: str) -> str:
        return json.dumps({"context": text}, ensure_ascii=False)


def _block(events: list[str], command: str) -> str:
    lines = ["hooks:"]
    for event in events:
        lines += [f"  {event}:", f"    - command: {json.dumps(command)}"]
        lines.append(f"      timeout: {HOOK_TIMEOUT_S}")
    return "\n".join(lines) + "\n"


def _unquote(value: str) -> str:
    try:
        loaded = json.loads(value)
    except ValueError:
        return value.strip("'\"")
    return loaded if isinstance(loaded, str) else value


def _approve(data: dict[str, Any], pairs: list[tuple[str, str]], agent: str) -> None:
    """Hermes's approvals with passdown's set to `pairs` (none: removed)."""
    approvals = data.get("approvals", [])
    if not isinstance(approvals, list):
        raise UsageError(f"cannot approve hooks: `approvals` in {ALLOWLIST} is not a list")
    kept = [
        a
        for a in approvals
        if not (isinstance(a, dict) and f" hook {agent}" in f"{a.get('command', '')} ")
    ]
    added = [{"event": e, "command": c, "approved_by": "passdown install"} for e, c in pairs]
    if kept or added:
        data["approvals"] = kept + added
    else:
        data.pop("approvals", None)
