"""Factory Droid: the sessions recorded from the real `droid` 0.225.2 (tests/fixtures/
sessions/droid/: a full `droid exec` turn, and one a sticky 429 ended), read without the
CLI; TodoWrite in every shape Droid accepts; hook and context records; turn outcomes;
discovery by the cwd slug; incremental reading; launch."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import extract
from passdown.agents.droid import DroidCLI, cwd_slug
from passdown.transcript import (
    Diagnostics,
    Message,
    PlanOp,
    SessionEnding,
    SessionInfo,
    ToolCall,
    ToolResult,
)
from recorded import FIXTURES

FULL = FIXTURES / "droid" / "full"
FULL_EXPECTED = json.loads((FULL / "expected.json").read_text())
LIMITED = FIXTURES / "droid" / "rate-limit"
LIMITED_EXPECTED = json.loads((LIMITED / "expected.json").read_text())
WS = "/work/proj"


def _install(src: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(src, home, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("FACTORY_HOME_OVERRIDE", raising=False)
    return home


# -- the recorded sessions -------------------------------------------------------------
def test_the_recorded_turn_reads_fact_by_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _install(FULL, tmp_path / "home", monkeypatch)
    agent = DroidCLI()
    ref = agent.newest(Path(FULL_EXPECTED["workspace"]))
    assert ref is not None
    assert ref.path == home / FULL_EXPECTED["session_path"]
    assert ref.session_id == FULL_EXPECTED["session_id"]
    assert ref.title and ref.title.startswith("Create calc.py")  # Droid cuts the title short
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e for e in events if isinstance(e, Message) and e.role == "user"]
    assert [u.text for u in users] == FULL_EXPECTED["turns"]  # no injected context, no hooks
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    todo = next(c for c in calls.values() if c.name == "TodoWrite")
    assert todo.action == "plan" and results[todo.call_id].is_error  # exec refuses it
    commands = [
        (c.command, results[c.call_id].exit_code) for c in calls.values() if c.action == "command"
    ]
    assert commands == [(c["command"], c["exit_code"]) for c in FULL_EXPECTED["commands"]]
    info = transcript.info
    assert info.models == [FULL_EXPECTED["model"]] and info.cwd == FULL_EXPECTED["workspace"]
    assert transcript.diagnostics.summary() == []

    handoff = extract(agent.read(ref).events(), workspace=FULL_EXPECTED["workspace"])
    assert handoff.task.original_request == FULL_EXPECTED["original_request"]
    assert handoff.task.latest_progress == FULL_EXPECTED["final_assistant_message"]
    assert handoff.state.plan == []  # the refused TodoWrite made no plan
    assert {f.path for f in handoff.state.files_touched} == set(FULL_EXPECTED["files_touched"])
    assert [f.path for f in handoff.state.failed_edits] == FULL_EXPECTED["failed_edits"]
    failure = handoff.state.last_failure
    assert failure is not None and failure.command == FULL_EXPECTED["failing_command"]["command"]
    assert failure.exit_code == 1 and "FAILED (failures=1)" in (failure.error or "")
    assert handoff.ended.reason == "normal"  # the retried 429 left no trace


def test_a_turn_a_sticky_429_ended_is_a_rate_limit_ending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(LIMITED, tmp_path / "home", monkeypatch)
    agent = DroidCLI()
    ref = agent.newest(Path(LIMITED_EXPECTED["workspace"]))
    assert ref is not None
    events = list(agent.read(ref).events())
    assert [type(e) for e in events] == [Message, SessionEnding]
    ending = events[-1]
    assert isinstance(ending, SessionEnding) and ending.reason == "rate_limit"
    assert LIMITED_EXPECTED["ending_message_contains"] in (ending.message or "")
    assert ending.timestamp  # the note's time: the outcome record has none
    handoff = extract(agent.read(ref).events(), workspace=LIMITED_EXPECTED["workspace"])
    assert handoff.ended.reason == "rate_limit"
    assert handoff.task.original_request == LIMITED_EXPECTED["original_request"]


# -- hand-made logs in Droid's shape ---------------------------------------------------
def _session(home: Path, records: list[dict[str, Any]], cwd: str = WS, sid: str = "s1") -> Path:
    path = home / ".factory" / "sessions" / cwd_slug(cwd) / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"type": "session_start", "id": sid, "title": "t", "version": 2, "cwd": cwd}
    path.write_text("".join(json.dumps(r) + "\n" for r in [head, *records]))
    return path


def _msg(role: str, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"m{len(content)}{role}",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": role, "content": content, **extra},
    }


def _todo_call(todos: object, call_id: str = "c1") -> dict[str, Any]:
    use = {"type": "tool_use", "id": call_id, "name": "TodoWrite", "input": {"todos": todos}}
    return _msg("assistant", [use], modelId="custom:M-0")


def _ok(call_id: str = "c1", content: str = "{}") -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "is_error": False, "content": content}
    return _msg("user", [block])


def _read(path: Path) -> list[Any]:
    agent = DroidCLI()
    return list(agent.read(agent.ref_for_path(path)).events())


def _plan(events: list[Any]) -> list[tuple[str, str]]:
    handoff = extract(iter(events), workspace=WS)
    return [(p.subject, p.status) for p in handoff.state.plan]


@pytest.mark.parametrize(
    "todos",
    [
        [
            {"id": "1", "content": "Write tests", "status": "completed", "priority": "high"},
            {"id": "2", "content": "Fix add()", "status": "in_progress"},
            {"content": "Update README", "status": "pending"},
        ],
        ["1. [completed] Write tests", "2. [in_progress] Fix add()", "3. [pending] Update README"],
        "- [x] Write tests\n- [in_progress] Fix add()\n- [ ] Update README",
        json.dumps(
            [
                {"content": "Write tests", "status": "completed"},
                {"content": "Fix add()", "status": "in_progress"},
                {"content": "Update README", "status": "pending"},
            ]
        ),
    ],
    ids=["objects", "strings", "text", "json-text"],
)
def test_a_todowrite_plan_in_every_shape_droid_accepts(todos: object, tmp_path: Path) -> None:
    path = _session(tmp_path, [_todo_call(todos), _ok()])
    assert _plan(_read(path)) == [
        ("Write tests", "completed"),
        ("Fix add()", "in_progress"),
        ("Update README", "pending"),
    ]


def test_plain_lines_are_pending_items_and_odd_todos_make_no_plan(tmp_path: Path) -> None:
    path = _session(tmp_path, [_todo_call("1. Write tests\n* Ship it\nloose words"), _ok()])
    assert _plan(_read(path)) == [
        ("Write tests", "pending"),
        ("Ship it", "pending"),
        ("loose words", "pending"),
    ]
    for odd in (42, {"a": 1}, "[not json", [["nested"]], [{"content": "x", "status": ["bad"]}]):
        path = _session(tmp_path, [_todo_call(odd), _ok()], sid="odd")
        plans = [e for e in _read(path) if isinstance(e, ToolCall) and e.plan is not None]
        assert plans, odd  # read without a crash; whatever came out is a list of items
        assert all(isinstance(op, PlanOp) for op in (c.plan for c in plans))


def test_hook_runs_and_injected_context_are_not_the_conversation(tmp_path: Path) -> None:
    hook = _msg(
        "user", [], visibility="user_only", hookEventName="Stop", hookResults=[{"exitCode": 0}]
    )
    context = _msg(
        "user",
        [{"type": "text", "text": "<system-reminder>tools</system-reminder>"}],
        visibility="llm_only",
    )
    prompt = _msg("user", [{"type": "text", "text": "Fix add()"}], interactionMode="auto")
    reply = _msg("assistant", [{"type": "text", "text": "Done."}], modelId="custom:M-0")
    outcome = {"type": "agent_turn_outcome", "turnId": "t", "reason": "completed"}
    path = _session(tmp_path, [context, prompt, hook, reply, outcome])
    events = _read(path)
    assert [(e.role, e.text) for e in events] == [("user", "Fix add()"), ("assistant", "Done.")]


@pytest.mark.parametrize(
    ("reason", "note", "expected"),
    [
        ("model_usage_exhausted", "You have used all your credits", "usage_limit"),
        ("model_authentication_failed", "BYOK Error: 401 Unauthorized", "auth"),
        ("model_provider_unavailable", "BYOK Error: 503 Service Unavailable", "overloaded"),
        ("error", "BYOK Error: 429 Too Many Requests", "rate_limit"),
        ("model_request_rejected", "maximum context length exceeded", "context_length"),
        ("structured_output_missing", None, "error"),
    ],
)
def test_turn_outcomes_other_than_completed_are_endings(
    reason: str, note: str | None, expected: str, tmp_path: Path
) -> None:
    records = [_msg("user", [{"type": "text", "text": "Go."}])]
    if note:
        records.append(_msg("user", [{"type": "text", "text": note}], visibility="user_only"))
    records.append({"type": "agent_turn_outcome", "turnId": "t", "reason": reason})
    events = _read(_session(tmp_path, records))
    ending = events[-1]
    assert isinstance(ending, SessionEnding) and ending.reason == expected
    assert (ending.message or "") == (" ".join(note.split()) if note else reason)


def test_a_completed_turn_after_a_failed_one_is_normal(tmp_path: Path) -> None:
    records = [
        _msg("user", [{"type": "text", "text": "Go."}]),
        _msg("user", [{"type": "text", "text": "BYOK Error: 429"}], visibility="user_only"),
        {"type": "agent_turn_outcome", "turnId": "t1", "reason": "model_rate_limited"},
        _msg("user", [{"type": "text", "text": "Try again."}]),
        _msg("assistant", [{"type": "text", "text": "Done now."}], modelId="m"),
        {"type": "agent_turn_outcome", "turnId": "t2", "reason": "completed"},
    ]
    handoff = extract(iter(_read(_session(tmp_path, records))), workspace=WS)
    assert handoff.ended.reason == "normal"


def test_a_failed_command_names_its_exit_code_and_its_own_error_line(tmp_path: Path) -> None:
    run = {
        "type": "tool_use",
        "id": "x1",
        "name": "Execute",
        "input": {"command": "ls no-such-dir", "riskLevel": "low"},
    }
    failed = {
        "type": "tool_result",
        "tool_use_id": "x1",
        "is_error": True,
        "content": "Error: Command failed (exit code: 2)\nls: cannot access 'no-such-dir': "
        "No such file or directory\n\n\n[Process exited with code 2]",
    }
    path = _session(tmp_path, [_msg("assistant", [run], modelId="m"), _msg("user", [failed])])
    result = next(e for e in _read(path) if isinstance(e, ToolResult))
    assert result.exit_code == 2
    assert result.error == "ls: cannot access 'no-such-dir': No such file or directory"


def test_discovery_confirms_the_lossy_slug_with_the_recorded_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("FACTORY_HOME_OVERRIDE", raising=False)
    mine = _session(tmp_path, [], cwd="/work/a-b", sid="mine")
    theirs = _session(tmp_path, [], cwd="/work/a/b", sid="theirs")
    assert mine.parent == theirs.parent  # both "-work-a-b"
    agent = DroidCLI()
    assert [r.session_id for r in agent.sessions(Path("/work/a-b"))] == ["mine"]
    assert [r.session_id for r in agent.sessions(Path("/work/a/b"))] == ["theirs"]
    assert {r.session_id for r in agent.sessions(Path("/work"))} == {"mine", "theirs"}
    monkeypatch.setenv("FACTORY_HOME_OVERRIDE", str(tmp_path / "other"))
    assert agent.store_roots() == [tmp_path / "other" / ".factory" / "sessions"]
    assert agent.sessions(None) == []


def test_the_resumable_reader_gives_what_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _install(FULL, tmp_path / "home", monkeypatch)
    path = home / FULL_EXPECTED["session_path"]
    whole = _read(path)
    raw = path.read_bytes()
    cut = raw.index(b"\n", len(raw) // 2) + 1  # a line start mid-session
    info = SessionInfo(agent="droid", session_id="x", path=path)
    first = DroidCLI().resumable_reader(info, Diagnostics(), None, {})
    head = list(first.events(io.BytesIO(raw[:cut])))
    state = json.loads(json.dumps(first.state()))  # plain data, as a checkpoint keeps it
    waiting = {c["call_id"]: c for c in state["calls"]}
    pending = {
        cid: next(e for e in head if isinstance(e, ToolCall) and e.call_id == cid)
        for cid in waiting
    }
    second = DroidCLI().resumable_reader(info, Diagnostics(), state, pending)
    tail = list(second.events(io.BytesIO(raw[cut:]))) + list(second.close())
    assert [repr(e) for e in head + tail] == [repr(e) for e in whole]


@pytest.mark.parametrize("prompt", ["Take over: fix add()", "--help", "-"])
def test_launch_argv_keeps_the_prompt_one_argument(prompt: str, tmp_path: Path) -> None:
    agent = DroidCLI()
    run = agent.launch_spec(prompt, workspace=tmp_path, interactive=False)
    assert run.argv == ["droid", "exec", "--auto", "medium", "--", prompt]
    tui = agent.launch_spec(prompt, workspace=tmp_path, interactive=True)
    assert tui.argv == ["droid", "--", prompt]


def test_incremental_export_of_a_growing_log_equals_a_full_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded turn written out in pieces (ending at line ends and inside lines), as
    Droid appends it: after each piece, the export from the checkpoint is the export
    from scratch, and the checkpoint ends at the last whole line."""
    from test_incremental import _assert_checkpoint_at_last_line_end, _export_and_compare

    home = _install(FULL, tmp_path / "home", monkeypatch)
    path = home / FULL_EXPECTED["session_path"]
    body = path.read_bytes()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    line_ends = [i + 1 for i, byte in enumerate(body) if byte == 0x0A]
    cuts = [line_ends[2], line_ends[len(line_ends) // 2] + 7, line_ends[-3], len(body)]
    exported: Any = None
    for end in cuts:
        path.write_bytes(body[:end])
        exported = _export_and_compare(path, workspace, "droid")
    _assert_checkpoint_at_last_line_end(path, "droid")
    assert isinstance(exported, dict)
    assert (
        exported["state"]["last_failure"]["command"] == FULL_EXPECTED["failing_command"]["command"]
    )
