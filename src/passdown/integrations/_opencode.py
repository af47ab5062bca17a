"""opencode (1.18): a plugin that runs `passdown hook opencode PAYLOAD`.

opencode has no command hooks; it loads JavaScript plugins from
`~/.config/opencode/plugins/` (`$XDG_CONFIG_HOME`; project: `.opencode/plugins/`).
passdown writes `passdown.js`, which runs passdown with `execFile` (an argv, no shell)
and a JSON payload as the last argument:

- `experimental.chat.system.transform`: the pickup pointer, asked for once per session
  and appended to every system prompt of that session when passdown printed one;
- the `session.idle` (a turn ended) and `session.compacted` events: export, in a
  detached process (`opencode run` exits as soon as the session is idle).

passdown's opencode plugin package (`plugins/opencode`, `opencode plugin PATH -g`;
`_plugins.opencode_plugins`) carries the same plugin, which looks passdown up when
opencode loads it: where it is installed, `install` writes nothing and says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from passdown.integrations._base import (
    PRE_COMPACT,
    SESSION_START,
    TURN_COMPLETE,
    GeneratedPlugin,
    InstallTarget,
    Plan,
)
from passdown.integrations._plugins import PluginAwareHooks

PLUGIN = """// passdown: handoffs for opencode sessions (managed by `passdown install opencode`;
// `passdown uninstall opencode` removes it). Runs `passdown hook opencode PAYLOAD`, no shell.
import { execFile, spawn } from "node:child_process";

const COMMAND = {command_json};
const PICKUP = {pickup};

function run(payload) {
  return new Promise((resolve) => {
    execFile(COMMAND, ["hook", "opencode", JSON.stringify(payload)], { timeout: 30000 },
      (error, stdout) => resolve(error ? "" : String(stdout).trim()));
  });
}

// `opencode run` exits as soon as the session is idle: the export must outlive it
function runDetached(payload) {
  try {
    spawn(COMMAND, ["hook", "opencode", JSON.stringify(payload)], { detached: true, stdio: "ignore" }).unref();
  } catch {}
}

export const PassdownPlugin = async ({ directory }) => {
  const pointers = new Map();  // session -> the pointer ("" for none), asked once
  return {
    event: async ({ event }) => {
      const type = event?.type;
      if (type !== "session.idle" && type !== "session.compacted") return;
      runDetached({ hook_event_name: type, cwd: directory, session_id: event?.properties?.sessionID });
    },
    "experimental.chat.system.transform": async (input, output) => {
      const session = input?.sessionID;
      if (!PICKUP || !session) return;
      if (!pointers.has(session)) {
        pointers.set(session, run({ hook_event_name: "session_start", cwd: directory, session_id: session }));
      }
      // the system prompt is rebuilt for every request: keep the pointer in all of them
      const text = await pointers.get(session);
      if (text && Array.isArray(output?.system)) output.system.push(text);
    },
  };
};
"""


def opencode_config_dir() -> Path:
    configured = os.environ.get("XDG_CONFIG_HOME")
    return (Path(configured) if configured else Path.home() / ".config") / "opencode"


class OpenCodeHooks(PluginAwareHooks, GeneratedPlugin):
    agent = "opencode"
    events: ClassVar[dict[str, str]] = {
        "session_start": SESSION_START,
        "session.idle": TURN_COMPLETE,
        "session.compacted": PRE_COMPACT,
    }
    template = PLUGIN
    plugin_file = "plugins/passdown.js"  # it appends the hook's output to the system prompt

    def folder(self, target: InstallTarget) -> Path:
        return opencode_config_dir() if target.scope == "user" else target.project_dir / ".opencode"

    def _plan(self, target: InstallTarget) -> Plan:
        return GeneratedPlugin.plan(self, target)
