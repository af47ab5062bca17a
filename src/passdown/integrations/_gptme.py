"""gptme (0.35): script hooks as `[[hooks.scripts]]` tables in its user config,
`config.toml` in platformdirs' user config folder for "gptme" (`~/.config/gptme/` on
Linux, `$XDG_CONFIG_HOME/gptme/`; `~/Library/Application Support/gptme/` on macOS;
`%LOCALAPPDATA%\\gptme\\gptme\\` on Windows): `{event, command, timeout}`.

gptme runs the command through the shell with the payload in environment variables, not
on stdin: `GPTME_HOOK_EVENT`, `GPTME_LOGDIR` (the conversation's folder),
`GPTME_WORKSPACE`, `GPTME_MODEL`. Only `session.start` and `session.end` exist, and gptme
discards what a hook prints, so there is no pickup at session start: passdown writes the
handoff at `session.end` (each run's end) and it is taken up by `passdown run`/`switch`.
A project's `gptme.toml` needs gptme's trust first: `--scope project` is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import tomlkit
from tomlkit.items import AoT

from passdown.errors import UsageError
from passdown.integrations import _toml_hooks as toml_hooks
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    SESSION_END,
    HookIntegration,
    InstallTarget,
    Plan,
    Registered,
)


def gptme_config_file() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("gptme")) / "config.toml"


class GptmeHooks(HookIntegration):
    agent = "gptme"
    scopes: ClassVar[tuple[str, ...]] = ("user",)  # `--scope project` is refused
    reads_stdin = False  # the payload is in the environment
    events: ClassVar[dict[str, str]] = {"session.end": SESSION_END}

    def config_file(self, target: InstallTarget) -> Path:
        if target.scope != "user":
            raise UsageError(
                "gptme runs a project's hooks only once the project is trusted; passdown "
                "installs gptme hooks in the user config",
                hint="install with --scope user",
            )
        return gptme_config_file()

    def plan(self, target: InstallTarget) -> Plan:
        command = target.hook_command
        events = self.registered_events(target)

        def install(text: str | None) -> str | None:
            doc = _parse(text)
            wanted = [(event, command, HOOK_TIMEOUT_S) for event in events]
            if _ours(doc, self.agent) == wanted:
                return text  # installed as asked already: leave the bytes alone
            _remove_ours(doc, self.agent)  # an install with other options drops the old
            scripts = _scripts(doc, create=True)
            for event in events:
                # gptme's own default config has `scripts = []`: inline tables go there
                table = tomlkit.table() if isinstance(scripts, AoT) else tomlkit.inline_table()
                table.update({"event": event, "command": command, "timeout": HOOK_TIMEOUT_S})
                scripts.append(table)
            new = tomlkit.dumps(doc)
            return text if new == text else new

        def uninstall(text: str | None) -> str | None:
            if text is None:
                return None
            doc = _parse(text)
            return tomlkit.dumps(doc) if _remove_ours(doc, self.agent) else text

        return [(self.config_file(target), install, uninstall)]

    def registered_events(self, target: InstallTarget) -> list[str]:
        return list(self.events)  # no session-start hook: gptme discards its output

    def commands(self, target: InstallTarget) -> list[Registered]:
        return toml_hooks.registered(self.config_file(target), self.agent, _entries, "event")

    def notes(self, target: InstallTarget) -> list[str]:
        return [
            "gptme: hooks only; the handoff is written when a gptme session ends; gptme "
            "discards what a session-start hook prints, so pick the handoff up with "
            "`passdown run` or `passdown switch`"
        ]

    # -- the payload: environment variables ----------------------------------------------
    def wants_stdin(self, args: list[str]) -> bool:
        return False

    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        logdir = os.environ.get("GPTME_LOGDIR", "")
        data: dict[str, Any] = {
            "hook_event_name": os.environ.get("GPTME_HOOK_EVENT", ""),
            "cwd": os.environ.get("GPTME_WORKSPACE") or None,
        }
        if logdir:
            data["session_id"] = Path(logdir).name
            data["transcript_path"] = str(Path(logdir) / "conversation.jsonl")
        return data


def _parse(text: str | None) -> tomlkit.TOMLDocument:
    return toml_hooks.parse(text, "config.toml")


def _scripts(doc: tomlkit.TOMLDocument, *, create: bool = False) -> Any:
    """`hooks.scripts` (an array of tables); created when asked and absent."""
    hooks = doc.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = tomlkit.table()
        doc["hooks"] = hooks
    if not hasattr(hooks, "get"):
        raise UsageError("cannot add hooks: `hooks` in gptme's config.toml is not a table")
    scripts = hooks.get("scripts")
    if scripts is None and create:
        scripts = tomlkit.aot()
        hooks["scripts"] = scripts
    if scripts is not None and not isinstance(scripts, list):
        raise UsageError("cannot add hooks: `hooks.scripts` in gptme's config.toml is not a list")
    return scripts


def _entries(doc: tomlkit.TOMLDocument) -> list[Any]:
    try:
        return toml_hooks.tables(_scripts(doc))
    except UsageError:
        return []


def _ours(doc: tomlkit.TOMLDocument, agent: str) -> list[tuple[object, ...]]:
    return [
        (e.get("event"), e.get("command"), e.get("timeout"))
        for e in _entries(doc)
        if toml_hooks.is_ours(e, agent)
    ]


def _remove_ours(doc: tomlkit.TOMLDocument, agent: str) -> bool:
    """Drop passdown's `[[hooks.scripts]]` entries; True when there were any."""
    try:
        scripts = _scripts(doc)
    except UsageError:
        return False
    if not isinstance(scripts, list):
        return False
    ours = toml_hooks.drop_ours(scripts, agent)
    hooks = doc["hooks"]
    if ours and not len(scripts) and isinstance(scripts, AoT):  # one passdown created
        del hooks["scripts"]
        if not len(hooks):
            del doc["hooks"]
    return bool(ours)
