"""passdown installed through an agent's own plugin system, as the agent records it.

The repository's `plugins/claude` (a Claude Code plugin, served by the marketplace file
`.claude-plugin/marketplace.json` at the repository's root), `plugins/gemini` (a Gemini
CLI extension) and `plugins/qwen` (a Qwen Code extension) carry the hooks, the MCP server and the takeover skill that
`passdown install` writes; their hooks run `scripts/passdown-launch`, which finds
passdown as `launcher_program` does.

- Claude Code: `plugins/installed_plugins.json` in its config folder
  (`$CLAUDE_CONFIG_DIR`, else `~/.claude`) lists each install of `NAME@MARKETPLACE` with
  its `scope` (user, project, local), `installPath` and, outside the user scope, its
  `projectPath`; the settings file of that scope (`~/.claude/settings.json`,
  `PROJECT/.claude/settings.json`, `PROJECT/.claude/settings.local.json`) enables it in
  `enabledPlugins`.
- GitHub Copilot CLI installs the same Claude Code plugin from the same marketplace
  (`copilot plugin marketplace add`, `copilot plugin install passdown@passdown`) and
  enables it in `enabledPlugins` of `~/.copilot/settings.json` (`$COPILOT_HOME`); the
  launcher runs its hooks as `passdown hook copilot EVENT`.
- Factory Droid installs it too (`droid plugin marketplace add`, `droid plugin install
  passdown@MARKETPLACE`, a marketplace named after its folder): one record per install
  in `plugins/installed_plugins/*.json` of `~/.factory` (`$FACTORY_HOME_OVERRIDE`), with
  its `scope` and `installPath`, enabled in `enabledPlugins` of `~/.factory/settings.json`
  (user scope) or the project's `.factory/settings.json` (project scope); the launcher
  runs its hooks as `passdown hook droid`.
- Codex CLI installs it too (`codex plugin marketplace add`, `codex plugin add
  passdown@MARKETPLACE`): `[plugins."passdown@MARKETPLACE"] enabled = true` in
  `$CODEX_HOME/config.toml`, the files in `plugins/cache/MARKETPLACE/passdown/VERSION`;
  Codex runs its hooks once the user trusts them (`/hooks`), and the launcher runs them
  as `passdown hook codex`.
- pi: `plugins/pi` is a pi package (`pi install PATH`, `-l`: the project's), listed by
  its path in `packages` of `~/.pi/agent/settings.json` (`$PI_CODING_AGENT_DIR`) or the
  project's `.pi/settings.json`, relative to that file's folder; its extension runs
  `passdown hook pi` itself (no launcher script).
- opencode: `plugins/opencode` is an opencode plugin package (`opencode plugin PATH
  -g`), named by its path in `plugin` of the user's `opencode.json` / `opencode.jsonc`
  (`$XDG_CONFIG_HOME/opencode`) or the project's; its module runs `passdown hook
  opencode` itself. Kilo, opencode's fork, installs the same package (`kilo plugin PATH
  -g`: `opencode.json` in `$XDG_CONFIG_HOME/kilo`), which then runs `passdown hook kilo`.
- Cline CLI: `plugins/cline` is a Cline plugin (`cline plugin install PATH`, `--cwd
  PROJECT`: the project's), copied under `plugins/_installed/` of `~/.cline`
  (`$CLINE_DIR`) or `PROJECT/.cline` (`_cline.cline_plugins`); its `afterRun` hook runs
  `passdown hook cline` itself.
- gptme: `plugins/gptme` holds the folder plugin `passdown_gptme`, named in `paths` of
  `[plugins]` in gptme's user config.toml (`_gptme.gptme_plugins`); its hook module runs
  `passdown hook gptme` at `session.end` itself.
- Hermes Agent: `plugins/hermes` is a Hermes plugin (`hermes plugins install
  URL#plugins/hermes --enable`, from git), kept in `plugins/passdown` of the Hermes home
  and enabled in `plugins.enabled` of its config.yaml (`_hermes.hermes_plugins`); its
  hooks run `passdown hook hermes` themselves.
- Gemini CLI and Qwen Code: a folder `extensions/passdown` in `~/.gemini`
  (`$GEMINI_CLI_HOME`) or `~/.qwen` (`$QWEN_HOME`) with its `gemini-extension.json` or
  `qwen-extension.json`; `extensions/extension-enablement.json` turns it off for folders
  (`overrides`: `"!/path/*"` off, `"/path/*"` on, the last that matches wins).

`passdown install` writes nothing into an agent whose plugin fires in the target's
scope (`covering`), and `passdown doctor` lists the plugin installs beside its own.

The wheel carries the marketplace file and `plugins/` as they lie in the repository,
under `passdown/agent-plugins/` (setup.py copies them at build time); `plugins_dir`
finds that folder, or in a checkout the repository's root, for `passdown doctor
--plugins-dir` to print.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passdown.integrations._agent_homes import (
    claude_dir,
    codex_home,
    copilot_home,
    factory_home,
    gemini_home,
    pi_dir,
    qwen_home,
)
from passdown.integrations._base import HookIntegration, InstallTarget, Plan, read_config

PLUGIN_NAME = "passdown"
# where the plugins' launcher looks when `passdown` is not on PATH (in this order):
# pipx's, uv tool's and the README's link; the README's venv; its Windows venv
LAUNCHER_PLACES = (
    ".local/bin/passdown",
    ".local/share/passdown-venv/bin/passdown",
    "passdown-venv/Scripts/passdown.exe",
    "passdown-venv/Scripts/passdown",
)
KINDS = {
    "claude": "Claude Code plugin",
    "gemini": "Gemini CLI extension",
    "qwen": "Qwen Code extension",
    "copilot": "Claude Code plugin (in Copilot CLI)",
    "droid": "Claude Code plugin (in Droid)",
    "codex": "Claude Code plugin (in Codex)",
    "pi": "pi package",
    "opencode": "opencode plugin",
    "kilo": "opencode plugin (in Kilo)",
    "cline": "Cline plugin",
    "gptme": "gptme plugin",
    "hermes": "Hermes plugin",
}
OPENCODE_PACKAGE = "passdown-opencode"  # the name in plugins/opencode/package.json
PI_PACKAGE = "passdown-pi"  # the name in plugins/pi/package.json


MARKETPLACE = Path(".claude-plugin") / "marketplace.json"


def plugins_dir() -> Path | None:
    """The folder this passdown serves its agent plugins from: a Claude Code marketplace
    (`.claude-plugin/marketplace.json`) with the plugins under `plugins/`. The wheel's
    `passdown/agent-plugins`, else, run from a checkout, the repository's root; None
    when neither is there."""
    package = Path(__file__).resolve().parents[1]
    for root in (package / "agent-plugins", package.parents[1]):
        if (root / MARKETPLACE).is_file() and (root / "plugins" / "claude").is_dir():
            return root
    return None


@dataclass(frozen=True, slots=True)
class PluginInstall:
    """One install of passdown's plugin into an agent, as the agent records it."""

    agent: str
    name: str  # claude: passdown@MARKETPLACE; gemini: passdown
    scope: str  # user | project | local
    path: Path  # the installed plugin's folder
    project: Path | None  # the project of a project or local install
    enabled: bool

    @property
    def hooks_file(self) -> Path:
        if self.agent == "pi":
            return self.path / "extensions" / "passdown.ts"
        if self.agent in ("opencode", "kilo"):
            return self.path / "index.js"
        if self.agent == "cline":
            return self.path / "package" / "index.js"
        if self.agent == "gptme":
            return self.path / "hooks" / "passdown.py"
        if self.agent == "hermes":
            return self.path / "__init__.py"
        return self.path / "hooks" / "hooks.json"

    def fires_in(self, project_dir: Path) -> bool:
        """Its hooks run in sessions in `project_dir`."""
        if not self.enabled:
            return False
        return self.project is None or _same(self.project, project_dir)

    def describe(self) -> str:
        where = f"{self.scope} scope" + (f" of {self.project}" if self.project else "")
        off = "" if self.enabled else ", disabled"
        return f"the {KINDS[self.agent]} {self.name} ({where}{off})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope,
            "path": str(self.path),
            "project": str(self.project) if self.project else None,
            "enabled": self.enabled,
        }


