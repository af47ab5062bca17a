"""Drive the agents' interactive ways in from a test: a CLI's terminal UI in a tmux
server of the test's own, pi's RPC mode over stdin/stdout, and the first-run questions a
person answers once on a real machine.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

from e2e.agents import CHAT_MODEL, CHAT_PROVIDER, AgentEnv, find_agent


class PiRpc:
    """`pi --mode rpc`: JSON commands on stdin, responses and events on stdout."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        argv = [
            str(find_agent("pi")),
            "--mode",
            "rpc",
            "--provider",
            CHAT_PROVIDER,
            "--model",
            CHAT_MODEL,
        ]
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                continue

    def _wait(self, match: Any, seconds: float = 150) -> dict[str, Any]:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                msg = self.lines.get(timeout=1)
            except Empty:
                continue
            if match(msg):
                return msg
        raise AssertionError(f"pi rpc: no answer in {seconds}s")

    def call(self, kind: str, **args: Any) -> dict[str, Any]:
        self.next_id += 1
        cid = f"c{self.next_id}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": cid, "type": kind, **args}) + "\n")
        self.proc.stdin.flush()
        reply = self._wait(lambda m: m.get("type") == "response" and m.get("id") == cid)
        assert reply.get("success"), reply
        return reply

    def prompt(self, text: str) -> None:
        self.call("prompt", message=text)
        self._wait(lambda m: m.get("type") == "agent_end")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Terminal:
    """The CLI's interactive UI in our own tmux server, driven by keys, read by screen."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        tmux = shutil.which("tmux")
        assert tmux, "tmux is needed to drive the interactive /rewind"
        # our own server, its socket in the test's folder (none left in /tmp/tmux-UID)
        self.tmux = [tmux, "-S", str(cwd.parent / f"tmux-{time.time_ns()}.sock")]
        self.env = {**env, "TERM": "xterm-256color"}
        env_args = [x for k, v in self.env.items() for x in ("-e", f"{k}={v}")]
        self._tmux(
            "new-session",
            "-d",
            "-x",
            "160",
            "-y",
            "50",
            "-c",
            str(cwd),
            *env_args,
            shlex.join(argv),
        )

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            [*self.tmux, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p")

    def wait_for(self, text: str, seconds: float = 120) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.5)
        raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen()}")

    def keys(self, *keys: str, pause: float = 0.7) -> None:
        for key in keys:
            self._tmux("send-keys", key)
            time.sleep(pause)

    def type(self, text: str) -> None:
        """Type into the input box. A UI still starting (history already drawn) can drop
        keys, so the text is sent again until the screen shows it once more than before."""
        before = self.screen().count(text)
        for _ in range(3):
            self._tmux("send-keys", "-l", text)
            end = time.monotonic() + 10
            while time.monotonic() < end:
                if self.screen().count(text) > before:
                    time.sleep(1.5)  # let the input box settle (and a command's completion)
                    return
                time.sleep(0.5)
        raise AssertionError(f"typed {text!r} never showed; the screen:\n{self.screen()}")

    def replace_input(self, text: str) -> None:
        """The rewound prompt is put back in the input box: erase it, type ours, send."""
        self.keys(*["BSpace"] * 40, pause=0.05)
        self.type(text)
        self.keys("Enter")

    def close(self) -> None:
        self._tmux("kill-server")


def answer_first_run_questions(
    agent: str, agent_env: AgentEnv, ws: Path, env: dict[str, str]
) -> None:
    """What a person has answered once for this folder on a real machine, so the agent's
    TUI opens on its input box: Claude Code's onboarding, folder trust and "use this API
    key?"; Copilot's folder trust; Codex's folder trust and its model-migration notice
    (`[notice.model_migrations]`, which Codex writes itself when "Use existing model" is
    chosen)."""
    if agent == "claude":
        (agent_env.claude_dir / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {
                        "approved": [env["ANTHROPIC_API_KEY"][-20:]],
                        "rejected": [],
                    },
                    "projects": {
                        str(ws): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                        }
                    },
                }
            ),
            encoding="utf-8",
        )
    elif agent == "copilot":
        (agent_env.home / ".copilot").mkdir(exist_ok=True)
        (agent_env.home / ".copilot" / "config.json").write_text(
            json.dumps({"trusted_folders": [str(ws)]}), encoding="utf-8"
        )
    elif agent == "codex":  # config.toml is written by agent_env.environ(openai_url=...)
        config = agent_env.codex_home / "config.toml"
        config.write_text(
            config.read_text(encoding="utf-8")
            + f'\n[projects."{ws}"]\ntrust_level = "trusted"\n'
            + '\n[notice.model_migrations]\n"gpt-5.5" = "gpt-6-sol"\n',
            encoding="utf-8",
        )


def stop_codex_daemons(codex_home: Path) -> None:
    """Codex's TUI starts an app-server daemon (copied into `$CODEX_HOME/packages`) that
    outlives it: stop the ones started with this CODEX_HOME, by their ids."""
    found = subprocess.run(
        ["pgrep", "-f", str(codex_home)], capture_output=True, text=True, check=False
    ).stdout.split()
    for pid in found:
        subprocess.run(["kill", pid], capture_output=True, check=False)
