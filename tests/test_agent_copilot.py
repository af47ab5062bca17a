"""GitHub Copilot CLI: the recorded session (plan from session.db), hand-made event logs
(sub-agent events, compaction, bad and torn lines, unknown events), COPILOT_HOME, empty
and missing stores, and launch argv."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from passdown._extract import extract
from passdown.agents.copilot import CopilotCLI
from passdown.errors import UsageError
from passdown.transcript import Compaction, Message, PlanOp, SubagentNote, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "copilot" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
WS = "/tmp/ws-copilot"


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    return home


def test_recorded_session(recorded_home: Path) -> None:
    agent = CopilotCLI()
    refs = agent.sessions(Path(EXPECTED["workspace"]))
    assert [r.session_id for r in refs] == [EXPECTED["session_id"]]
    transcript = agent.read(refs[0])
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == EXPECTED["turns"]  # content, not the <current_datetime> transformedContent
    plan = events[-1]
    assert isinstance(plan, PlanOp)  # from session.db: "done" is completed
    assert [(i.id, i.status) for i in plan.items] == [
        ("write-calc", "completed"),
        ("greet-hi", "completed"),
        ("readme-usage", "in_progress"),
    ]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    commands = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert [results[c.call_id].exit_code for c in commands] == [0, 0, 1, 0]
    failing = results[commands[2].call_id]
    assert "<shellId" not in (failing.error or "")
    assert "FAILED (failures=1)" in (failing.error or "")
    info = transcript.info
    assert (info.agent_version, info.git_branch, info.models) == (
        "1.0.102",
        "main",
        ["scripted-model"],
    )
    assert transcript.diagnostics.summary() == []


def test_resolve_by_prefix_and_refuse_outside_paths(recorded_home: Path) -> None:
    agent = CopilotCLI()
    sid = EXPECTED["session_id"]
    assert agent.resolve(sid[:8], None).session_id == sid
    events = recorded_home / ".copilot" / "session-state" / sid / "events.jsonl"
    assert agent.resolve(str(events), None).session_id == sid
    with pytest.raises(UsageError):
        agent.resolve(str(recorded_home / ".copilot" / "session-store.db"), None)


def test_copilot_home_is_honoured(
    recorded_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "copilot-home"
    shutil.copytree(recorded_home / ".copilot", moved)
    monkeypatch.setenv("COPILOT_HOME", str(moved))
    shutil.rmtree(recorded_home / ".copilot")
    refs = CopilotCLI().sessions(None)
    assert [r.path.parent.parent for r in refs] == [moved / "session-state"]


# -- hand-made logs -------------------------------------------------------------------------
def _ev(kind: str, data: dict, **top: object) -> dict:
    return {
        "type": kind,
        "data": data,
        "id": kind,
        "timestamp": "2026-01-01T00:00:00Z",
        "parentId": None,
        **top,
    }


def _start(cwd: str = WS) -> dict:
    return _ev(
        "session.start",
        {
            "sessionId": "s1",
            "copilotVersion": "9.9",
            "selectedModel": "m",
            "context": {"cwd": cwd, "branch": "dev"},
        },
    )


def _request(call_id: str, name: str, args: dict, content: str = "", **data: object) -> dict:
    return _ev(
        "assistant.message",
        {
            "messageId": f"m-{call_id}",
            "content": content,
            "toolRequests": [{"toolCallId": call_id, "name": name, "arguments": args}],
            **data,
        },
    )


def _complete(call_id: str, success: bool = True, content: str = "", **data: object) -> dict:
    return _ev(
        "tool.execution_complete",
        {"toolCallId": call_id, "success": success, "result": {"content": content}, **data},
    )


def _write_log(
    home: Path, lines: list[dict | str], *, sid: str = "s1", yaml: str | None = None
) -> Path:
    folder = home / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    if yaml is not None:
        (folder / "workspace.yaml").write_text(yaml)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    return tmp_path


def _read(path: Path) -> tuple[list, object]:
    agent = CopilotCLI()
    transcript = agent.read(agent.ref_for_path(path))
    return list(transcript.events()), transcript


def test_subagent_events_stay_out_and_are_noted(home: Path) -> None:
    path = _write_log(
        home,
        [
            _start(),
            _ev("user.message", {"content": "investigate"}),
            _request("t1", "task", {"prompt": "look"}),
            _ev(
                "subagent.started",
                {
                    "toolCallId": "t1",
                    "agentName": "explore",
                    "agentDisplayName": "Explore",
                    "agentDescription": "explores",
                },
            ),
            _ev(
                "assistant.message", {"messageId": "sub", "content": "SUBAGENT-ONLY"}, agentId="a1"
            ),
            _request("b1", "bash", {"command": "grep -r x"}, parentToolCallId="t1"),
            _complete("t1", content="found it"),
            _ev(
                "assistant.message",
                {"messageId": "m9", "content": "Done.", "reasoningText": "HIDDEN"},
            ),
        ],
    )
    events, transcript = _read(path)
    assert "SUBAGENT-ONLY" not in repr(events) and "HIDDEN" not in repr(events)
    assert [e.agent_id for e in events if isinstance(e, SubagentNote)] == ["t1"]
    assert not [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert transcript.diagnostics.sidechain_records == 2
    ex = extract(iter(events), workspace=WS)
    assert ex.task.latest_progress == "Done."
    assert ex.state.subagent_calls == 1


def test_compaction_edits_and_failures(home: Path) -> None:
    path = _write_log(
        home,
        [
            _start(),
            _ev("user.message", {"content": "go"}),
            _request("e1", "edit", {"path": f"{WS}/a.py", "old_str": "x", "new_str": "y"}),
            _complete("e1", success=False, error={"message": "No match found", "code": "failure"}),
            _request("c1", "create", {"path": f"{WS}/b.py", "file_text": ""}),
            _complete(
                "c1", content="Created", fileEdits=[{"path": f"{WS}/b.py", "kind": "create"}]
            ),
            _request("s1", "bash", {"command": "make", "description": "d"}),
            _complete(
                "s1",
                content="make: *** error 2\n<shellId: 0 completed with exit code 2>",
                shellExecution={"exitCode": 2},
            ),
            _ev(
                "session.compaction_complete",
                {"success": True, "summaryContent": "We did a and b.", "trigger": "manual"},
            ),
            _ev("user.message", {"content": "continue", "isAutopilotContinuation": True}),
        ],
    )
    events, _ = _read(path)
    assert [(c.summary, c.trigger) for c in events if isinstance(c, Compaction)] == [
        ("We did a and b.", "manual")
    ]
    ex = extract(iter(events), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["b.py"]
    assert [f.path for f in ex.state.failed_edits] == ["a.py"]
    assert ex.state.failed_edits[0].error == "No match found"
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("make", 2)]
    assert ex.state.last_failure and ex.state.last_failure.error == "make: *** error 2"
    assert ex.task.latest_user_message == "go"  # the autopilot continuation is not the user


def test_bad_torn_and_unknown_lines(home: Path) -> None:
    path = _write_log(
        home,
        [
            _start(),
            "{oops",
            _ev("user.message", {"content": 42}),  # a known event with the wrong shape
            _ev("brand.new_event", {"x": 1}),
            _ev("assistant.turn_start", {"turnId": "0"}),
            _ev("user.message", {"content": "hello"}),
        ],
    )
    with path.open("a") as fh:
        fh.write('{"type": "assistant.message", "data": {"con')
    events, transcript = _read(path)
    assert [e.text for e in events if isinstance(e, Message)] == ["hello"]
    diag = transcript.diagnostics
    assert diag.bad_lines == 2
    assert diag.torn_last_line
    assert diag.unknown_types == {"brand.new_event": 1}


def test_cwd_from_yaml_or_from_the_start_event(home: Path) -> None:
    _write_log(
        home, [_start("/elsewhere")], sid="s1", yaml="id: s1\ncwd: '/tmp/ws-copilot/it''s'\n"
    )
    _write_log(home, [_start(WS + "/sub")], sid="s2")  # no workspace.yaml
    agent = CopilotCLI()
    refs = {r.session_id: r.cwd for r in agent.sessions(Path(WS))}
    assert refs == {"s1": "/tmp/ws-copilot/it's", "s2": WS + "/sub"}


def test_empty_log_missing_store_and_a_todo_db_without_todos(home: Path) -> None:
    agent = CopilotCLI()
    assert agent.sessions(None) == []
    path = _write_log(home, [])
    with closing(sqlite3.connect(path.parent / "session.db")) as conn, conn:
        conn.execute("CREATE TABLE other (x)")  # no todos table: no plan, no warning
    events, transcript = _read(path)
    assert events == []
    assert transcript.diagnostics.warnings == []
    assert transcript.sha256 and len(transcript.sha256) == 64


def test_launch_argv(tmp_path: Path) -> None:
    agent = CopilotCLI()
    prompt = "-x read .agent-handoff/HANDOFF.md"
    batch = agent.launch_spec(prompt, workspace=tmp_path, interactive=False)
    assert batch.argv == ["copilot", f"--prompt={prompt}", "--allow-all-tools"]
    tui = agent.launch_spec(prompt, workspace=tmp_path, interactive=True)
    assert tui.argv == ["copilot", f"--interactive={prompt}"]
    assert tui.cwd == tmp_path
