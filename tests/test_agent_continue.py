"""Continue CLI: the recorded session (tests/fixtures/sessions/continue/full, written by
`tests/e2e/test_continue_cn_real.py` against the real `cn` 1.5.47), read through the reader
and exported through the CLI; hand-made sessions for what the recording does not show (a
last request with no reply, a tool still running, failed edits, Checklist variants, bad
documents); discovery through the file and the index, launch argv, and `passdown install
continue` refusing with the reason (Continue's hooks never fire)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_checks import (
    Launch,
    PassdownCLI,
    agent_fixtures,
    check_launch,
    copy_recorded,
)
from agent_entry_points import register
from passdown.agents import continue_cli as continue_module
from passdown.agents.continue_cli import LONG_PROMPT_TAIL, ContinueCLI
from passdown.transcript import Message, SessionEnding, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "continue" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
WS = "/tmp/ws-continue"


home, cli = agent_fixtures(register, "CONTINUE_GLOBAL_DIR")


@pytest.fixture
def recorded_home(home: Path) -> Path:
    copy_recorded(RECORDED, home)
    return home


# -- the recorded session ----------------------------------------------------------------
def test_recorded_session(recorded_home: Path) -> None:
    agent = ContinueCLI()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    assert ref.session_id == SID and ref.title is None  # "Untitled Session" is no title
    assert ref.started_at and ref.started_at.endswith("Z")  # the index's dateCreated
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[0] == "Planning the work." and said[-1] == EXPECTED["final_assistant_message"]
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [c for c in calls.values() if c.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    failed = results[command.call_id]
    assert failed.exit_code == 2 and failed.is_error
    assert failed.error == "ls: cannot access 'no-such-test-dir': No such file or directory"
    [write] = [c for c in calls.values() if c.action == "write"]
    assert write.paths == (f"{EXPECTED['workspace']}/hello.txt",)
    plans = [c.plan for c in calls.values() if c.plan is not None]
    assert [[(i.subject, i.status) for i in p.items] for p in plans] == [
        [("Write hello.txt", "pending"), ("Run the tests", "pending")],
        [("Write hello.txt", "completed"), ("Run the tests", "pending")],
    ]
    assert transcript.info.models == ["scripted-model"] and transcript.info.agent_version is None
    assert transcript.info.cwd == EXPECTED["workspace"]
    assert transcript.diagnostics.summary() == []
    assert not any(isinstance(e, SessionEnding) for e in events)


def test_recorded_handoff_through_the_cli(recorded_home: Path, cli: PassdownCLI) -> None:
    data = cli.export("continue", SID[:8])
    assert data["source"]["agent"] == "continue" and data["source"]["session_id"] == SID
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    plan = [{k: p[k] for k in ("id", "subject", "status")} for p in data["state"]["plan"]]
    assert plan == EXPECTED["plan"] and data["state"]["plan_source"] == "Checklist"
    assert [f["path"] for f in data["state"]["files_touched"]] == EXPECTED["files_touched"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2
    assert data["ended"]["reason"] == "normal"


# -- hand-made sessions ------------------------------------------------------------------
def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _assistant(
    text: str,
    calls: list[dict[str, Any]] = (),
    states: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "usage": {"model": "m-1"}}
    if calls:
        message["toolCalls"] = calls
    entry: dict[str, Any] = {"message": message, "contextItems": []}
    if states:
        entry["toolCallStates"] = [
            {"toolCallId": cid, "status": status, "output": [{"content": out}]}
            for cid, status, out in states
        ]
    return entry


def _user(text: str) -> dict[str, Any]:
    return {"message": {"role": "user", "content": text}, "contextItems": []}


def _session(home: Path, sid: str, history: list[dict[str, Any]], ws: str = WS) -> Path:
    folder = home / ".continue" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"sessionId": sid, "title": "Fix calc", "workspaceDirectory": ws, "history": history}
    path = folder / f"{sid}.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _events(home: Path) -> list[Any]:
    [ref] = ContinueCLI().sessions(Path(WS))
    return list(ContinueCLI().read(ref).events())


def test_a_last_request_with_no_reply_is_interrupted(home: Path) -> None:
    """A request that failed after the CLI's retries writes nothing: the user's message
    is the last entry (a first turn like that leaves no session file at all)."""
    _session(home, "s1", [_user("Fix calc"), _assistant("Done."), _user("Now the tests")])
    events = _events(home)
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "interrupted" and "no reply" in (ending.message or "")


def test_a_tool_still_running_is_interrupted(home: Path) -> None:
    history = [
        _user("Run it"),
        _assistant("Running.", [_call("b1", "Bash", {"command": "make"})], [("b1", "calling", "")]),
    ]
    _session(home, "s2", history)
    events = _events(home)
    assert not [e for e in events if isinstance(e, ToolResult)]
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "interrupted" and "running" in (ending.message or "")


def test_edits_commands_and_checklists(home: Path) -> None:
    checklist = (
        "Plan:\n* [x] Read calc.py\n1. [/] Fix add()\n- [-] Drop sub()\n- [ ] Run tests\n- [ ]\n"
    )
    history = [
        _user("Fix calc"),
        _assistant(
            "Working.",
            [
                _call("p1", "Checklist", {"checklist": checklist}),
                _call("e1", "Edit", {"filepath": "calc.py", "old_string": "-", "new_string": "+"}),
                _call("e2", "MultiEdit", {"filepath": "other.py", "edits": []}),
                _call("b1", "Bash", {"command": "pytest -q"}),
                _call("r1", "Read", {"filepath": "calc.py"}),
                _call("p2", "Checklist", {"checklist": "no boxes here"}),
            ],
            [
                ("p1", "done", "Task list status: ..."),
                ("e1", "done", "Edited calc.py"),
                ("e2", "errored", "Error executing tool MultiEdit: String not found in file"),
                ("b1", "done", "1 passed"),
                ("r1", "done", "def add(): ..."),
                ("p2", "done", "Task list status:"),
            ],
        ),
    ]
    _session(home, "s3", history)
    events = _events(home)
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    plan = calls["p1"].plan
    assert plan is not None and [(i.subject, i.status) for i in plan.items] == [
        ("Read calc.py", "completed"),
        ("Fix add()", "in_progress"),
        ("Drop sub()", "cancelled"),
        ("Run tests", "pending"),
    ]
    assert calls["p2"].plan is None and calls["p2"].action == "other"
    assert (calls["e1"].action, calls["e1"].paths) == ("edit", ("calc.py",))
    assert results["e2"].is_error and results["e2"].error == "String not found in file"
    assert results["b1"].exit_code == 0 and not results["b1"].is_error
    assert calls["r1"].action == "read"
    assert not any(isinstance(e, SessionEnding) for e in events)


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1]", b'{"history": [1, "x", {"message": 5}, {"message": {"role": 3}}]}'],
    ids=["empty", "text", "array", "bad-entries"],
)
def test_bad_documents_never_crash_the_export(home: Path, cli: PassdownCLI, content: bytes) -> None:
    folder = home / ".continue" / "sessions"
    folder.mkdir(parents=True)
    (folder / "bad.json").write_bytes(content)
    (folder / "sessions.json").write_bytes(b"{broken")
    cli.assert_export_survives("continue", folder / "bad.json")


def test_an_oversized_document_is_read_up_to_the_bound_with_a_warning(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(home, "big", [_user("Fix calc"), _assistant("x" * 5000)])
    monkeypatch.setattr(continue_module, "MAX_SESSION_BYTES", 1000)
    [ref] = ContinueCLI().sessions(Path(WS))
    transcript = ContinueCLI().read(ref)
    said = [e.text for e in transcript.events() if isinstance(e, Message)]
    assert said == ["Fix calc"]  # the reply past the bound is not read
    assert any("larger than" in w for w in transcript.diagnostics.warnings)


def test_discovery_by_workspace_index_and_override(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(home, "here", [_user("Fix calc")])
    _session(home, "there", [_user("Elsewhere")], ws="/tmp/elsewhere")
    # a file whose head lacks the workspace: the index says where it ran
    bare = home / ".continue" / "sessions" / "bare.json"
    bare.write_text(json.dumps({"history": [_user("From the index")], "sessionId": "bare"}))
    index = [
        {
            "sessionId": "bare",
            "title": "Indexed",
            "dateCreated": "1796148822619",
            "workspaceDirectory": WS,
        }
    ]
    (home / ".continue" / "sessions" / "sessions.json").write_text(json.dumps(index))
    found = {r.session_id: r for r in ContinueCLI().sessions(Path(WS))}
    assert set(found) == {"here", "bare"}
    assert (
        found["bare"].title == "Indexed" and found["bare"].started_at == "2026-12-01T18:13:42.619Z"
    )
    assert found["here"].title == "Fix calc"
    assert {r.session_id for r in ContinueCLI().sessions(None)} == {"here", "there", "bare"}
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(tmp_path / "elsewhere"))
    assert ContinueCLI().store_roots() == [tmp_path / "elsewhere" / "sessions"]
    assert ContinueCLI().sessions(None) == []


# -- launching and (no) hooks ---------------------------------------------------------------
LAUNCHES = [
    Launch("--resume is not a flag here", True, ("cn", "--", "--resume is not a flag here")),
    Launch("go; rm -rf $(pwd)", False, ("cn", "-p", "--", "go; rm -rf $(pwd)")),
    # a long prompt goes through a private file
    Launch(
        "Take over. " + "x" * 200_000,
        False,
        ("cn", "-p", "--prompt", "{file}", "--", LONG_PROMPT_TAIL),
    ),
]


@pytest.mark.parametrize("launch", LAUNCHES, ids=str)
def test_launch_argv(launch: Launch, tmp_path: Path) -> None:
    check_launch(ContinueCLI(), launch, tmp_path, "continue-prompt.md")


def test_install_continue_says_there_are_no_hooks(home: Path, cli: PassdownCLI) -> None:
    for verb in ("install", "uninstall"):
        proc = cli(verb, "continue")
        assert proc.returncode == 2, proc.stderr
        assert "Continue CLI has no hooks that fire" in proc.stderr
        assert "passdown run" in proc.stderr
    assert not (home / ".continue").exists() and not (home / ".claude").exists()


def test_parts_system_messages_and_unknown_roles(home: Path) -> None:
    """A user message as content parts (an image beside the text), the system prompt and
    a role passdown does not know: only the words are kept; the unknown role is counted."""
    parts = [{"type": "text", "text": "Fix calc"}, {"type": "imageUrl", "imageUrl": {"url": "x"}}]
    history = [
        {"message": {"role": "system", "content": "You are Continue."}},
        {"message": {"role": "user", "content": parts}},
        {"message": {"role": "critic", "content": "hm"}},
        _assistant("Done."),
    ]
    _session(home, "s4", history)
    [ref] = ContinueCLI().sessions(Path(WS))
    transcript = ContinueCLI().read(ref)
    events = list(transcript.events())
    assert [(e.role, e.text) for e in events if isinstance(e, Message)] == [
        ("user", "Fix calc"),
        ("assistant", "Done."),
    ]
    assert transcript.diagnostics.unknown_types == {"role:critic": 1}
