"""Gemini CLI: the recorded real session (0.61.0) and hand-made logs for what the format
allows: updates by repeated id, `$set` history replays, compression, rewinds, torn and
unknown lines, legacy one-object files, missing stores."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from passdown._extract import extract
from passdown.agents.gemini import GeminiCLI
from passdown.transcript import Compaction, Message, SubagentNote, ToolCall, ToolResult
from recorded import FIXTURES, Recorded

WS = "/tmp/passdown-gemini/ws"
SID = "0f0e0d0c-1111-4222-8333-444455556666"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.delenv("SANDBOX", raising=False)
    return tmp_path


def _recorded() -> Recorded:
    root = FIXTURES / "gemini" / "full"
    return Recorded("gemini", "full", root, json.loads((root / "expected.json").read_text()))


class Log:
    """A Gemini session file built line by line, in a registered project folder."""

    def __init__(self, home: Path, workspace: str = WS, project: str = "ws") -> None:
        gemini = home / ".gemini"
        (gemini / "tmp" / project / "chats").mkdir(parents=True, exist_ok=True)
        registry = gemini / "projects.json"
        data = json.loads(registry.read_text()) if registry.exists() else {"projects": {}}
        data["projects"][workspace] = project
        registry.write_text(json.dumps(data))
        (gemini / "tmp" / project / ".project_root").write_text(workspace)
        self.path = gemini / "tmp" / project / "chats" / f"session-2026-11-29T10-00-{SID[:8]}.jsonl"
        self.lines: list[str] = []
        self.header()

    def header(self) -> None:
        self.raw(
            {
                "sessionId": SID,
                "projectHash": "x" * 64,
                "startTime": "2026-11-29T10:00:00.000Z",
                "lastUpdated": "2026-11-29T10:00:00.000Z",
                "kind": "main",
            }
        )

    def raw(self, obj: Any) -> None:
        self.lines.append(obj if isinstance(obj, str) else json.dumps(obj))

    def user(self, mid: str, text: str) -> None:
        self.raw(
            {
                "id": mid,
                "timestamp": "2026-11-29T10:00:01.000Z",
                "type": "user",
                "content": [{"text": text}],
            }
        )

    def gemini(
        self, mid: str, text: str, *calls: dict[str, Any], thoughts: list[Any] | None = None
    ) -> None:
        rec: dict[str, Any] = {
            "id": mid,
            "timestamp": "2026-11-29T10:00:02.000Z",
            "type": "gemini",
            "content": text,
            "thoughts": thoughts or [],
            "model": "gemini-2.5-pro",
        }
        if calls:
            rec["toolCalls"] = list(calls)
        self.raw(rec)

    def write(self, *, newline: bool = True) -> Path:
        self.path.write_text("\n".join(self.lines) + ("\n" if newline else ""))
        return self.path


def call(
    cid: str,
    name: str,
    args: dict[str, Any],
    *,
    output: str | None = None,
    error: str | None = None,
    status: str = "success",
) -> dict[str, Any]:
    response = {"error": error} if error is not None else {"output": output or ""}
    return {
        "id": cid,
        "name": name,
        "args": args,
        "status": status,
        "result": [{"functionResponse": {"id": cid, "name": name, "response": response}}],
    }


def _read(path: Path) -> tuple[list[Any], Any]:
    agent = GeminiCLI()
    transcript = agent.read(agent.ref_for_path(path))
    return list(transcript.events()), transcript


def _texts(events: list[Any]) -> list[tuple[str, str]]:
    return [(e.role, e.text) for e in events if isinstance(e, Message)]


# -- the recorded real session ------------------------------------------------------------
def test_recorded_session_is_discovered_by_workspace(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    rec.install(home / "store", monkeypatch)
    agent = GeminiCLI()
    refs = agent.sessions(Path(rec.expected["workspace"]))
    assert [r.session_id for r in refs] == [rec.expected["session_id"]]
    assert refs[0].cwd == rec.expected["workspace"]
    assert agent.sessions(Path("/tmp/some-other-workspace")) == []
    assert agent.sessions(Path("/tmp/passdown-rec")) == refs  # a parent folder sees it too


def test_recorded_session_extracts_what_the_agent_did(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recorded()
    path = rec.install(home / "store", monkeypatch)
    exp = rec.expected
    events, transcript = _read(path)
    ex = extract(iter(events), workspace=exp["workspace"])
    assert ex.task.original_request == exp["original_request"]
    assert ex.task.latest_user_message == exp["latest_user_message"]
    assert ex.task.latest_progress == exp["final_assistant_message"]
    assert [m.text for m in events if isinstance(m, Message) and m.role == "user"] == exp["turns"]
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        (p["subject"], p["status"]) for p in exp["plan"]
    ]
    assert {f.path for f in ex.state.files_touched} == set(exp["files_touched"])
    assert [f.path for f in ex.state.failed_edits] == exp["failed_edits"]
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [
        (c["command"], c["exit_code"]) for c in exp["commands"]
    ]
    failing = exp["failing_command"]
    assert ex.state.last_failure is not None
    assert (ex.state.last_failure.command, ex.state.last_failure.exit_code) == (
        failing["command"],
        failing["exit_code"],
    )
    assert failing["error_line_contains"] in (ex.state.last_failure.error or "")
    info = transcript.info
    assert info.session_id == exp["session_id"]
    assert info.models == [exp["model"]]
    assert info.agent_version is None  # Gemini's session files do not record it
    assert transcript.sha256 and len(transcript.sha256) == 64
    diag = transcript.diagnostics
    assert (diag.bad_lines, diag.torn_last_line, diag.unknown_types) == (0, False, {})
    # the session_context message and the replayed `_response` copies are not messages
    assert not any("<session_context>" in t for _, t in _texts(events))
    calls = [e.call_id for e in events if isinstance(e, ToolCall)]
    assert len(calls) == len(set(calls)) == 12  # 3 plan, 2 writes, 3 edits, 4 commands


def test_gemini_cli_home_overrides_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _recorded()
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gh"))
    import shutil

    shutil.copytree(rec.root, tmp_path / "gh", ignore=shutil.ignore_patterns("expected.json"))
    agent = GeminiCLI()
    assert agent.store_roots() == [tmp_path / "gh" / ".gemini" / "tmp"]
    assert [r.session_id for r in agent.sessions(Path(rec.expected["workspace"]))] == [
        rec.expected["session_id"]
    ]


# -- the log semantics ---------------------------------------------------------------------
def test_repeated_id_updates_the_message_in_place(home: Path) -> None:
    log = Log(home)
    log.user("u1", "make the change")
    log.gemini("g1", "working on it")
    log.gemini(
        "g1",
        "working on it",
        call("c1", "write_file", {"file_path": f"{WS}/a.py", "content": "x"}, output="ok"),
    )
    log.user("u1r", "")  # an empty record: nothing to say
    log.gemini("g2", "done")
    events, _ = _read(log.write())
    assert _texts(events) == [
        ("user", "make the change"),
        ("assistant", "working on it"),
        ("assistant", "done"),
    ]
    assert [type(e).__name__ for e in events].count("ToolCall") == 1
    ex = extract(iter(events), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["a.py"]


def test_rewind_drops_the_target_and_everything_after_it(home: Path) -> None:
    log = Log(home)
    log.user("u1", "first request")
    log.gemini("g1", "ok", call("c1", "write_file", {"file_path": f"{WS}/kept.py"}, output="ok"))
    log.user("u2", "a request the user took back")
    log.gemini(
        "g2",
        "rewound reply",
        call(
            "c2", "run_shell_command", {"command": "rm -rf build"}, output="Output: x\nExit Code: 3"
        ),
    )
    log.raw({"$rewindTo": "u2"})
    log.user("u3", "the real second request")
    log.gemini("g3", "final answer")
    events, transcript = _read(log.write())
    assert _texts(events) == [
        ("user", "first request"),
        ("assistant", "ok"),
        ("user", "the real second request"),
        ("assistant", "final answer"),
    ]
    ex = extract(iter(events), workspace=WS)
    assert ex.state.commands == []
    assert [f.path for f in ex.state.files_touched] == ["kept.py"]
    assert transcript.diagnostics.off_branch_records == 2


def test_rewind_to_an_unknown_id_clears_the_history_like_the_cli(home: Path) -> None:
    log = Log(home)
    log.user("u1", "gone")
    log.raw({"$rewindTo": "nope"})
    log.user("u2", "kept")
    events, _ = _read(log.write())
    assert _texts(events) == [("user", "kept")]


def test_set_messages_is_a_replay_that_keeps_tool_statuses(home: Path) -> None:
    """On resume the CLI rewrites the whole history in API shape (no statuses, tool
    results as `<id>_response`); the recorded messages must keep their results."""
    log = Log(home)
    ctx = {"id": "ctx", "type": "user", "content": [{"text": "<session_context>\nlisting"}]}
    log.raw({"$set": {"messages": [ctx]}})
    log.user("u1", "run the tests")
    log.gemini(
        "g1",
        "",
        call(
            "c1",
            "run_shell_command",
            {"command": "pytest"},
            output="Output: 1 failed\nExit Code: 1",
        ),
    )
    log.header()  # resume: a second header, then the history re-serialised
    log.raw({"$set": {"messages": [ctx]}})
    replay = [
        ctx,
        {"id": "u1", "type": "user", "content": [{"text": "run the tests"}]},
        {
            "id": "g1",
            "type": "gemini",
            "content": [
                {
                    "functionCall": {
                        "id": "c1",
                        "name": "run_shell_command",
                        "args": {"command": "pytest"},
                    }
                }
            ],
        },
        {
            "id": "g1_response",
            "type": "user",
            "content": [
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "run_shell_command",
                        "response": {"output": "Output: 1 failed\nExit Code: 1"},
                    }
                }
            ],
        },
    ]
    log.raw({"$set": {"messages": replay}})
    log.user("u2", "fix it")
    log.gemini(
        "g2", "fixed", call("c2", "run_shell_command", {"command": "pytest"}, output="Output: ok")
    )
    events, _ = _read(log.write())
    assert _texts(events) == [("user", "run the tests"), ("user", "fix it"), ("assistant", "fixed")]
    ex = extract(iter(events), workspace=WS)
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("pytest", 1), ("pytest", 0)]


def test_set_messages_after_an_aborted_turn_drops_it(home: Path) -> None:
    log = Log(home)
    log.user("u1", "keep me")
    log.gemini("g1", "kept reply")
    log.user("u2", "aborted prompt")
    log.raw(
        {
            "$set": {
                "messages": [
                    {"id": "u1", "type": "user", "content": [{"text": "keep me"}]},
                    {"id": "g1", "type": "gemini", "content": [{"text": "kept reply"}]},
                ]
            }
        }
    )
    events, _ = _read(log.write())
    assert _texts(events) == [("user", "keep me"), ("assistant", "kept reply")]


def test_compression_keeps_earlier_messages_and_adds_the_summary(home: Path) -> None:
    log = Log(home)
    log.user("u1", "the original request")
    log.gemini("g1", "early progress")
    summary = "<state_snapshot>\n<overall_goal>ship it</overall_goal>\n</state_snapshot>"
    log.raw(
        {
            "$set": {
                "messages": [
                    {"id": "ctx", "type": "user", "content": [{"text": "<session_context>\nx"}]},
                    {"id": "s1", "type": "user", "content": [{"text": summary}]},
                    {
                        "id": "a1",
                        "type": "gemini",
                        "content": [{"text": "Got it. Thanks for the additional context!"}],
                    },
                ]
            }
        }
    )
    log.user("u2", "carry on")
    log.gemini("g2", "latest progress")
    events, _ = _read(log.write())
    assert _texts(events) == [
        ("user", "the original request"),
        ("assistant", "early progress"),
        ("user", "carry on"),
        ("assistant", "latest progress"),
    ]
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert len(compactions) == 1 and "ship it" in (compactions[0].summary or "")
    ex = extract(iter(events), workspace=WS)
    assert ex.task.compactions == 1 and ex.task.original_request == "the original request"


def test_hidden_reasoning_is_never_exported(home: Path) -> None:
    log = Log(home)
    log.user("u1", "q")
    log.gemini(
        "g1", "visible answer", thoughts=[{"subject": "Plan", "description": "SECRET-THOUGHT-1"}]
    )
    log.raw(
        {
            "$set": {
                "messages": [
                    {"id": "u1", "type": "user", "content": [{"text": "q"}]},
                    {
                        "id": "g1",
                        "type": "gemini",
                        "content": [
                            {"text": "SECRET-THOUGHT-3", "thought": True},
                            {"text": "visible answer"},
                        ],
                    },
                    {
                        "id": "g9",
                        "type": "gemini",
                        "content": [
                            {"text": "SECRET-THOUGHT-2", "thought": True},
                            {"text": "shown"},
                        ],
                    },
                ]
            }
        }
    )
    events, _ = _read(log.write())
    dumped = repr(events)
    assert "SECRET-THOUGHT" not in dumped
    assert _texts(events) == [
        ("user", "q"),
        ("assistant", "visible answer"),
        ("assistant", "shown"),
    ]


def test_failed_and_cancelled_edits_touch_nothing(home: Path) -> None:
    log = Log(home)
    log.user("u1", "edit")
    log.gemini(
        "g1",
        "",
        call(
            "c1",
            "replace",
            {"file_path": f"{WS}/a.md", "old_string": "x", "new_string": "y"},
            error="Could not find an exact match for 'old_string'",
            status="error",
        ),
    )
    log.gemini(
        "g2",
        "",
        {
            "id": "c2",
            "name": "write_file",
            "args": {"file_path": f"{WS}/b.py"},
            "status": "cancelled",
        },
    )
    log.gemini("g3", "", call("c3", "write_file", {"file_path": f"{WS}/c.py"}, output="ok"))
    events, _ = _read(log.write())
    ex = extract(iter(events), workspace=WS)
    assert [f.path for f in ex.state.files_touched] == ["c.py"]
    assert [f.path for f in ex.state.failed_edits] == ["a.md", "b.py"]
    assert "Could not find" in (ex.state.failed_edits[0].error or "")


def test_shell_exit_codes_and_error_lines(home: Path) -> None:
    log = Log(home)
    log.user("u1", "run")
    out = "<untrusted_context>\nOutput: Traceback (most recent call last):\nValueError: bad\nExit Code: 2\nProcess Group PGID: 7\n</untrusted_context>"
    log.gemini("g1", "", call("c1", "run_shell_command", {"command": "python x.py"}, output=out))
    log.gemini(
        "g2",
        "",
        call(
            "c2",
            "run_shell_command",
            {"command": "true"},
            output="Output: (empty)\nProcess Group PGID: 8",
        ),
    )
    log.gemini(
        "g3",
        "",
        call("c3", "run_shell_command", {"command": "sleep 99"}, output="Output: \nSignal: 9"),
    )
    events, _ = _read(log.write())
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    assert (results["c1"].exit_code, results["c1"].is_error) == (2, True)
    assert results["c1"].error and "ValueError: bad" in results["c1"].error
    assert "Process Group" not in results["c1"].error
    assert (results["c2"].exit_code, results["c2"].is_error) == (0, False)
    assert results["c3"].is_error and results["c3"].exit_code is None


def test_a_call_without_a_result_yet_is_answered_by_a_later_user_record(home: Path) -> None:
    log = Log(home)
    log.user("u1", "go")
    log.gemini(
        "g1",
        "",
        {
            "id": "c1",
            "name": "run_shell_command",
            "args": {"command": "make"},
            "status": "executing",
        },
    )
    log.raw(
        {
            "id": "r1",
            "type": "user",
            "content": [
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "run_shell_command",
                        "response": {"output": "Output: boom error\nExit Code: 2"},
                    }
                }
            ],
        }
    )
    events, _ = _read(log.write())
    ex = extract(iter(events), workspace=WS)
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("make", 2)]


def test_plan_from_write_todos(home: Path) -> None:
    log = Log(home)
    log.user("u1", "plan")
    todos = [
        {"description": "a", "status": "completed"},
        {"description": "b", "status": "in_progress"},
        {"description": "c", "status": "cancelled"},
        {"description": "d", "status": "weird"},
    ]
    log.gemini("g1", "", call("c1", "write_todos", {"todos": todos}, output="ok"))
    events, _ = _read(log.write())
    ex = extract(iter(events), workspace=WS)
    assert [(p.subject, p.status) for p in ex.state.plan] == [
        ("a", "completed"),
        ("b", "in_progress"),
        ("c", "cancelled"),
        ("d", "pending"),
    ]


# -- bad input ---------------------------------------------------------------------------
def test_torn_last_line_unknown_records_and_bad_shapes_do_not_raise(home: Path) -> None:
    log = Log(home)
    log.user("u1", "hello")
    log.raw({"$future": 1})
    log.raw({"id": "x1", "type": "hologram", "content": "?"})
    log.raw({"id": "x2", "type": "gemini", "content": 42, "toolCalls": "nope"})
    log.raw({"id": "x3", "type": "info", "content": "Request cancelled."})
    log.raw('{"id": "u2", "type": "user", "content": [{"text": "cut')
    events, transcript = _read(log.write(newline=False))
    assert _texts(events) == [("user", "hello")]
    diag = transcript.diagnostics
    assert diag.torn_last_line and diag.bad_lines == 0
    assert set(diag.unknown_types) == {"(unrecognised record)", "message type 'hologram'"}


def test_bad_line_in_the_middle_and_non_utf8(home: Path) -> None:
    log = Log(home)
    log.raw("{not json")
    log.user("u1", "caf\udce9")  # lone surrogate: json.dumps escapes it
    path = log.write()
    path.write_bytes(
        path.read_bytes()
        + b'{"id": "u2", "type": "user", "content": [{"text": "bad \xff byte"}]}\n'
    )
    events, transcript = _read(path)
    assert [t for _, t in _texts(events)] == ["caf\ufffd", "bad \ufffd byte"]
    assert transcript.diagnostics.bad_lines == 1


def test_empty_file_and_missing_store(home: Path) -> None:
    log = Log(home)
    path = log.write()
    path.write_bytes(b"")
    events, transcript = _read(path)
    assert events == [] and transcript.diagnostics.bad_lines == 0
    assert GeminiCLI().sessions(None) != []  # the empty file is still a session file
    (home / ".gemini" / "projects.json").write_text("{broken")
    assert [r.cwd for r in GeminiCLI().sessions(Path(WS))] == [WS]  # .project_root still says
    import shutil

    shutil.rmtree(home / ".gemini")
    assert GeminiCLI().sessions(Path(WS)) == []
    assert GeminiCLI().sessions(None) == []


# -- discovery ---------------------------------------------------------------------------
def test_projects_below_the_workspace_count_and_neighbours_do_not(home: Path) -> None:
    Log(home, workspace=f"{WS}/sub", project="sub").write()
    Log(home, workspace=f"{WS}-other", project="ws-other").write()
    agent = GeminiCLI()
    assert [r.cwd for r in agent.sessions(Path(WS))] == [f"{WS}/sub"]
    assert sorted(r.cwd for r in agent.sessions(None)) == [f"{WS}-other", f"{WS}/sub"]


def test_legacy_hash_folder_and_pretty_printed_json_file(home: Path) -> None:
    folder = home / ".gemini" / "tmp" / hashlib.sha256(WS.encode()).hexdigest() / "chats"
    folder.mkdir(parents=True)
    legacy = {
        "sessionId": SID,
        "projectHash": "h",
        "startTime": "2025-08-01T10:00:00.000Z",
        "lastUpdated": "2025-08-01T10:05:00.000Z",
        "messages": [
            {
                "id": "u1",
                "timestamp": "2025-08-01T10:00:01.000Z",
                "type": "user",
                "content": "fix the bug",
            },
            {
                "id": "g1",
                "timestamp": "2025-08-01T10:00:02.000Z",
                "type": "gemini",
                "content": "fixed {it}",
                "toolCalls": [
                    call(
                        "c1",
                        "replace",
                        {"file_path": f"{WS}/bug.py", "old_string": "}", "new_string": "{"},
                        output="ok",
                    )
                ],
                "thoughts": [{"subject": "s", "description": "HIDDEN"}],
            },
        ],
    }
    (folder / "session-2025-08-01T10-00-0f0e0d0c.json").write_text(json.dumps(legacy, indent=2))
    agent = GeminiCLI()
    refs = agent.sessions(Path(WS))
    assert [(r.session_id, r.cwd, r.started_at) for r in refs] == [
        (SID, WS, "2025-08-01T10:00:00.000Z")
    ]
    assert agent.sessions(Path("/tmp/elsewhere")) == []
    events, transcript = _read(refs[0].path)
    assert _texts(events) == [("user", "fix the bug"), ("assistant", "fixed {it}")]
    assert transcript.info.session_id == SID
    assert "HIDDEN" not in repr(events)
    assert [f.path for f in extract(iter(events), workspace=WS).state.files_touched] == ["bug.py"]
    # the same file written compactly on one line
    (folder / "session-2025-08-01T10-00-0f0e0d0c.json").write_text(json.dumps(legacy))
    events, _ = _read(refs[0].path)
    assert _texts(events) == [("user", "fix the bug"), ("assistant", "fixed {it}")]


def test_a_resumed_legacy_file_is_listed_once(home: Path) -> None:
    log = Log(home)
    log.user("u1", "hi")
    path = log.write()
    path.with_suffix(".json").write_text(json.dumps({"sessionId": SID, "messages": []}, indent=2))
    assert [r.path.name for r in GeminiCLI().sessions(Path(WS))] == [path.name]


def test_subagent_transcripts_are_noted_not_read(home: Path) -> None:
    log = Log(home)
    log.user("u1", "main request")
    path = log.write()
    sub = path.parent / SID
    sub.mkdir()
    (sub / "agent-1.jsonl").write_text(
        json.dumps({"id": "s1", "type": "user", "content": [{"text": "SUB ONLY"}]}) + "\n"
    )
    events, _ = _read(path)
    assert [e.agent_id for e in events if isinstance(e, SubagentNote)] == ["agent-1"]
    assert "SUB ONLY" not in repr(_texts(events))


def test_resolve_by_id_prefix_and_path(home: Path) -> None:
    path = Log(home).write()
    agent = GeminiCLI()
    assert agent.resolve(SID[:6], None).path == path
    assert agent.resolve(str(path), None).session_id == SID


# -- launching ---------------------------------------------------------------------------
@pytest.mark.parametrize("interactive", [False, True])
def test_launch_keeps_a_dash_prompt_one_argument(interactive: bool, tmp_path: Path) -> None:
    prompt = "--help -p read .agent-handoff/HANDOFF.md"
    spec = GeminiCLI().launch_spec(prompt, workspace=tmp_path, interactive=interactive)
    assert spec.cwd == tmp_path
    if interactive:
        assert spec.argv == ["gemini", f"--prompt-interactive={prompt}"]
    else:
        assert spec.argv == ["gemini", "--approval-mode", "auto_edit", f"--prompt={prompt}"]
    assert sum(prompt in a for a in spec.argv) == 1
