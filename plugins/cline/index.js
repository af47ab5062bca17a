// passdown's Cline CLI plugin (`cline plugin install PATH/plugins/cline`): at the end of
// each run (`afterRun`) it runs `passdown hook cline PAYLOAD-ON-STDIN` with the payload
// `passdown install cline`'s TaskComplete / TaskError hook scripts get, without a shell:
// the passdown on PATH, else where the README's set-up or pipx / uv tool put it
// (~/.local/bin, ~/.local/share/passdown-venv, ~/passdown-venv/Scripts). Where there is
// none, the session is told once (a rule in its system prompt) and no handoff is written.
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
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

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function findPassdown() {
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

const COMMAND = findPassdown();
let session = null; // Cline's session id (its sessions folder's name)
let root = null; // the workspace

// Cline gives a plugin's hook 3 s, and the session's last messages are written after
// `afterRun`: the hook runs detached, and `passdown hook cline` waits for that write.
function hook(payload) {
  try {
    const child = spawn(COMMAND, ["hook", "cline"], {
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    });
    child.on("error", () => {});
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
    child.unref();
  } catch {}
}

export default {
  name: "passdown",
  manifest: { capabilities: COMMAND === null ? ["hooks", "rules"] : ["hooks"] },
  setup(api, ctx) {
    session = ctx?.session?.sessionId ?? null;
    root = ctx?.workspaceInfo?.rootPath ?? process.cwd();
    if (COMMAND === null) api.registerRule({ id: "passdown-missing", content: MISSING });
  },
  hooks: {
    afterRun: async ({ result, snapshot }) => {
      if (COMMAND === null) return;
      const failed = result?.status === "failed" || result?.error;
      const message = result?.error?.message ?? snapshot?.lastError;
      hook({
        hookName: failed ? "agent_error" : "agent_end",
        timestamp: new Date().toISOString(),
        sessionContext: { rootSessionId: session ?? snapshot?.conversationId },
        workspaceInfo: { rootPath: root },
        ...(failed ? { error: { message: String(message ?? "error") } } : {}),
      });
    },
  },
};
