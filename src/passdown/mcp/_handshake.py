"""Answer MCP's `initialize` and first `tools/list` before the SDK is imported.

Importing the MCP SDK costs about half a second (its pydantic protocol models), and
agents wait for `initialize` and then `tools/list` when they start a session (Claude
Code gives `tools/list` 5 s, which a loaded machine can exceed). `passdown mcp`
therefore reads the client's first lines itself: a well-formed `initialize` is answered
at once with exactly what the SDK would answer, and so is the `tools/list` that clients
send right after, from `tools_list.json` (the SDK's own answer, recorded per protocol
version by `python -m passdown.mcp._handshake`; a test fails when it is stale, and it is
used only while the sources it was recorded from are unchanged). The lines are then
handed to the SDK as if it had read them, so it negotiates the same version and keeps
its session state, and its own replies to the requests already answered are dropped.

Anything unexpected (not JSON, another method, missing fields, a cursor) is left to the
SDK: the line is replayed untouched and answered by the SDK only.

This module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passdown import _platform

# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS of the pinned SDK (a test checks they
# agree): the revisions negotiated through `initialize`, oldest to newest.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
SERVER_NAME = "passdown"
INSTRUCTIONS = (
    "passdown keeps handoffs between coding agents and sessions. Every tool works inside "
    "one project (the scope this server is bound to). To take over a task: call "
    "load_handoff, mark_handoff(id, 'claimed'), reconcile the workspace with it (git "
    "status, the files it lists), continue from its next steps, and mark it 'completed' "
    "when done. Before stopping with unfinished work, call prepare_handoff."
)
# What the SDK's server advertises for passdown's registered tools (no prompts or
# resources registered, none of them changes).
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
_MAX_LINE = 1024 * 1024
TOOLS_CACHE = Path(__file__).with_name("tools_list.json")
# Clients send `notifications/initialized` and `tools/list` as soon as `initialize` is
# answered; if nothing comes within this, the SDK is loaded without waiting longer.
FOLLOW_UP_WAIT = 0.25
# The source the recorded tool list is made from (tool names, schemas, descriptions).
# _tools.py contributes one bound (MAX_FIND_LIMIT); hashing it too would turn the early
# answer off after every change to the tool logic, and the test that compares the
# recording with the SDK's live answer catches a changed bound anyway.
_TOOL_SOURCES = ("_server.py",)


@dataclass(slots=True)
class EarlyLines:
    """The lines read before the SDK loaded, and the ids of the requests answered."""

    lines: list[bytes]
    answered: list[int | str] = field(default_factory=list)


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("passdown")
    except PackageNotFoundError:
        return "0"


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    negotiated = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": negotiated,
        "serverInfo": {"name": SERVER_NAME, "version": server_version()},
    }


def _request(line: bytes, method: str) -> dict[str, Any] | None:
    """The JSON-RPC request on `line` if it calls `method` with a plain id."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if message.get("method") != method or not _plain_id(message.get("id")):
        return None
    return message


def early_answer(line: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """(request id, response) for a well-formed `initialize` request, else None."""
    message = _request(line, "initialize")
    if message is None:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not _initialize_params(params):
        return None
    response = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(params)}
    return message["id"], response


def tools_answer(line: bytes, version: str) -> tuple[int | str, dict[str, Any]] | None:
    """(request id, response) for a first-page `tools/list` request, when the recorded
    list is current; else None."""
    message = _request(line, "tools/list")
    if message is None:
        return None
    params = message.get("params")
    if params is not None and (not isinstance(params, dict) or params.get("cursor")):
        return None
    result = recorded_tools(version)
    if result is None:
        return None
    return message["id"], {"jsonrpc": "2.0", "id": message["id"], "result": result}


