// passdown's pi package (`pi install PATH/plugins/pi`): the extension `passdown install pi`
// writes, with the passdown it runs looked up at each session. It runs `passdown hook pi
// PAYLOAD` without a shell: the passdown on PATH, else where the README's set-up or pipx /
// uv tool put it (~/.local/bin, ~/.local/share/passdown-venv, ~/passdown-venv/Scripts).
// Where there is none, the session is told once and no handoff is written.
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";

const PLACES = [
  [".local", "bin", "passdown"],
  [".local", "share", "passdown-venv", "bin", "passdown"],
  ["passdown-venv", "Scripts", "passdown.exe"],
  ["passdown-venv", "Scripts", "passdown"],
];
const MISSING =
  "passdown is not installed where this plugin looks (on PATH, ~/.local/bin, " +
  "~/.local/share/passdown-venv): no handoff is written for this session. Install it " +
  "(README, Set-up) or put it on PATH, then start a new session.";

function isFile(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isFile();
  } catch {
    return false;
  }
}

function findPassdown(): string | null {
  const names = process.platform === "win32" ? ["passdown.exe", "passdown.cmd"] : ["passdown"];
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    for (const name of names) {
      if (dir && isFile(join(dir, name))) return join(dir, name);
    }
  }
  for (const parts of PLACES) {
    const path = join(homedir(), ...parts);
    if (isFile(path)) return path;
  }
  return null;
}

export default function (pi: any) {
  let asked = false;
  let told = false;
  const payload = (event: string, ctx: any, extra: object = {}) => JSON.stringify({
    hook_event_name: event,
    cwd: ctx.cwd,
    session_id: ctx.sessionManager?.getSessionId?.(),
    transcript_path: ctx.sessionManager?.getSessionFile?.(),
    ...extra,
  });
  const run = (event: string, ctx: any, extra: object = {}) => {
    const command = findPassdown();
    if (command === null) return Promise.resolve(undefined);
    return pi.exec(command, ["hook", "pi", payload(event, ctx, extra)], { timeout: 30000 })
      .catch(() => undefined);
  };

  pi.on("session_start", async (event: any) => { asked = event?.reason === "resume"; });
  pi.on("before_agent_start", async (_event: any, ctx: any) => {
    if (findPassdown() === null) {
      if (told) return;
      told = true;
      if (ctx.hasUI) ctx.ui.notify(MISSING, "warning");
      return { message: { customType: "passdown", content: MISSING, display: true } };
    }
    if (asked) return;
    asked = true;
    const result = await run("session_start", ctx);
    const text = result?.stdout?.trim();
    if (!text) return;
    return { message: { customType: "passdown", content: text, display: false } };
  });
  pi.on("agent_end", async (_event: any, ctx: any) => { await run("agent_end", ctx); });
  pi.on("session_compact", async (_event: any, ctx: any) => { await run("session_compact", ctx); });
}