PluginFinder = Callable[[Path | None], list[PluginInstall]]
# agent -> how to find passdown's plugin installs into it, for the agents whose
# integration module keeps that itself (registered by `finds_plugins` when it loads)
_FINDERS: dict[str, PluginFinder] = {}


def finds_plugins(agent: str) -> Callable[[PluginFinder], PluginFinder]:
    """Register the decorated function as `agent`'s plugin finder (`plugin_installs`)."""

    def register(finder: PluginFinder) -> PluginFinder:
        _FINDERS[agent] = finder
        return finder

    return register


def plugin_installs(agent: str, project_dir: Path | None = None) -> list[PluginInstall]:
    """passdown's plugin installs into `agent` that concern `project_dir` (the user
    scope's, and the project's own), or every one with None."""
    if agent == "claude":
        found = claude_plugins(project_dir)
    elif agent == "copilot":
        found = copilot_plugins()
    elif agent == "droid":
        found = droid_plugins(project_dir)
    elif agent == "codex":
        found = codex_plugins()
    elif agent == "pi":
        found = pi_packages(project_dir)
    elif agent in ("opencode", "kilo"):
        found = opencode_plugins(agent, project_dir)
    elif agent in ("gemini", "qwen"):
        found = extensions(agent, project_dir or Path.cwd())
    elif agent in _FINDERS:
        found = _FINDERS[agent](project_dir)
    else:
        return []
    if project_dir is None:
        return found
    return [p for p in found if p.project is None or _same(p.project, project_dir)]


