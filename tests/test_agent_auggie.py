"""Auggie: the recorded session (tests/fixtures/sessions/auggie/full, written by
`tests/e2e/test_auggie_real.py` against the real `auggie` 0.36.0 and a scripted Augment
backend), read through the reader and exported through the CLI; hand-made sessions for
what the recording does not show (a turn that stopped after a tool call, as a request that
failed after Auggie's retries leaves it; no task tree; a cyclic or hostile one; bad
documents); discovery by workspace, launch argv, and the hooks (install/uninstall byte
for byte, `passdown hook auggie` exporting on a Stop payload)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_checks import (
    Launch,
    PassdownCLI,
    agent_fixtures,
    assert_refused_as_too_large,
    check_launch,
    copy_recorded,
    hooks_installed,
)
from agent_entry_points import register
from passdown.agents import auggie as auggie_module
from passdown.agents.auggie import Auggie
from passdown.integrations._auggie import AuggieHooks
from passdown.transcript import Message, PlanOp, SessionEnding, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "auggie" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
WS = "/tmp/ws-auggie"


home, cli = agent_fixtures(register, "PASSDOWN_AUGGIE_DIR")


@pytest.fixture
def recorded_home(home: Path) -> Path:
    copy_recorded(RECORDED, home)
    return home


# -- the recorded session ----------------------------------------------------------------
def test_recorded_session(recorded_home: Path) -> None:
    agent = Auggie()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    assert ref.session_id == SID and ref.title == EXPECTED["original_request"]
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == [EXPECTED["original_request"]]  # tool-result exchanges carry no words
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[0] == "Planning the work." and said[-1] == EXPECTED["final_assistant_message"]
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [c for c in calls.values() if c.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    assert results[command.call_id].exit_code == 2 and results[command.call_id].is_error
    assert "No such file" in (results[command.call_id].error or "")
    [write] = [c for c in calls.values() if c.action == "write"]
    assert write.paths == ("hello.txt",)
    # the replayed plan (the short ids Auggie showed the model), then the task tree
    replayed = [c.plan for c in calls.values() if c.plan is not None]
    assert [[(i.subject, i.status) for i in op.items] for op in replayed] == [
        [("Write hello.txt", "in_progress"), ("Run the tests", "pending")],
        [("Write hello.txt", "completed"), ("Run the tests", "cancelled")],
    ]
    final = [e for e in events if isinstance(e, PlanOp)][-1]
    assert [{"subject": i.subject, "status": i.status} for i in final.items] == EXPECTED["plan"]
    assert all(len(i.id) == 36 for i in final.items)  # the task files' uuids
    assert transcript.info.cwd == EXPECTED["workspace"]
    assert transcript.info.agent_version is None and transcript.info.models == []
    assert transcript.diagnostics.summary() == []
    assert not any(isinstance(e, SessionEnding) for e in events)


def test_recorded_handoff_through_the_cli(recorded_home: Path, cli: PassdownCLI) -> None:
    data = cli.export("auggie", SID[:8])
    assert data["source"]["agent"] == "auggie" and data["source"]["session_id"] == SID
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_progress"] == EXPECTED["final_assistant_message"]
    plan = [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]]
    assert plan == EXPECTED["plan"] and data["state"]["plan_source"] == "task files"
    assert [f["path"] for f in data["state"]["files_touched"]] == EXPECTED["files_touched"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2
    assert data["ended"]["reason"] == "normal"


# -- hand-made sessions ------------------------------------------------------------------
def _exchange(
    message: str = "",
    *,
    said: str = "",
    tool: tuple[str, str, dict[str, Any]] | None = None,
    results: list[tuple[str, str, bool]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    request: list[dict[str, Any]] = []
    if message:
        request.append({"id": 1, "type": 0, "text_node": {"content": message}})
    request.append(
        {
            "id": 2,
            "type": 4,
            "ide_state_node": {
                "workspace_folders": [{"repository_root": WS, "folder_root": WS}],
                "current_terminal": {"terminal_id": 0, "current_working_directory": WS},
            },
        }
    )
    for call_id, content, is_error in results:
        node = {"tool_use_id": call_id, "content": content, "is_error": is_error}
        request.append({"id": 3, "type": 1, "tool_result_node": node})
    response: list[dict[str, Any]] = []
    if said:
        response.append({"id": 1, "type": 0, "content": said})
    if tool:
        call_id, name, args = tool
        use = {"tool_use_id": call_id, "tool_name": name, "input_json": json.dumps(args)}
        response.append({"id": 2, "type": 5, "tool_use": use})
    return {
        "exchange": {
            "request_message": message,
            "response_text": said,
            "request_nodes": request,
            "response_nodes": response,
        },
        "completed": True,
        "finishedAt": "2026-12-01T10:00:00.000Z",
    }


def _session(home: Path, sid: str, history: list[dict[str, Any]], root: str | None = None) -> Path:
    folder = home / ".augment" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "sessionId": sid,
        "created": "2026-12-01T10:00:00.000Z",
        "modified": "2026-12-01T10:05:00.000Z",
        "chatHistory": history,
        "agentState": {"modelId": "claude-sonnet-x"},
    }
    if root:
        doc["rootTaskUuid"] = root
    path = folder / f"{sid}.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


ADDED = (
    "Task list updated successfully. Created: 2, Updated: 1, Deleted: 0.\n\n# Task Changes\n\n"
    "## Created Tasks\n\n[/] UUID:aaa NAME:Fix the bug DESCRIPTION:in calc.py\n"
    "[ ] UUID:bbb NAME:Run the tests DESCRIPTION:all of them\n\n## Updated Tasks\n\n"
    "[ ] UUID:root NAME:Current Task List DESCRIPTION:Root task for conversation s1\n"
)
DELETED = (
    "Task list updated successfully. Created: 0, Updated: 1, Deleted: 1.\n\n# Task Changes\n\n"
    "## Updated Tasks\n\n[x] UUID:aaa NAME:Fix the bug DESCRIPTION:in calc.py\n\n"
    "## Deleted Tasks\n\n[ ] UUID:bbb NAME:Run the tests DESCRIPTION:all of them\n"
)


def test_a_turn_stopped_after_a_tool_call_is_interrupted_and_the_plan_replays(home: Path) -> None:
    """What 0.36.0 leaves when every retry of a request got a 429 (checked by hand with
    the real CLI): the last exchange's tool call never gets its result, nothing else. With
    no task tree on disk, the plan is replayed from the task tools' answers."""
    history = [
        _exchange("Fix the bug", said="Planning.", tool=("t1", "add_tasks", {"tasks": []})),
        _exchange(
            said="Updating.",
            tool=("t2", "update_tasks", {"tasks": []}),
            results=[("t1", ADDED, False)],
        ),
        _exchange(
            said="Editing.",
            tool=("t3", "str-replace-editor", {"command": "str_replace", "path": "calc.py"}),
            results=[("t2", DELETED, False)],
        ),
    ]
    _session(home, "s1", history, root="missing-root")
    [ref] = Auggie().sessions(Path(WS))
    events = list(Auggie().read(ref).events())
    plans = [e.plan for e in events if isinstance(e, ToolCall) and e.plan is not None]
    assert [[(i.id, i.status) for i in p.items] for p in plans] == [
        [("aaa", "in_progress"), ("bbb", "pending")],
        [("aaa", "completed")],
    ]
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "interrupted" and "retries" in (ending.message or "")
    [edit] = [e for e in events if isinstance(e, ToolCall) and e.action == "edit"]
    assert edit.paths == ("calc.py",)
    assert not any(isinstance(e, ToolResult) and e.call_id == "t3" for e in events)


