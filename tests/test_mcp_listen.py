"""`passdown mcp` with a client that keeps a `subscriptions/listen` request open (MCP
2026-07-28; GitHub Copilot CLI 1.0.102 sends it right after `server/discover`): the
answers to the requests after it go out at once, not behind the subscription, whose
answer only comes when the client ends it (passdown.mcp._stdio)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)

# Copilot CLI 1.0.102's first three requests to a plugin's MCP server, as it sent them
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "copilot-cli", "version": "1.0.102"},
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
}
DISCOVER = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": META}}
LISTEN = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "subscriptions/listen",
    "params": {
        "_meta": {**META, "progressToken": 0},
        "notifications": {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
        },
    },
}
TOOLS_LIST = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/list",
    "params": {"_meta": {**META, "progressToken": 1}},
}


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def _read_lines(stdout: IO[bytes], into: queue.Queue[dict[str, Any]]) -> None:
    for raw in stdout:
        into.put(json.loads(raw))


def _answer_to(request_id: int, replies: queue.Queue[dict[str, Any]], wait: float) -> Any:
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        try:
            reply = replies.get(timeout=left)
        except queue.Empty:
            break
        if reply.get("id") == request_id:
            return reply
    return None


def test_an_open_subscription_holds_no_other_answer_back(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PASSDOWN_AGENTS": "claude,codex"}
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "mcp"],
        cwd=ws,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: queue.Queue[dict[str, Any]] = queue.Queue()
    reader = threading.Thread(target=_read_lines, args=(proc.stdout, replies), daemon=True)
    reader.start()
    try:
        _send(proc.stdin, DISCOVER)
        assert _answer_to(0, replies, 30) is not None, "no answer to server/discover"
        _send(proc.stdin, LISTEN)
        _send(proc.stdin, TOOLS_LIST)
        # Copilot CLI gives up on a request after 60 s; a prompt answer takes well under 1
        tools = _answer_to(2, replies, 20)
        assert tools is not None, "tools/list got no answer while the subscription was open"
        names = {t["name"] for t in tools["result"]["tools"]}
        assert "load_handoff" in names, names
    finally:
        proc.stdin.close()  # end of input: the server ends the subscription and exits
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0