def covering(target: InstallTarget) -> PluginInstall | None:
    """An enabled plugin install whose hooks already fire where `target` would install
    them: one in the user scope fires in every project; one of a project, in it."""
    for plugin in plugin_installs(target.agent, target.project_dir):
        if not plugin.enabled:
            continue
        if plugin.project is None or target.scope == "project":
            return plugin
    return None


def unless_covered(target: InstallTarget, plan: Plan) -> Plan:
    """`plan` for `target`, or where passdown's plugin fires there already, one that
    adds nothing and still removes what an earlier install wrote."""
    if covering(target) is None:
        return plan
    return [(path, _unchanged, remove) for path, _add, remove in plan]


def _unchanged(text: str | None) -> str | None:
    return text


class PluginAwareHooks(HookIntegration):
    """The installer of an agent that can also run passdown's own plugin: where the
    plugin fires already, an install writes nothing and says so (`_plan` is what it would
    write otherwise, `own_notes` what it says otherwise)."""

    def _plan(self, target: InstallTarget) -> Plan:
        raise NotImplementedError

    def own_notes(self, target: InstallTarget) -> list[str]:
        return []

    def plan(self, target: InstallTarget) -> Plan:
        return unless_covered(target, self._plan(target))

    def registered_events(self, target: InstallTarget) -> list[str]:
        return [] if covering(target) else super().registered_events(target)

    def notes(self, target: InstallTarget) -> list[str]:
        plugin = covering(target)
        return [covered_note(target, plugin)] if plugin else self.own_notes(target)


def covered_note(target: InstallTarget, plugin: PluginInstall) -> str:
    trust = " (Codex runs its hooks once you trust them: /hooks)" if plugin.agent == "codex" else ""
    return (
        f"{target.agent}: already installed as {plugin.describe()}{trust}; nothing written "
        f"(`passdown uninstall {target.agent}` still removes an earlier install)"
    )


def launcher_program() -> str | None:
    """The passdown the plugins' launcher runs here: on PATH, else the first of
    `LAUNCHER_PLACES` under the home folder that is an executable file."""
    on_path = shutil.which("passdown")
    if on_path:
        return on_path
    for place in LAUNCHER_PLACES:
        path = Path.home() / place
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


# -- Claude Code ---------------------------------------------------------------------------