def test_tools_map_to_actions(home: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n*** End Patch"
    )
    history = [
        _exchange("Do it", tool=("c1", "apply_patch", {"input": patch})),
        _exchange(
            tool=("c2", "remove-files", {"file_paths": ["old.py", 3]}),
            results=[("c1", "ok", False)],
        ),
        _exchange(tool=("c3", "view", {"path": "a.py"}), results=[("c2", "ok", False)]),
        _exchange(
            tool=("c4", "launch-process", {"command": "pytest -q", "wait": True}),
            results=[("c3", "ok", False)],
        ),
        _exchange(
            said="Tests pass.",
            results=[
                ("c4", "<return-code>\n0\n</return-code>\n<output>\n1 passed\n</output>", False)
            ],
        ),
    ]
    _session(home, "s2", history)
    events = list(Auggie().read(Auggie().sessions(Path(WS))[0]).events())
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    assert (calls["c1"].action, calls["c1"].paths) == ("edit", ("a.py", "b.py"))
    assert (calls["c2"].action, calls["c2"].paths) == ("delete", ("old.py",))
    assert calls["c3"].action == "read"
    [result] = [e for e in events if isinstance(e, ToolResult) and e.call_id == "c4"]
    assert result.exit_code == 0 and not result.is_error
    assert not any(isinstance(e, SessionEnding) for e in events)
    transcript = Auggie().read(Auggie().sessions(Path(WS))[0])
    list(transcript.events())
    assert transcript.info.models == ["claude-sonnet-x"]


