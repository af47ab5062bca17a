"""Answer MCP's `initialize` before the SDK is imported.

Importing the MCP SDK costs about half a second (its pydantic protocol models), and
agents wait for `initialize` when they start a session. `passdown mcp` therefore reads
the client's first line itself, and when it is a well-formed `initialize` request it
answers at once with exactly what the SDK would answer (tests compare the two). The
request is then handed to the SDK as if it had read it, so the SDK negotiates the same
version and keeps its session state, and the SDK's own reply to it is dropped.

Anything unexpected on the first line (not JSON, another method, missing fields) is
left entirely to the SDK: no early answer, the line is replayed untouched.

This module imports only the standard library.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

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
_MAX_FIRST_LINE = 1024 * 1024


@dataclass(slots=True)
class FirstLine:
    """The client's first line, and the id of the `initialize` answered early (or None)."""

    raw: bytes
    answered_id: int | str | None = None


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


def early_answer(line: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """(request id, response) for a well-formed `initialize` request, else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id = message.get("id")
    params = message.get("params")
    if message.get("method") != "initialize" or not _plain_id(request_id):
        return None
    if not isinstance(params, dict) or not _initialize_params(params):
        return None
    response = {"jsonrpc": "2.0", "id": request_id, "result": initialize_result(params)}
    return request_id, response  # type: ignore[return-value]


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


def read_first_line(fd: int = 0) -> bytes:
    """One line from the descriptor, reading byte by byte so nothing after the newline
    is taken from the pipe: the SDK reads the rest from the same descriptor."""
    data = bytearray()
    while len(data) < _MAX_FIRST_LINE:
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
        if byte == b"\n":
            break
    return bytes(data)


def answer_initialize_early(fd_in: int = 0, fd_out: int = 1) -> FirstLine:
    """Read the client's first line and, when it is `initialize`, answer it now."""
    first = FirstLine(read_first_line(fd_in))
    answer = early_answer(first.raw)
    if answer is not None:
        first.answered_id, response = answer
        payload = memoryview((json.dumps(response, separators=(",", ":")) + "\n").encode())
        while payload:
            payload = payload[os.write(fd_out, payload) :]
    return first
