"""Cline CLI (3.x): a hook is a file named after its event in `~/.cline/hooks/`
(`$CLINE_HOOKS_DIR`; `$CLINE_DIR/hooks`; a project's `.clinerules/hooks/`). Cline runs it
through its `#!` line (no executable bit needed: 3.0.65 ran 0600 files) with a JSON
payload on stdin: `hookName` (agent_end, agent_error, pre_compact, agent_abort, ...),
`sessionContext.rootSessionId` (the session; there is no transcript path) and
`workspaceInfo.rootPath`.

passdown writes one small script per event it uses: `TaskComplete` (each run's end),
`TaskError` (a run that failed: `error.message`, "Rate limit reached" after the
retries), `PreCompact` and `TaskCancel`. A file of the same name that is not passdown's
is never replaced. Cline runs its start hooks detached and drops what they print, so
there is no pickup at session start. It fires `agent_end` just before it writes the
session's last messages: the hook waits (briefly) for that write before exporting.

passdown's Cline plugin (`plugins/cline`, `cline plugin install PATH`) sends the same
`agent_end` / `agent_error` payloads from its `afterRun` hook. Cline copies it to
`plugins/_installed/KIND/SLUG/package/` of `~/.cline` (`$CLINE_DIR`), or of a project's
`.cline` with `--cwd PROJECT`; where it is installed, `passdown install cline` writes
no hook scripts (`PluginAwareHooks`).
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from passdown.errors import UsageError
from passdown.integrations._base import (
    PRE_COMPACT,
    SESSION_END,
    STOP_FAILURE,
    TURN_COMPLETE,
    InstallTarget,
    Plan,
    Registered,
    program_of,
    read_config,
)
from passdown.integrations._files import Transform
from passdown.integrations._plugins import PluginAwareHooks, PluginInstall, covering, finds_plugins

MARK = "# passdown: hand this Cline session off (managed by `passdown install cline`)"
# hook file -> the hookName Cline puts in its payload
FILES = {
    "TaskComplete": "agent_end",
    "TaskError": "agent_error",
    "PreCompact": "pre_compact",
    "TaskCancel": "agent_abort",
}
WRITE_WAIT_S = 3.0  # how long a hook waits for the session's last write
PLUGIN_PACKAGE = "passdown-cline"  # the name in plugins/cline/package.json


def cline_hooks_dir() -> Path:
    configured = os.environ.get("CLINE_HOOKS_DIR")
    if configured:
        return Path(configured).expanduser()
    return cline_dir() / "hooks"


def cline_dir() -> Path:
    base = os.environ.get("CLINE_DIR")
    return Path(base).expanduser() if base else Path.home() / ".cline"


@finds_plugins("cline")
def cline_plugins(project_dir: Path | None = None) -> list[PluginInstall]:
    """Cline's installs of passdown's plugin: the user's (`~/.cline/plugins`), and with
    `project_dir` the project's (`.cline/plugins`, `cline plugin install --cwd`)."""
    places: list[tuple[str, Path, Path | None]] = [("user", cline_dir(), None)]
    if project_dir is not None:
        places.append(("project", project_dir / ".cline", project_dir))
    found: list[PluginInstall] = []
    for scope, folder, project in places:
        installed = folder / "plugins" / "_installed"
        for manifest in sorted(installed.glob("*/*/package/package.json")):
            try:
                name = json.loads(read_config(manifest) or "{}").get("name")
            except (ValueError, AttributeError):
                continue
            if name == PLUGIN_PACKAGE:
                path = manifest.parent.parent
                found.append(PluginInstall("cline", PLUGIN_PACKAGE, scope, path, project, True))
    return found


class ClineHooks(PluginAwareHooks):
    agent = "cline"
    events: ClassVar[dict[str, str]] = {
        "agent_end": TURN_COMPLETE,
        "agent_error": STOP_FAILURE,
        "pre_compact": PRE_COMPACT,
        "agent_abort": SESSION_END,
    }

    def folder(self, target: InstallTarget) -> Path:
        if target.scope == "user":
            return cline_hooks_dir()
        return target.project_dir / ".clinerules" / "hooks"

    def _plan(self, target: InstallTarget) -> Plan:
        script = f"#!/bin/sh\n{MARK}\nexec {target.hook_command}\n"
        folder = self.folder(target)
        return [(folder / name, _install(script, folder / name), _uninstall) for name in FILES]

    def registered_events(self, target: InstallTarget) -> list[str]:
        return [] if covering(target) else list(FILES)

    def commands(self, target: InstallTarget) -> list[Registered]:
        found = []
        for name in FILES:
            path = self.folder(target) / name
            text = read_config(path) or ""
            if MARK not in text:
                continue
            line = next((x for x in text.splitlines() if x.startswith("exec ")), "")
            found.append(Registered(path, f"hook {name}", program_of(line[5:])))
        return found

    def own_notes(self, target: InstallTarget) -> list[str]:
        return [
            "cline: hook scripts only; the handoff is written at each run's end, a failed "
            "run (a rate limit), compaction and cancel; Cline drops what its start hooks "
            "print, so pick the handoff up with `passdown run` or `passdown switch`"
        ]

    # -- the payload -----------------------------------------------------------------
    def payload(self, args: list[str], stdin_text: str | None) -> dict[str, Any]:
        data = super().payload(args, stdin_text)
        if data.get("hookName") in ("agent_end", "agent_error"):
            _wait_for_last_write(self.session_id(data), data.get("timestamp"))
        return data

    def event(self, payload: dict[str, Any]) -> str:
        name = str(payload.get("hookName") or "")
        return self.events.get(name, name or "?")

    def session_id(self, payload: dict[str, Any]) -> str | None:
        context = payload.get("sessionContext")
        value = context.get("rootSessionId") if isinstance(context, dict) else None
        return str(value) if value else None

    def session_spec(self, payload: dict[str, Any]) -> str | None:
        return self.session_id(payload)

    def cwd(self, payload: dict[str, Any]) -> str | None:
        info = payload.get("workspaceInfo")
        root = info.get("rootPath") if isinstance(info, dict) else None
        roots = payload.get("workspaceRoots")
        if not root and isinstance(roots, list) and roots:
            root = roots[0]
        return str(root) if root else None

    def failure(self, payload: dict[str, Any]) -> tuple[str, str | None] | None:
        if payload.get("hookName") != "agent_error":
            return None
        from passdown.agents._endings import classify_api_error, short_message

        error = payload.get("error")
        message = str(error.get("message") or "") if isinstance(error, dict) else ""
        return classify_api_error(message or "error"), short_message(message) or "error"


def _install(script: str, path: Path) -> Transform:
    def transform(text: str | None) -> str | None:
        if text is not None and MARK not in text:
            raise UsageError(
                f"{path} is a Cline hook of your own: passdown does not replace it",
                hint="merge `passdown hook cline` into it by hand, or move it away",
            )
        return script

    return transform


def _uninstall(text: str | None) -> str | None:
    return None if text is None or MARK in text else text


def _wait_for_last_write(session_id: str | None, stamp: object) -> None:
    """Until the session's messages file was written at or after the hook's time."""
    if not session_id or not isinstance(stamp, str):
        return
    try:
        fired = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return
    from passdown.agents.cline import ClineCLI

    path = ClineCLI().sessions_dir() / session_id / f"{session_id}.messages.json"
    deadline = time.monotonic() + WRITE_WAIT_S
    while time.monotonic() < deadline:
        try:
            if path.stat().st_mtime >= fired:
                return
        except OSError:
            return
        time.sleep(0.05)