def test_the_task_tree_is_bounded_and_never_leaves_its_folder(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = home / ".augment" / "task-storage" / "tasks"
    tasks.mkdir(parents=True)

    def task(uuid: str, name: str, state: str, subs: list[str]) -> None:
        body = {"uuid": uuid, "name": name, "description": "", "state": state, "subTasks": subs}
        (tasks / uuid).write_text(json.dumps(body))

    task("root", "Current Task List", "NOT_STARTED", ["a", "../../secret", "b"])
    task("a", "First", "COMPLETE", ["a1", "root"])  # a cycle back to the root
    task("a1", "First, part one", "IN_PROGRESS", ["a"])
    task("b", "Second", "CANCELLED", [f"n{i}" for i in range(50)])
    for i in range(50):
        task(f"n{i}", f"Nested {i}", "NOT_STARTED", [])
    (home / "secret").write_text(json.dumps({"name": "outside", "state": "COMPLETE"}))
    _session(home, "s3", [_exchange("Plan it", said="Planned.")], root="root")
    monkeypatch.setattr(auggie_module, "MAX_TASKS", 10)
    events = list(Auggie().read(Auggie().sessions(Path(WS))[0]).events())
    [plan] = [e for e in events if isinstance(e, PlanOp)]
    assert [(i.subject, i.status) for i in plan.items][:4] == [
        ("First", "completed"),
        ("First, part one", "in_progress"),
        ("Second", "cancelled"),
        ("Nested 0", "pending"),
    ]
    assert len(plan.items) == 10 and "outside" not in [i.subject for i in plan.items]


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1, 2]", b'{"chatHistory": [1, "x", {"exchange": 5}, null]}'],
    ids=["empty", "text", "array", "bad-entries"],
)
def test_bad_documents_never_crash_the_export(home: Path, cli: PassdownCLI, content: bytes) -> None:
    folder = home / ".augment" / "sessions"
    folder.mkdir(parents=True)
    (folder / "bad.json").write_bytes(content)
    cli.assert_export_survives("auggie", folder / "bad.json")


