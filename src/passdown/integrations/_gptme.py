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

passdown's gptme plugin (`plugins/gptme`: the folder plugin `passdown_gptme`, its
`hooks/passdown.py`) runs the same `passdown hook gptme` at `session.end`. gptme loads it
once its folder (or the plugin's own) is in `paths` of `[plugins]` in config.toml and,
where `enabled` lists plugins, `passdown_gptme` is among them; where it is, `passdown
install gptme` writes no script hook (`PluginAwareHooks`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations import _toml_hooks as toml_hooks
from passdown.integrations._base import (
    HOOK_TIMEOUT_S,
    SESSION_END,
    InstallTarget,
    Plan,
    Registered,
    read_config,
)
from passdown.integrations._plugins import PluginAwareHooks, PluginInstall, covering, finds_plugins

PLUGIN_NAME = "passdown_gptme"  # the folder of the plugin in plugins/gptme

if TYPE_CHECKING:
    import tomlkit


def gptme_config_file() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("gptme")) / "config.toml"


@finds_plugins("gptme")
def gptme_plugins(project_dir: Path | None = None) -> list[PluginInstall]:
    """gptme's installs of passdown's plugin: its folder, or the folder holding it, in
    `paths` of `[plugins]` in gptme's user config.toml."""
    import tomllib

    try:
        config = tomllib.loads(read_config(gptme_config_file()) or "")
    except tomllib.TOMLDecodeError:
        return []
    plugins = config.get("plugins")
    paths = plugins.get("paths") if isinstance(plugins, dict) else None
    allowed = plugins.get("enabled") if isinstance(plugins, dict) else None
    on = not allowed or not isinstance(allowed, list) or PLUGIN_NAME in allowed
    found: list[PluginInstall] = []
    for entry in paths if isinstance(paths, list) else []:
        folder = Path(str(entry)).expanduser()
        for plugin in (folder, folder / PLUGIN_NAME):
            if plugin.name == PLUGIN_NAME and (plugin / "hooks" / "passdown.py").is_file():
                found.append(PluginInstall("gptme", PLUGIN_NAME, "user", plugin, None, on))
    return found


class GptmeHooks(PluginAwareHooks):
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

    def _plan(self, target: InstallTarget) -> Plan:
        wanted = [
            {"event": event, "command": target.hook_command, "timeout": HOOK_TIMEOUT_S}
            for event in self.registered_events(target)
        ]
        return [(self.config_file(target), *toml_hooks.edits(_SCRIPTS, self.agent, wanted))]

    def registered_events(self, target: InstallTarget) -> list[str]:
        if covering(target):
            return []
        return list(self.events)  # no session-start hook: gptme discards its output

    def commands(self, target: InstallTarget) -> list[Registered]:
        return _SCRIPTS.registered(self.config_file(target), self.agent, "event")

    def own_notes(self, target: InstallTarget) -> list[str]:
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


class _Scripts(toml_hooks.HookArray):
    """gptme's `hooks.scripts`, an array inside the `[hooks]` table."""

    def _scripts(self, doc: tomlkit.TOMLDocument, *, create: bool = False) -> Any:
        """`hooks.scripts`; created when asked and absent."""
        import tomlkit

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
            raise UsageError(
                "cannot add hooks: `hooks.scripts` in gptme's config.toml is not a list"
            )
        return scripts

    def array(self, doc: tomlkit.TOMLDocument) -> Any:
        return self._scripts(doc, create=True)

    def new_table(self, array: Any) -> Any:
        import tomlkit
        from tomlkit.items import AoT

        # gptme's own default config has `scripts = []`: inline tables go there
        return tomlkit.table() if isinstance(array, AoT) else tomlkit.inline_table()

    def entries(self, doc: tomlkit.TOMLDocument) -> list[Any]:
        try:
            return toml_hooks.tables(self._scripts(doc))
        except UsageError:
            return []

    def remove_ours(self, doc: tomlkit.TOMLDocument, agent: str) -> bool:
        from tomlkit.items import AoT

        try:
            scripts = self._scripts(doc)
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
        return ours


_SCRIPTS = _Scripts("config.toml")