def claude_plugins(project_dir: Path | None = None) -> list[PluginInstall]:
    base = claude_dir()
    records = _json_object(read_config(base / "plugins" / "installed_plugins.json"))
    plugins = records.get("plugins")
    found: list[PluginInstall] = []
    for name, entries in plugins.items() if isinstance(plugins, dict) else []:
        if not str(name).startswith(f"{PLUGIN_NAME}@") or not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("installPath"):
                continue
            scope = str(entry.get("scope") or "user")
            project = Path(str(entry["projectPath"])) if entry.get("projectPath") else None
            if scope == "user":
                settings, project = base / "settings.json", None
            elif project is None:
                continue
            else:
                local = "settings.local.json" if scope == "local" else "settings.json"
                settings = project / ".claude" / local
            enabled = _json_object(read_config(settings)).get("enabledPlugins")
            on = isinstance(enabled, dict) and enabled.get(name) is True
            found.append(
                PluginInstall("claude", name, scope, Path(str(entry["installPath"])), project, on)
            )
    return found


def copilot_plugins() -> list[PluginInstall]:
    settings = _json_object(read_config(copilot_home() / "settings.json"))
    enabled = settings.get("enabledPlugins")
    markets = settings.get("extraKnownMarketplaces")
    found: list[PluginInstall] = []
    for name, on in enabled.items() if isinstance(enabled, dict) else []:
        if not str(name).startswith(f"{PLUGIN_NAME}@"):
            continue
        market = markets.get(str(name).split("@", 1)[1]) if isinstance(markets, dict) else None
        source = market.get("source") if isinstance(market, dict) else None
        root = source.get("path") if isinstance(source, dict) else None
        path = Path(str(root)) / "plugins" / "claude" if root else copilot_home()
        found.append(PluginInstall("copilot", str(name), "user", path, None, on is True))
    return found


def droid_plugins(project_dir: Path | None = None) -> list[PluginInstall]:
    """Droid's installs of passdown's plugin: the user scope's, and with `project_dir`
    a project scope's that the project's own settings enable (Droid's record of a
    project install names no project)."""
    base = factory_home()
    records = base / "plugins" / "installed_plugins"
    found: list[PluginInstall] = []
    for record in sorted(records.glob("*.json")) if records.is_dir() else []:
        data = _json_object(read_config(record))
        name, entry = str(data.get("pluginId") or ""), data.get("entry")
        if not name.startswith(f"{PLUGIN_NAME}@") or not isinstance(entry, dict):
            continue
        if not entry.get("installPath"):
            continue
        path = Path(str(entry["installPath"]))
        if str(entry.get("scope") or "user") == "user":
            on = _enables(base / "settings.json", name)
            found.append(PluginInstall("droid", name, "user", path, None, on))
        elif project_dir is not None:
            on = _enables(project_dir / ".factory" / "settings.json", name)
            if on:
                found.append(PluginInstall("droid", name, "project", path, project_dir, on))
    return found


def codex_plugins() -> list[PluginInstall]:
    """Codex's installs of passdown's plugin (user scope: Codex keeps plugins in its
    own config)."""
    import tomllib

    base = codex_home()
    try:
        config = tomllib.loads(read_config(base / "config.toml") or "")
    except tomllib.TOMLDecodeError:
        return []
    plugins = config.get("plugins")
    found: list[PluginInstall] = []
    for name, entry in plugins.items() if isinstance(plugins, dict) else []:
        if not str(name).startswith(f"{PLUGIN_NAME}@") or not isinstance(entry, dict):
            continue
        cache = base / "plugins" / "cache" / str(name).split("@", 1)[1] / PLUGIN_NAME
        versions = sorted(cache.iterdir()) if cache.is_dir() else []
        path = versions[-1] if versions else cache
        on = entry.get("enabled", True) is True
        found.append(PluginInstall("codex", str(name), "user", path, None, on))
    return found


def pi_packages(project_dir: Path | None = None) -> list[PluginInstall]:
    """pi's installs of passdown's package from a local path: the user's, and with
    `project_dir` the project's."""
    places: list[tuple[str, Path, Path | None]] = [("user", pi_dir(), None)]
    if project_dir is not None:
        places.append(("project", project_dir / ".pi", project_dir))
    found: list[PluginInstall] = []
    for scope, folder, project in places:
        packages = _json_object(read_config(folder / "settings.json")).get("packages")
        for entry in packages if isinstance(packages, list) else []:
            source = entry.get("source") if isinstance(entry, dict) else entry
            if not isinstance(source, str) or source.startswith(("npm:", "git:")):
                continue  # not a folder passdown can look into
            if "://" in source:
                continue  # a git URL
            path = Path(os.path.normpath(folder / Path(source).expanduser()))
            manifest = _json_object(read_config(path / "package.json"))
            if manifest.get("name") == PI_PACKAGE:
                found.append(PluginInstall("pi", PI_PACKAGE, scope, path, project, True))
    return found