def test_an_oversized_document_is_refused_with_a_warning(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(home, "big", [_exchange("Fix the bug", said="x" * 5000)])
    monkeypatch.setattr(auggie_module, "MAX_SESSION_BYTES", 1000)
    assert_refused_as_too_large(Auggie(), WS)


def test_discovery_by_workspace_and_the_store_override(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(home, "here", [_exchange("Fix the bug")])
    other = _session(home, "there", [_exchange("Elsewhere")])
    other.write_text(other.read_text().replace(WS, "/tmp/elsewhere"))
    assert [r.session_id for r in Auggie().sessions(Path(WS))] == ["here"]
    assert {r.session_id for r in Auggie().sessions(None)} == {"here", "there"}
    assert Auggie().store_roots() == [home / ".augment" / "sessions"]
    monkeypatch.setenv("PASSDOWN_AUGGIE_DIR", str(tmp_path / "elsewhere"))
    assert Auggie().store_roots() == [tmp_path / "elsewhere" / "sessions"]
    assert Auggie().sessions(None) == []


# -- launching -----------------------------------------------------------------------------
LAUNCHES = [
    Launch(
        "-p is not print: go",
        True,
        ("auggie", "--instruction=-p is not print: go"),
        env={"AUGMENT_DISABLE_AUTO_UPDATE": "1"},
    ),
    Launch("go; rm -rf $(pwd)", False, ("auggie", "--print", "--instruction=go; rm -rf $(pwd)")),
    # a long prompt goes through a private file
    Launch(
        "Take over. " + "x" * 200_000, False, ("auggie", "--print", "--instruction-file={file}")
    ),
]


@pytest.mark.parametrize("launch", LAUNCHES, ids=str)
def test_launch_argv(launch: Launch, tmp_path: Path) -> None:
    check_launch(Auggie(), launch, tmp_path, "auggie-prompt.md")


# -- hooks ---------------------------------------------------------------------------------
def test_install_and_uninstall_are_byte_exact(home: Path, tmp_path: Path, cli: PassdownCLI) -> None:
    settings = home / ".augment" / "settings.json"
    original = '{"theme":"dark",   "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}'
    with hooks_installed(cli, "auggie", settings, original) as proc:
        data = json.loads(settings.read_text())
        assert sorted(data["hooks"]) == ["SessionEnd", "Stop"]  # no SessionStart: Auggie drops it
        assert data["hooks"]["Stop"][0]["hooks"][0]["command"] == "mine"
        assert data["hooks"]["Stop"][1]["hooks"][0]["command"].endswith(" hook auggie")
        assert "enabled" in proc.stdout + proc.stderr  # the server flag is named
    project = tmp_path / "proj"
    project.mkdir()
    assert cli("install", "auggie", "--scope", "project", cwd=project).returncode == 0
    assert (project / ".augment" / "settings.json").is_file()
    assert cli("uninstall", "auggie", "--scope", "project", cwd=project).returncode == 0
    assert not (project / ".augment" / "settings.json").exists()


def test_the_hook_payload_names_the_session_file(home: Path) -> None:
    hooks = AuggieHooks()
    path = _session(home, "abc", [_exchange("Fix the bug")])
    payload = {"hook_event_name": "Stop", "conversation_id": "abc", "workspace_roots": [WS]}
    assert hooks.session_spec(payload) == str(path) and hooks.cwd(payload) == WS
    assert hooks.event(payload) == "turn_complete"
    assert hooks.session_spec({"conversation_id": "../../etc/passwd"}) is None
    assert hooks.session_spec({"conversation_id": "not-yet-written"}) == "not-yet-written"


def test_a_stop_hook_writes_the_handoff(
    recorded_home: Path, tmp_path: Path, cli: PassdownCLI
) -> None:
    """`passdown hook auggie` as Auggie runs it at a turn's end: the payload on stdin."""
    ws = tmp_path / "ws"
    ws.mkdir()
    payload = {
        "hook_event_name": "Stop",
        "conversation_id": SID,
        "workspace_roots": [str(ws)],
        "agent_stop_cause": "end_turn",
    }
    proc = cli("hook", "auggie", cwd=ws, stdin=json.dumps(payload))
    assert proc.returncode == 0, proc.stderr
    log = cli.hooks_log()
    assert " ok auggie turn_complete stored=" in log, log
    stored = list((tmp_path / "data").rglob("*.json"))
    assert stored or (ws / ".agent-handoff" / "handoff.json").is_file()


def test_a_long_first_prompt_does_not_hide_the_workspace(home: Path) -> None:
    """The first exchange holds the prompt twice before the IDE state that names the
    cwd: a 200 KB takeover prompt pushes the cwd past the head discovery reads first."""
    prompt = "Take over. " + "x" * 200_000
    _session(home, "long", [_exchange(prompt, said="On it.")])
    [ref] = Auggie().sessions(Path(WS))
    assert ref.session_id == "long" and ref.cwd == WS
    assert (ref.title or "").startswith("Take over.")


def test_thinking_is_never_exported(home: Path) -> None:
    entry = _exchange("Fix the bug", said="Fixed.")
    entry["exchange"]["response_nodes"].insert(
        0, {"id": 9, "type": 8, "thinking": {"summary": "HIDDEN-REASONING"}, "content": ""}
    )
    _session(home, "think", [entry])
    [ref] = Auggie().sessions(Path(WS))
    transcript = Auggie().read(ref)
    events = list(transcript.events())
    assert "HIDDEN-REASONING" not in repr(events)
    assert [e.text for e in events if isinstance(e, Message)] == ["Fix the bug", "Fixed."]
    assert transcript.diagnostics.unknown_types == {}


def test_run_does_not_fall_over_from_a_turn_auggie_leaves_unexplained(
    home: Path, tmp_path: Path
) -> None:
    """`passdown run auggie --fallback claude`: an `auggie` that stops after a tool call
    and exits 1 (as 0.36.0 does when its retries of a 429 run out, writing no reason)
    ends "interrupted", not on a limit: passdown never claims a rate limit it cannot
    see, so Claude Code is not started and Auggie's exit code is passed on."""
    ws, bindir = tmp_path / "ws", tmp_path / "bin"
    ws.mkdir()
    bindir.mkdir()
    history = [_exchange("Fix the bug", said="Editing.", tool=("t1", "save-file", {"path": "a"}))]
    doc = {"sessionId": "ran", "created": "2026-12-01T10:00:00.000Z", "chatHistory": history}
    text = json.dumps(doc).replace(WS, str(ws))
    session = home / ".augment" / "sessions" / "ran.json"
    called = tmp_path / "claude-called"
    scripts = {
        "auggie": f"#!{sys.executable}\nimport pathlib, sys\n"
        f"p = pathlib.Path({str(session)!r})\np.parent.mkdir(parents=True, exist_ok=True)\n"
        f"p.write_text({text!r})\n"
        "print('Agent execution failed: Rate limited', file=sys.stderr)\nsys.exit(1)\n",
        "claude": f"#!/bin/sh\ntouch {called}\n",
    }
    for name, body in scripts.items():
        (bindir / name).write_text(body)
        (bindir / name).chmod(0o755)
    run = PassdownCLI(home, tmp_path, register, bin=bindir)
    proc = run("run", "auggie", "--fallback", "claude", "--non-interactive", "--", "Fix it", cwd=ws)
    assert proc.returncode == 1, proc.stderr
    assert session.is_file() and not called.exists(), proc.stderr
    assert "continuing in" not in proc.stderr


def test_a_long_session_is_parsed_once_its_fields_after_the_history_included(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agentState` and `rootTaskUuid` come after the history: they are taken from the
    document's tail in the history's one pass, not by one more pass over the whole
    document each (counted where the stream asks ijson for a pass)."""
    import ijson

    from passdown.agents import _json_stream

    history = [_exchange("Fix the bug", said="Planning.")]
    history += [_exchange(said=f"Step {n}. " + "w" * 400) for n in range(600)]
    _session(home, "long", history, root="root-uuid")
    passes: list[str] = []
    real = ijson.items

    def counted(source: object, prefix: str, **kwargs: object) -> object:
        passes.append(prefix)
        return real(source, prefix, **kwargs)

    roots: list[str | None] = []
    monkeypatch.setattr(_json_stream.ijson, "items", counted)
    monkeypatch.setattr(auggie_module, "_task_tree", lambda _folder, root: roots.append(root))
    [ref] = Auggie().sessions(Path(WS))
    transcript = Auggie().read(ref)
    said = [e.text for e in transcript.events() if isinstance(e, Message)]
    assert said[0] == "Fix the bug" and said[-1].startswith("Step 599.")
    assert passes == ["chatHistory.item"]
    assert roots == ["root-uuid"] and transcript.info.models == ["claude-sonnet-x"]
    assert transcript.info.started_at == "2026-12-01T10:00:00.000Z"
    assert transcript.info.updated_at == "2026-12-01T10:05:00.000Z"
