// passdown's opencode plugin (`opencode plugin PATH/plugins/opencode -g`; Kilo, an
// opencode fork, loads it too: `kilo plugin PATH -g`): the plugin `passdown install
// opencode` writes, with the passdown it runs looked up when the agent loads it. It runs
// `passdown hook opencode PAYLOAD` (under Kilo `passdown hook kilo`) without a shell: the passdown on PATH,
// else where the README's set-up or pipx / uv tool put it (~/.local/bin,
// ~/.local/share/passdown-venv, ~/passdown-venv/Scripts). Where there is none, each
// session is told in its system prompt and no handoff is written.
import { execFile, spawn } from "node:child_process";
import { statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, delimiter, join } from "node:path";

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

// Kilo's binary, which sets KILO_PID to its own process id
const AGENT =
  /^kilo/i.test(basename(process.execPath)) || process.env.KILO_PID === String(process.pid)
    ? "kilo"
    : "opencode";

// opencode runs every function this module exports as a plugin: this is the only one
export const PassdownPlugin = async ({ directory }) => {
  const COMMAND = findPassdown();
  const run = (payload) =>
    new Promise((resolve) => {
      execFile(COMMAND, ["hook", AGENT, JSON.stringify(payload)], { timeout: 30000 },
        (error, stdout) => resolve(error ? "" : String(stdout).trim()));
    });
  // `opencode run` exits as soon as the session is idle: the export must outlive it
  const runDetached = (payload) => {
    try {
      spawn(COMMAND, ["hook", AGENT, JSON.stringify(payload)], { detached: true, stdio: "ignore" }).unref();
    } catch {}
  };
  const pointers = new Map();  // session -> the pointer ("" for none), asked once
  return {
    event: async ({ event }) => {
      const type = event?.type;
      if (COMMAND === null || (type !== "session.idle" && type !== "session.compacted")) return;
      runDetached({ hook_event_name: type, cwd: directory, session_id: event?.properties?.sessionID });
    },
    "experimental.chat.system.transform": async (input, output) => {
      const session = input?.sessionID;
      if (!session || !Array.isArray(output?.system)) return;
      if (COMMAND === null) {
        output.system.push(MISSING);
        return;
      }
      if (!pointers.has(session)) {
        pointers.set(session, run({ hook_event_name: "session_start", cwd: directory, session_id: session }));
      }
      // the system prompt is rebuilt for every request: keep the pointer in all of them
      const text = await pointers.get(session);
      if (text) output.system.push(text);
    },
  };
};
