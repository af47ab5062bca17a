"""pi (0.73): an extension that runs `passdown hook pi PAYLOAD`.

pi has no command hooks; it loads TypeScript extensions from `~/.pi/agent/extensions/`
(`$PI_CODING_AGENT_DIR/extensions/`; project: `.pi/extensions/`). passdown writes one,
`passdown.ts`, that calls passdown through `pi.exec` (an argv, no shell) with a JSON
payload as the last argument:

- `before_agent_start` of the session's first prompt: the pickup pointer, injected as a
  message (`{message: {customType: "passdown", content}}`) when passdown prints one;
- `agent_end` (each prompt's end; pi has no limit event) and `session_compact`: export.

passdown's pi package (`plugins/pi`, `pi install PATH`; `_plugins.pi_packages`) carries
the same extension, which looks passdown up at each session: where it is installed,
`install` writes nothing and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from passdown.integrations._agent_homes import pi_dir
from passdown.integrations._base import (
    PRE_COMPACT,
    SESSION_START,
    TURN_COMPLETE,
    GeneratedPlugin,
    InstallTarget,
    Plan,
)
from passdown.integrations._plugins import PluginAwareHooks

EXTENSION = """// passdown: handoffs for pi sessions (managed by `passdown install pi`;
// `passdown uninstall pi` removes it). Runs `passdown hook pi PAYLOAD` without a shell.
export default function (pi: any) {
  const command = {command_json};
  const pickup = {pickup};
  let asked = false;
  const payload = (event: string, ctx: any, extra: object = {}) => JSON.stringify({
    hook_event_name: event,
    cwd: ctx.cwd,
    session_id: ctx.sessionManager?.getSessionId?.(),
    transcript_path: ctx.sessionManager?.getSessionFile?.(),
    ...extra,
  });
  const run = (event: string, ctx: any, extra: object = {}) =>
    pi.exec(command, ["hook", "pi", payload(event, ctx, extra)], { timeout: 30000 }).catch(() => undefined);

  pi.on("session_start", async (event: any) => { asked = event?.reason === "resume"; });
  pi.on("before_agent_start", async (_event: any, ctx: any) => {
    if (!pickup || asked) return;
    asked = true;
    const result = await run("session_start", ctx);
    const text = result?.stdout?.trim();
    if (!text) return;
    return { message: { customType: "passdown", content: text, display: false } };
  });
  pi.on("agent_end", async (_event: any, ctx: any) => { await run("agent_end", ctx); });
  pi.on("session_compact", async (_event: any, ctx: any) => { await run("session_compact", ctx); });
}
"""


class PiHooks(PluginAwareHooks, GeneratedPlugin):
    agent = "pi"
    events: ClassVar[dict[str, str]] = {
        "session_start": SESSION_START,
        "agent_end": TURN_COMPLETE,
        "session_compact": PRE_COMPACT,
    }
    template = EXTENSION
    plugin_file = "extensions/passdown.ts"  # it injects the hook's output as a message

    def folder(self, target: InstallTarget) -> Path:
        return pi_dir() if target.scope == "user" else target.project_dir / ".pi"

    def _plan(self, target: InstallTarget) -> Plan:
        return GeneratedPlugin.plan(self, target)