def tools_key() -> str:
    """What the recorded tool list was made from: passdown's tool sources and the SDK
    version (a different SDK may shape the list differently)."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    folder = Path(__file__).parent
    for name in _TOOL_SOURCES:
        digest.update((folder / name).read_bytes())
    try:
        digest.update(version("mcp").encode())
    except PackageNotFoundError:
        digest.update(b"?")
    return digest.hexdigest()


def recorded_tools(version: str) -> dict[str, Any] | None:
    try:
        recorded = json.loads(TOOLS_CACHE.read_bytes())
        if recorded.get("key") != tools_key():
            return None
        result = recorded["results"].get(version)
    except (OSError, ValueError, AttributeError, KeyError):
        return None
    return result if isinstance(result, dict) else None


def _plain_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _initialize_params(params: dict[str, Any]) -> bool:
    """The fields the SDK requires of `initialize` (a request it would reject is left to
    it, so the client gets the SDK's error, not an early success)."""
    client = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )


def read_line(fd: int, timeout: float | None = None) -> bytes | None:
    """One line from the descriptor, reading byte by byte so nothing after the newline
    is taken from the pipe (the SDK reads the rest from the same descriptor). None when
    nothing arrived within `timeout`; b"" at end of input."""
    if timeout is not None and not _platform.wait_readable(fd, timeout):
        return None
    data = bytearray()
    while len(data) < _MAX_LINE:
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
        if byte == b"\n":
            break
    return bytes(data)


def _write(fd: int, response: dict[str, Any]) -> None:
    payload = memoryview((json.dumps(response, separators=(",", ":")) + "\n").encode())
    try:
        while payload:
            payload = payload[os.write(fd, payload) :]
    except OSError as exc:  # a closed pipe: the client is gone
        from passdown.errors import OutputError

        raise OutputError(f"the client closed its end of stdout: {exc.strerror or exc}") from None


def answer_early(fd_in: int = 0, fd_out: int = 1) -> EarlyLines:
    """Read the client's first lines and answer `initialize` and `tools/list` now."""
    first = read_line(fd_in) or b""
    early = EarlyLines([first])
    answer = early_answer(first)
    if answer is None:
        return early
    request_id, response = answer
    _write(fd_out, response)
    early.answered.append(request_id)
    version = response["result"]["protocolVersion"]
    if recorded_tools(version) is None:
        return early
    while len(early.lines) < 4:
        line = read_line(fd_in, FOLLOW_UP_WAIT)
        if not line:
            break  # nothing yet (or end of input): the SDK takes over
        early.lines.append(line)
        if _is_initialized_notification(line):
            continue
        tools = tools_answer(line, version)
        if tools is not None:
            _write(fd_out, tools[1])
            early.answered.append(tools[0])
        break  # answered, or a request the SDK must answer
    return early


def _is_initialized_notification(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and message.get("method") == "notifications/initialized"
        and "id" not in message
    )


def record_tools() -> dict[str, Any]:
    """The SDK's own `tools/list` answers, per handshake version, from a `passdown mcp`
    that answers everything itself (a `ping` first turns the early answers off)."""
    import subprocess
    import tempfile

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="passdown-tools-") as tmp:
        env = {**os.environ, "PASSDOWN_DATA_DIR": tmp}
        for version in HANDSHAKE_VERSIONS:
            requests = [
                {"jsonrpc": "2.0", "id": 0, "method": "ping"},
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "record", "version": "1"},
                    },
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            ]
            proc = subprocess.Popen(
                [sys.executable, "-m", "passdown", "mcp"],
                cwd=tmp,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
            proc.stdin.flush()
            while True:
                reply = json.loads(proc.stdout.readline())
                if reply.get("id") == 2:
                    results[version] = reply["result"]
                    break
            proc.stdin.close()
            proc.wait(60)
    return {"key": tools_key(), "results": results}


if __name__ == "__main__":
    # python -m passdown.mcp._handshake: record tools_list.json after changing the tools
    TOOLS_CACHE.write_text(json.dumps(record_tools(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {TOOLS_CACHE}")
