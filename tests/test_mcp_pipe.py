"""`passdown mcp` fed a whole script through a pipe that closes at once (`printf ... |
passdown mcp`): every request read is answered, in order, before the server exits 0;
lines that are not JSON-RPC get JSON-RPC errors, never silence (passdown.mcp._stdio)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from passdown.store import open_store
from test_mcp import git_workspace, plant_claude_session, record

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "pipe", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def tool(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def pipe(cwd: Path, script: bytes, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    """Run `passdown mcp` with `script` as its whole input (the pipe closes once it is
    written); its exit status, every line it wrote (parsed), and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PASSDOWN_AGENTS": "claude,codex"}
    proc = subprocess.run(
        [sys.executable, "-m", "passdown", "mcp", *args],
        cwd=cwd,
        env=env,
        input=script,
        capture_output=True,
        timeout=150,
    )
    replies = [json.loads(out) for out in proc.stdout.splitlines()]
    return proc.returncode, replies, proc.stderr.decode()


def structured(reply: dict[str, Any]) -> Any:
    result = reply["result"]
    assert not result["isError"], result
    return result["structuredContent"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return git_workspace(tmp_path / "alpha")


def project_of(ws: Path) -> str:
    from passdown.records import default_project

    return default_project(ws)


def test_the_issue_script_gets_every_answer(ws: Path) -> None:
    with open_store() as store:
        store.store(record("plan-1", project_of(ws), "Alpha migration plan"))
    script = line(INITIALIZE) + line(INITIALIZED) + line(tool(2, "find_records"))
    status, replies, err = pipe(ws, script)
    assert status == 0, err
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["serverInfo"]["name"] == "passdown"
    found = structured(replies[1])
    assert [r["title"] for r in found["records"]] == ["Alpha migration plan"]


def test_a_whole_session_through_a_closed_pipe(ws: Path) -> None:
    plant_claude_session(ws)
    stored = record("note-1", project_of(ws), "Pipe note")
    del stored["scope"]
    script = b"".join(
        [
            line(INITIALIZE),
            line(INITIALIZED),
            line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            line(tool(3, "store_record", record=stored)),
            b"this is not json\n",
            b"\n",
            line(tool(4, "prepare_handoff", source="claude")),
            line({"jsonrpc": "2.0", "id": 5, "result": {"unasked": True}}),
            line({"jsonrpc": "2.0", "id": 6}),  # JSON, but no JSON-RPC message
            line({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
            line(tool(8, "find_records", text="pipe")).rstrip(b"\n"),  # torn: no newline
        ]
    )
    status, replies, err = pipe(ws, script)
    assert status == 0, err
    assert [r.get("id") for r in replies] == [1, 2, 3, None, 4, 6, 7, 8]
    assert {t["name"] for t in replies[1]["result"]["tools"]} >= {"prepare_handoff"}
    assert structured(replies[2])["id"] == "note-1"
    assert replies[3]["error"]["code"] == -32700
    prepared = structured(replies[4])
    assert Path(prepared["markdown_path"]).is_file()
    assert replies[5]["error"]["code"] == -32600
    assert replies[6]["result"] == {}
    assert [r["id"] for r in structured(replies[7])["records"]] == ["note-1"]
    # the next script sees the handoff; requests of one script run concurrently (as
    # JSON-RPC allows), so the claim goes in a script of its own after the load
    status, replies, err = pipe(ws, line(INITIALIZE) + line(tool(2, "load_handoff")))
    assert status == 0, err
    loaded = structured(replies[1])
    assert loaded["id"] == prepared["id"] and loaded["status"] == "published"
    assert loaded["markdown"] == Path(prepared["markdown_path"]).read_text()
    claim = line(INITIALIZE) + line(tool(2, "mark_handoff", id=prepared["id"], status="claimed"))
    status, replies, err = pipe(ws, claim)
    assert status == 0, err
    assert structured(replies[1])["status"] == "claimed"


def test_a_torn_last_line_that_is_not_whole_json_is_a_parse_error(ws: Path) -> None:
    script = line(INITIALIZE) + line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    status, replies, err = pipe(ws, script + b'{"jsonrpc": "2.0", "id": 3, "meth')
    assert status == 0, err
    assert [r["id"] for r in replies] == [1, 2, None]
    assert replies[1]["result"] == {}
    assert replies[2]["error"] == {"code": -32700, "message": "Parse error: the line is not JSON"}


@pytest.mark.parametrize(
    ("bad", "answer_id"),
    [
        (b"garbage\n", None),
        (b"[1, 2]\n", None),  # a batch: not a message this protocol takes
        (b'"text"\n', None),
        (b'{"jsonrpc": "2.0", "id": "x7"}\n', "x7"),
        (b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}\n', 4),
    ],
)
def test_lines_that_are_no_message_get_errors_not_silence(
    ws: Path, bad: bytes, answer_id: object
) -> None:
    status, replies, err = pipe(ws, bad + line({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
    assert status == 0, err
    assert [r["id"] for r in replies] == [answer_id, 9]
    code = replies[0]["error"]["code"]
    assert code == (-32700 if bad.startswith(b"garbage") else -32600)


def test_requests_faster_than_answers_are_all_answered_in_order(ws: Path) -> None:
    """Hundreds of requests written at once, tool calls that write and read the store
    mixed with pings (answered at once): every one answered, in the order sent."""
    count = 300
    requests = [line(INITIALIZE), line(INITIALIZED)]
    for n in range(2, count + 2):
        if n % 3 == 0:
            requests.append(line({"jsonrpc": "2.0", "id": n, "method": "ping"}))
        elif n % 3 == 1:
            requests.append(line(tool(n, "find_records", text="flood")))
        else:
            stored = record(f"flood-{n}", project_of(ws), f"flood {n}")
            del stored["scope"]
            requests.append(line(tool(n, "store_record", record=stored)))
    status, replies, err = pipe(ws, b"".join(requests))
    assert status == 0, err
    assert [r["id"] for r in replies] == list(range(1, count + 2))
    assert all("result" in r for r in replies)
    with open_store() as store:
        assert len(store.query(project_of(ws), text="flood", limit=200).records) == count // 3


def test_a_request_the_client_cancels_is_not_waited_for(ws: Path) -> None:
    plant_claude_session(ws)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    script = b"".join(
        [
            line(INITIALIZE),
            line(INITIALIZED),
            line(tool(2, "prepare_handoff", source="claude")),
            line(cancel),
            line({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        ]
    )
    status, replies, err = pipe(ws, script)
    assert status == 0, err
    ids = [r["id"] for r in replies]
    # the cancel may come after the answer was written; never twice, never lost order
    assert ids in ([1, 3], [1, 2, 3])


def test_no_input_at_all_exits_cleanly(ws: Path) -> None:
    assert pipe(ws, b"")[:2] == (0, [])


def test_a_client_that_stops_reading_gets_an_exit_code_not_a_traceback(ws: Path) -> None:
    """The reading end of stdout closed (`passdown mcp | head -c 10`): the answers cannot
    be delivered, which is said on stderr with exit code 8 (OutputError)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "passdown", "mcp"],
        cwd=ws,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    script = line(INITIALIZE) + line(INITIALIZED) + line(tool(2, "find_records"))
    proc.stdin.write(script)
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 8, err
    assert "the client closed its end of stdout" in err and "Traceback" not in err


def test_prepare_handoff_hands_off_only_into_the_workspaces_own_project(ws: Path) -> None:
    """`passdown mcp --project P` prepares handoffs of its workspace only when P is the
    workspace's project; any other (the folder's bare name `alpha` too) is refused."""
    from passdown.records import default_project

    plant_claude_session(ws)
    script = line(INITIALIZE) + line(tool(2, "prepare_handoff", source="claude"))
    own = default_project(ws)
    status, replies, err = pipe(ws, script, "--project", own)
    assert status == 0, err
    assert structured(replies[1])["project"] == own
    for other in ("alpha", "beta"):
        status, replies, err = pipe(ws, script, "--project", other)
        assert status == 0, err
        assert replies[1]["result"]["isError"]
        assert "not in your project" in replies[1]["result"]["content"][0]["text"]