def opencode_plugins(agent: str, project_dir: Path | None = None) -> list[PluginInstall]:
    """opencode's (or Kilo's) installs of passdown's plugin package from a local path:
    the user's config, and with `project_dir` the project's."""
    configured = os.environ.get("XDG_CONFIG_HOME")
    user = (Path(configured) if configured else Path.home() / ".config") / agent
    places: list[tuple[str, Path, Path | None]] = [("user", user, None)]
    if project_dir is not None:
        places += [("project", project_dir, project_dir)]
        places += [("project", project_dir / f".{agent}", project_dir)]
    names = dict.fromkeys(("opencode.json", "opencode.jsonc", f"{agent}.json", f"{agent}.jsonc"))
    found: list[PluginInstall] = []
    for scope, folder, project in places:
        for name in names:
            entries = _jsonc_object(read_config(folder / name)).get("plugin")
            for entry in entries if isinstance(entries, list) else []:
                source = str(entry).removeprefix("file://")
                if not source.startswith((".", "/", "~")) and not os.path.isabs(source):
                    continue  # an npm package's name
                path = Path(os.path.normpath(folder / Path(source).expanduser()))
                manifest = _json_object(read_config(path / "package.json"))
                if manifest.get("name") == OPENCODE_PACKAGE:
                    install = PluginInstall(agent, OPENCODE_PACKAGE, scope, path, project, True)
                    found.append(install)
    return found


def _jsonc_object(text: str | None) -> dict[str, Any]:
    """A JSON-with-comments config (opencode's): whole-line `//` comments and trailing
    commas dropped."""
    import re

    lines = [line for line in (text or "").splitlines() if not line.lstrip().startswith("//")]
    return _json_object(re.sub(r",(\s*[}\]])", r"\1", "\n".join(lines)))


def _enables(settings: Path, name: str) -> bool:
    enabled = _json_object(read_config(settings)).get("enabledPlugins")
    return isinstance(enabled, dict) and enabled.get(name) is True


# -- Gemini CLI, Qwen Code -----------------------------------------------------------------


def extensions(agent: str, project_dir: Path) -> list[PluginInstall]:
    folder = (gemini_home() if agent == "gemini" else qwen_home()) / "extensions"
    manifest = _json_object(read_config(folder / PLUGIN_NAME / f"{agent}-extension.json"))
    if manifest.get("name") != PLUGIN_NAME:
        return []
    install = _json_object(read_config(folder / PLUGIN_NAME / f".{agent}-extension-install.json"))
    path = folder / PLUGIN_NAME
    if install.get("type") == "link" and install.get("source"):
        path = Path(str(install["source"]))  # a linked extension runs from its source
    overrides = _json_object(read_config(folder / "extension-enablement.json")).get(PLUGIN_NAME)
    rules = overrides.get("overrides") if isinstance(overrides, dict) else None
    enabled = _enabled(rules if isinstance(rules, list) else [], project_dir)
    return [PluginInstall(agent, PLUGIN_NAME, "user", path, None, enabled)]


def _enabled(rules: list[Any], project_dir: Path) -> bool:
    """Gemini CLI's (and Qwen Code's) enablement of an extension in `project_dir`: on, unless the last of
    the `overrides` whose folder holds it starts with `!`."""
    enabled = True
    here = os.path.realpath(project_dir).rstrip(os.sep) + os.sep
    for rule in rules:
        text = str(rule)
        negated = text.startswith("!")
        folder = text.lstrip("!").rstrip("*").rstrip("/\\")
        if here.startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep):
            enabled = not negated
    return enabled


# -- helpers -------------------------------------------------------------------------------


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _same(a: Path, b: Path) -> bool:
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))
