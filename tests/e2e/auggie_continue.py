"""Run Auggie (from npm `@augmentcode/auggie`) and Continue CLI (`cn`, from npm
`@continuedev/cli`) against scripted model servers on 127.0.0.1 in an isolated HOME,
and export their sessions through `python -m passdown`.

Auggie has no OpenAI or Anthropic base URL: it talks to its Augment "tenant", so
`AugmentServer` fakes that backend (`POST /get-models`, a few empty list endpoints, and
`POST /chat-stream`, newline-delimited JSON). A fake session token in
`AUGMENT_SESSION_AUTH` needs no login. Hooks run only when `get-models` sets
`feature_flags.enable_hooks`. Continue speaks chat completions, configured by a local
`--config config.yaml` (no Continue Hub login)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from agent_entry_points import register
from e2e.agents import CHAT_MODEL, FAKE_KEY, AgentEnv, find_agent
from e2e.servers import DEFAULT_FINAL_TEXT, Step, _ScriptedServer

AUGMENT_MODEL = "scripted-augment"
_TASK_LINE = re.compile(r"UUID:(\w+) NAME:(.+?) DESCRIPTION:")


def run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["timeout", "-k", "5", str(int(timeout)), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def export(
    env: dict[str, str], cwd: Path, agent: str, site: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -m passdown export --from AGENT --no-store`, with the agent registered."""
    return subprocess.run(
        [sys.executable, "-m", "passdown", "export", "--from", agent, "--no-store", *extra],
        cwd=cwd,
        env={**env, "PYTHONPATH": register(site)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def passdown(
    env: dict[str, str], cwd: Path, site: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m passdown ARGS` with this checkout's agents registered."""
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": register(site)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# -- Auggie ------------------------------------------------------------------------------
class AugmentServer(_ScriptedServer):
    """The Augment backend Auggie 0.36 talks to. Each `chat-stream` request is one agent
    step (one `Step`): the reply is NDJSON, a text node, at most one tool-use node, and
    a stop reason."""

    def __init__(self, steps: list[Step] | None = None, *, hooks: bool = False) -> None:
        super().__init__(steps)
        self.hooks = hooks
        self.task_ids: dict[str, str] = {}  # task name -> the short UUID Auggie showed

    def _learn_task_ids(self, body: Any) -> None:
        """Auggie answers add_tasks with "UUID:<short id> NAME:<name> DESCRIPTION:...": a
        scripted update_tasks names a task as "@task:<name>", filled in from these."""
        for match in _TASK_LINE.finditer(json.dumps(body)):
            self.task_ids[match.group(2)] = match.group(1)

    def _fill(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("@task:"):
            return self.task_ids.get(value[6:], value)
        if isinstance(value, dict):
            return {k: self._fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        return value

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0].rstrip("/")
        if path.endswith("/chat-stream") and method == "POST":
            self._learn_task_ids(body)
            idx, step = self._next_step()
            self._log(h, method, body, "step", idx)
            return self._stream(h, step)
        self._log(h, method, body, "other")
        if path.endswith("/get-models"):
            flags: dict[str, Any] = {"enable_hooks": True} if self.hooks else {}
            return self.send_json(
                h,
                {
                    "default_model": AUGMENT_MODEL,
                    "models": [
                        {
                            "name": AUGMENT_MODEL,
                            "suggested_prefix_char_count": 0,
                            "suggested_suffix_char_count": 0,
                        }
                    ],
                    "feature_flags": flags,
                },
            )
        if path.endswith("/list-remote-tools"):
            return self.send_json(h, {"tools": []})
        return self.send_json(h, {})

    def _stream(self, h: BaseHTTPRequestHandler, step: Step) -> None:
        text = step.text or ("" if step.tool else DEFAULT_FINAL_TEXT)
        lines: list[dict[str, Any]] = []
        if text:
            lines.append({"text": text, "nodes": [{"id": 1, "type": 0, "content": text}]})
        if step.tool:
            tool_use = {
                "tool_use_id": self._new_id("toolu"),
                "tool_name": step.tool,
                "input_json": json.dumps(self._fill(step.input)),
            }
            lines.append({"text": "", "nodes": [{"id": 2, "type": 5, "tool_use": tool_use}]})
        lines.append({"text": "", "stop_reason": 1})
        payload = "".join(json.dumps(line) + "\n" for line in lines).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)


def auggie_environ(agent_env: AgentEnv, backend_url: str) -> dict[str, str]:
    """Auggie pointed at the fake backend by a session token (no login)."""
    auth = {
        "accessToken": "fake-token",
        "tenantURL": f"{backend_url}/",
        "scopes": ["read", "write"],
    }
    return {**agent_env.environ(), "AUGMENT_SESSION_AUTH": json.dumps(auth)}


def run_auggie(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """`auggie --print --instruction PROMPT` (one turn, then exit); `-c` continues."""
    argv = [str(find_agent("auggie")), "--print", *extra, "--instruction", prompt]
    return run(argv, env, cwd, timeout)


# -- Continue CLI --------------------------------------------------------------------------
def continue_environ(agent_env: AgentEnv, chat_url: str) -> dict[str, str]:
    """Continue with its default config, `~/.continue/config.yaml`, holding one
    chat-completions model at the scripted server (no Continue Hub login)."""
    path = agent_env.home / ".continue" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "name: Local scripted\nversion: 1.0.0\nschema: v1\nmodels:\n"
        "  - name: Scripted\n    provider: openai\n"
        f"    model: {CHAT_MODEL}\n    apiBase: {chat_url}/v1\n    apiKey: {FAKE_KEY}\n"
        "    roles: [chat, edit, apply]\n    capabilities: [tool_use]\n",
        encoding="utf-8",
    )
    return {**agent_env.environ(), "CONTINUE_TELEMETRY_ENABLED": "0", "NO_UPDATE_NOTIFIER": "1"}


def run_continue(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """`cn --auto -p [EXTRA] -- PROMPT` (one turn, then exit); `--resume` continues."""
    argv = [str(find_agent("cn")), "--auto", "-p", *extra, "--", prompt]
    return run(argv, env, cwd, timeout)
