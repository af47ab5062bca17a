"""Issue 10, rewinds and forks in Gemini CLI 0.61.0, Qwen Code 0.24.4 and pi 0.73.1: the
real CLIs against the scripted servers. Each session does some work, then goes back to
an earlier message and does different work; the abandoned branch's request, progress,
files and next steps must not reach the handoff.

How each pinned CLI goes back (read in its bundled source, then driven here):

- pi 0.73.1: `/fork` (interactive) and the RPC command `{"type": "fork", "entryId"}`
  (`pi --mode rpc`, driven here over stdin/stdout) copy the path up to the chosen user
  message's parent into a NEW session file whose header names the `parentSession`; the
  old file keeps the abandoned branch. `/tree` (interactive only, not in RPC mode) moves
  the leaf inside the same file; `pi --fork FILE` copies a whole session (no branch point).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from e2e.agents import (
    CHAT_MODEL,
    CHAT_PROVIDER,
    AgentEnv,
    find_agent,
    run_passdown,
)

from e2e.checks import load_handoff, ok
from e2e.servers import ChatCompletionsServer, Step

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

FIRST_REQUEST = "Write a.txt"
A_DONE = "a.txt written. Next step: review a.txt."
ABANDONED_REQUEST = "Now write b.txt"
ABANDONED_STEP = "polish the abandoned b.txt"
B_DONE = f"b.txt written.\n\nNext steps:\n- {ABANDONED_STEP}"
ACTIVE_REQUEST = "Instead write c.txt"
C_DONE = "c.txt written.\n\nNext steps:\n- review c.txt"


def _export(env: dict[str, str], ws: Path, agent: str, *args: str) -> tuple[str, dict[str, Any]]:
    ok(run_passdown(env, ws, "export", "--from", agent, "--no-store", *args), "passdown export")
    return load_handoff(ws)


def _assert_active_branch(md: str, data: dict[str, Any]) -> None:
    """Only the active branch: a.txt then c.txt; b.txt's turn was abandoned."""
    task, state = data["task"], data["state"]
    assert task["original_request"] == FIRST_REQUEST
    assert task["latest_user_message"] == ACTIVE_REQUEST
    assert task["latest_progress"] == C_DONE
    assert "review c.txt" in state["next_steps"]
    dumped = json.dumps(data)
    assert ABANDONED_STEP not in dumped and ABANDONED_STEP not in md
    assert ABANDONED_REQUEST not in dumped and ABANDONED_REQUEST not in md
    touched = {f["path"] for f in state["files_touched"]}
    assert {"a.txt", "c.txt"} <= touched and "b.txt" not in touched, touched


# -- pi: fork over RPC ----------------------------------------------------------------
class PiRpc:
    """`pi --mode rpc`: JSON commands on stdin, responses and events on stdout."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        argv = [str(find_agent("pi")), "--mode", "rpc", "--provider", CHAT_PROVIDER,
                "--model", CHAT_MODEL]
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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


def _pi_write(path: Path, content: str, done: str) -> list[Step]:
    return [Step(tool="write", input={"path": str(path), "content": content}), Step(text=done)]


def _pi_sessions(agent_env: AgentEnv, ws: Path) -> list[Path]:
    encoded = "--" + str(ws).strip("/").replace("/", "-") + "--"
    return sorted((agent_env.home / ".pi" / "agent" / "sessions" / encoded).glob("*.jsonl"))


def test_pi_fork_keeps_only_the_forked_branch(agent_env: AgentEnv, workspace: Path,
                                             chat_server: ChatCompletionsServer) -> None:
    env = agent_env.pi_environ(chat_server.url)
    ws = workspace
    rpc = PiRpc(env, ws)
    try:
        for request, name, done in [(FIRST_REQUEST, "a.txt", A_DONE),
                                    (ABANDONED_REQUEST, "b.txt", B_DONE)]:
            chat_server.set_script(_pi_write(ws / name, name[0] + "\n", done))
            rpc.prompt(request)
            assert chat_server.remaining == 0
        messages = rpc.call("get_fork_messages")["data"]["messages"]
        target = next(m["entryId"] for m in messages if m["text"] == ABANDONED_REQUEST)
        fork = rpc.call("fork", entryId=target)["data"]
        assert fork == {"text": ABANDONED_REQUEST, "cancelled": False}, fork
        (ws / "b.txt").unlink()  # a fork does not restore files; the user drops b.txt
        chat_server.set_script(_pi_write(ws / "c.txt", "c\n", C_DONE))
        rpc.prompt(ACTIVE_REQUEST)
        assert chat_server.remaining == 0
    finally:
        rpc.close()
    original, forked = sorted(_pi_sessions(agent_env, ws), key=lambda p: "parentSession"
                              in p.read_text(encoding="utf-8").splitlines()[0])
    header = json.loads(forked.read_text(encoding="utf-8").splitlines()[0])
    assert header["parentSession"] == str(original), header
    # the fork copied only the path before the abandoned turn
    assert ABANDONED_REQUEST not in forked.read_text(encoding="utf-8")
    assert ABANDONED_REQUEST in original.read_text(encoding="utf-8")
    md, data = _export(env, ws, "pi")
    assert data["source"]["session_id"] == header["id"]
    _assert_active_branch(md, data)
    # the original session, exported explicitly, still tells the abandoned story
    _md, old = _export(env, ws, "pi", "--session", str(original))
    assert old["task"]["latest_user_message"] == ABANDONED_REQUEST
    assert ABANDONED_STEP in old["state"]["next_steps"]
