"""`passdown mcp` answers `initialize` and the first `tools/list` before importing the MCP
SDK (passdown.mcp._handshake). The early answers must be exactly the SDK's, the client
must get one answer per request, and lines that are not what the early path expects
must be left to the SDK untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from passdown.mcp._handshake import HANDSHAKE_VERSIONS, early_answer, recorded_tools, tools_answer

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)
PING = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def initialize(version: str, request_id: int | str = 1, **params: Any) -> dict[str, Any]:
    body = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
        **params,
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": body}


def converse(cwd: Path, messages: list[dict[str, Any]], wait_for: set[int | str]) -> list[dict]:
    """Send the messages to a fresh `passdown mcp`, read replies until every id in
    `wait_for` is answered, then close stdin; every line it wrote, parsed."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PASSDOWN_AGENTS": "claude,codex"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "mcp"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    replies: list[dict] = []
    try:
        while wait_for - {r.get("id") for r in replies}:
            line = proc.stdout.readline()
            assert line, f"server closed early: {proc.stderr.read() if proc.stderr else ''}"
            replies.append(json.loads(line))
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(60)
    replies += [json.loads(line) for line in rest.splitlines() if line.strip()]
    return replies


def test_the_handshake_versions_are_the_sdks() -> None:
    assert tuple(HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_VERSIONS


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01"])
def test_the_early_answer_is_the_sdks_answer(tmp_path: Path, version: str) -> None:
    early = converse(tmp_path, [initialize(version), INITIALIZED, LIST_TOOLS], {1, 2})
    # A ping first makes the SDK read its own initialize (no early answer).
    sdk = converse(tmp_path, [PING, initialize(version), INITIALIZED, LIST_TOOLS], {0, 1, 2})
    for request_id in (1, 2):  # initialize, tools/list
        early_reply = [r for r in early if r.get("id") == request_id]
        sdk_reply = [r for r in sdk if r.get("id") == request_id]
        assert len(early_reply) == 1, early  # the SDK's own reply was dropped
        assert early_reply == sdk_reply
    init = next(r for r in early if r.get("id") == 1)
    assert init["result"]["protocolVersion"] == (
        version if version in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    )
    tools = {t["name"] for r in early if r.get("id") == 2 for t in r["result"]["tools"]}
    assert "load_handoff" in tools and "prepare_handoff" in tools


def test_the_recorded_tool_list_is_current() -> None:
    """tools_list.json is used only while server.py is the one it was recorded from;
    after changing the tools, record it again: python -m passdown.mcp._handshake."""
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        assert recorded_tools(version) is not None, "run: python -m passdown.mcp._handshake"


def test_the_session_goes_on_after_the_early_answers(tmp_path: Path) -> None:
    """A tool call right after the early answers is served by the SDK, which took the
    replayed initialize as its own."""
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "find_records", "arguments": {"text": "nothing"}},
    }
    replies = converse(
        tmp_path, [initialize("2025-06-18"), INITIALIZED, LIST_TOOLS, call], {1, 2, 3}
    )
    assert [r.get("id") for r in replies].count(2) == 1
    result = next(r for r in replies if r.get("id") == 3)["result"]
    assert result["isError"] is False and result["structuredContent"]["records"] == []


def test_another_request_after_initialize_is_left_to_the_sdk(tmp_path: Path) -> None:
    other = {"jsonrpc": "2.0", "id": 7, "method": "prompts/list"}
    replies = converse(
        tmp_path, [initialize("2025-06-18"), INITIALIZED, other, LIST_TOOLS], {1, 7, 2}
    )
    assert sorted(str(r.get("id")) for r in replies) == ["1", "2", "7"]
    assert next(r for r in replies if r.get("id") == 7)["result"] == {"prompts": []}


def test_a_paged_tools_list_is_left_to_the_sdk() -> None:
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "x"}}
    assert tools_answer(json.dumps(request).encode(), "2025-06-18") is None
    assert tools_answer(json.dumps(LIST_TOOLS).encode(), "2025-06-18") is not None


def test_a_string_request_id_is_answered_once(tmp_path: Path) -> None:
    replies = converse(
        tmp_path, [initialize("2025-06-18", "init-A"), INITIALIZED, LIST_TOOLS], {"init-A", 2}
    )
    assert [r["id"] for r in replies].count("init-A") == 1
    assert any(r.get("id") == 2 and "result" in r for r in replies)


def test_a_malformed_initialize_gets_the_sdks_error(tmp_path: Path) -> None:
    bad = initialize("2025-06-18")
    del bad["params"]["clientInfo"]
    assert early_answer(json.dumps(bad).encode()) is None
    replies = converse(tmp_path, [bad], {1})
    assert len(replies) == 1 and "error" in replies[0] and "result" not in replies[0]


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b"[]\n",
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}\n',
        b"\n",
        b"",
    ],
)
def test_other_first_lines_are_not_answered_early(line: bytes) -> None:
    assert early_answer(line) is None


def test_initialize_is_answered_fast(tmp_path: Path) -> None:
    """The budget is 0.3 s on an idle machine; the test allows for a loaded one (the
    benchmark, benchmarks/bench_startup.py, reports the real figure)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "passdown", "mcp"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(initialize("2025-06-18")).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        best = min(best, time.perf_counter() - start)
        proc.stdin.close()
        proc.wait(60)
    assert best < 1.0, f"initialize took {best:.2f} s"


def test_a_stale_recording_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool list recorded from another server.py (or SDK) is ignored: the SDK answers."""
    from passdown.mcp import _handshake as handshake

    stale = json.loads(handshake.TOOLS_CACHE.read_text())
    stale["key"] = "0" * 64
    (tmp_path / "tools_list.json").write_text(json.dumps(stale))
    monkeypatch.setattr(handshake, "TOOLS_CACHE", tmp_path / "tools_list.json")
    assert recorded_tools("2025-06-18") is None
    assert tools_answer(json.dumps(LIST_TOOLS).encode(), "2025-06-18") is None
