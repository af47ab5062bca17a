"""Cline CLI 3: the recorded session (tests/fixtures/sessions/cline/full, written by
`tests/e2e/test_cline_real.py` against the real `cline` 3.0.65), read through the reader
and exported through the CLI; hand-made sessions for what the recording does not show
(a failed or cancelled run, several commands in one call, an injected "[SYSTEM]" nudge,
no teams.db, bad and oversized documents); discovery, env overrides and launch argv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_entry_points import register
from passdown._extract import extract
from passdown.agents import cline as cline_module
from passdown.agents.cline import ClineCLI
from passdown.transcript import Message, PlanOp, SessionEnding, ToolCall, ToolResult
from recorded import FIXTURES

RECORDED = FIXTURES / "cline" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
PASSDOWN = [sys.executable, "-m", "passdown"]


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    for var in ClineCLI.store_env:
        monkeypatch.delenv(var, raising=False)
    return home


def test_recorded_session(recorded_home: Path) -> None:
    agent = ClineCLI()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    assert ref.session_id == SID and ref.path.name == f"{SID}.messages.json"
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == [EXPECTED["original_request"]]  # unwrapped from <user_input>
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[0] == "Planning the work." and said[-1] == EXPECTED["final_assistant_message"]
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [c for c in calls.values() if c.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    assert results[command.call_id].exit_code == 2 and results[command.call_id].is_error
    assert "No such file" in (results[command.call_id].error or "")
    [write] = [c for c in calls.values() if c.action == "write"]
    assert write.paths == (f"{EXPECTED['workspace']}/hello.txt",)
    final_plan = [e for e in events if isinstance(e, PlanOp)][-1]
    assert [{"id": i.id, "subject": i.subject, "status": i.status} for i in final_plan.items] == (
        EXPECTED["plan"]
    )
    assert transcript.info.agent_version == "3.0.65"
    assert transcript.info.models == ["scripted-model"]
    assert transcript.info.cwd == EXPECTED["workspace"]
    assert transcript.diagnostics.summary() == []
    assert not any(isinstance(e, SessionEnding) for e in events)


def test_recorded_handoff_through_the_cli(recorded_home: Path, tmp_path: Path) -> None:
    env = {
        "HOME": str(recorded_home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": register(tmp_path / "site"),
        "PASSDOWN_DATA_DIR": str(tmp_path / "data"),
    }
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            *PASSDOWN,
            "export",
            "--from",
            "cline",
            "--session",
            SID[:8],
            "--workspace",
            ".",
            "--out",
            str(out),
            "--no-store",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "handoff.json").read_text())
    assert data["source"]["session_id"] == SID and data["source"]["agent_version"] == "3.0.65"
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert [{k: p[k] for k in ("id", "subject", "status")} for p in data["state"]["plan"]] == (
        EXPECTED["plan"]
    )
    assert [f["path"] for f in data["state"]["files_touched"]] == EXPECTED["files_touched"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2
    assert data["ended"]["reason"] == "normal"


# -- hand-made sessions ------------------------------------------------------------------
WS = "/tmp/ws-cline"


def _session(
    root: Path,
    sid: str,
    messages: list[dict[str, object]] | bytes,
    *,
    cwd: str = WS,
    **manifest: object,
) -> Path:
    folder = root / ".cline" / "data" / "sessions" / sid
    folder.mkdir(parents=True)
    head = {"version": 1, "session_id": sid, "cwd": cwd, "status": "completed", **manifest}
    (folder / f"{sid}.json").write_text(json.dumps(head))
    body = messages if isinstance(messages, bytes) else json.dumps({"messages": messages}).encode()
    (folder / f"{sid}.messages.json").write_bytes(body)
    return folder


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "ts": 1_800_000_000_000}


def _use(call_id: str, name: str, **args: object) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
    }


def _result(call_id: str, content: object) -> dict[str, object]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": content}],
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ClineCLI.store_env:
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _read(sid: str) -> tuple[list[object], ClineCLI]:
    agent = ClineCLI()
    ref = agent.resolve(sid, None)
    transcript = agent.read(ref)
    return list(transcript.events()), agent


def test_several_commands_in_one_call_and_a_system_nudge(home: Path) -> None:
    _session(
        home,
        "1_a",
        [
            _user('<user_input mode="act">Fix the build</user_input>'),
            _use("c1", "run_commands", commands=["make", "pytest -q"]),
            _result(
                "c1",
                [
                    {"query": "make", "result": "built", "success": True},
                    {
                        "query": "pytest -q",
                        "result": "[Command exited with code 1]\n\n[stderr]\nE   AssertionError: 2 != 3\n",
                        "error": "Command exited with code 1",
                        "success": False,
                    },
                ],
            ),
            _user("[SYSTEM] You still have team obligations. Unfinished tasks: task_0001"),
        ],
    )
    events, _agent = _read("1_a")
    ex = extract(iter(events), workspace=WS)
    assert [(c.command, c.exit_code, c.ok) for c in ex.state.commands] == [
        ("make", 0, True),
        ("pytest -q", 1, False),
    ]
    assert ex.state.last_failure and "AssertionError: 2 != 3" in (ex.state.last_failure.error or "")
    users = [e for e in events if isinstance(e, Message) and e.role == "user"]
    assert [u.synthetic for u in users] == [False, True]
    assert ex.task.original_request == "Fix the build"
    assert ex.task.latest_user_message == "Fix the build"  # the nudge is no user's word


@pytest.mark.parametrize(
    ("status", "reason"), [("failed", "error"), ("cancelled", "interrupted"), ("completed", None)]
)
def test_how_the_run_ended(home: Path, status: str, reason: str | None) -> None:
    _session(
        home,
        "1_b",
        [_user('<user_input mode="act">go</user_input>')],
        status=status,
        ended_at="2027-01-01T00:00:00.000Z",
        metadata={"terminal_marker": "failed_external_process_exit"},
    )
    events, _agent = _read("1_b")
    endings = [e for e in events if isinstance(e, SessionEnding)]
    assert [e.reason for e in endings] == ([reason] if reason else [])
    if reason:
        assert "failed_external_process_exit" in (endings[0].message or "")


def test_plan_without_teams_db_is_replayed_from_the_calls(home: Path) -> None:
    _session(
        home,
        "1_c",
        [
            _use("t1", "team_task", action="create", title="A", description="a"),
            _result("t1", '{"action":"create","taskId":"task_0001","status":"pending"}'),
            _use("t2", "team_task", action="create", title="B", description="b"),
            _result("t2", '{"action":"create","taskId":"task_0002","status":"pending"}'),
            _use("t3", "team_task", action="claim", taskId="task_0002"),
            _result("t3", '{"action":"claim","taskId":"task_0002","status":"in_progress"}'),
            _use("t4", "team_task", action="complete", taskId="task_0001", summary="done"),
            _result("t4", '{"action":"complete","taskId":"task_0001","status":"completed"}'),
            _use("t5", "team_task", action="list"),
            _result("t5", "[]"),
        ],
    )
    events, _agent = _read("1_c")
    ex = extract(iter(events), workspace=WS)
    assert [(i.id, i.subject, i.status) for i in ex.state.plan] == [
        ("task_0001", "A", "completed"),
        ("task_0002", "B", "in_progress"),
    ]


def test_failed_edit_touches_nothing(home: Path) -> None:
    _session(
        home,
        "1_d",
        [
            _use("e1", "editor", path=f"{WS}/a.py", old_text="x", new_text="y"),
            _result(
                "e1",
                '{"query":"edit:/tmp/ws-cline/a.py","error":"old_text not found","success":false}',
            ),
        ],
    )
    events, _agent = _read("1_d")
    ex = extract(iter(events), workspace=WS)
    assert not ex.state.files_touched
    assert [(f.path, f.error) for f in ex.state.failed_edits] == [("a.py", "old_text not found")]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{not json",
        b"[1, 2]",
        b'{"messages": [1, {"role": 5}, {"role": "user", "content": [{"type": "image"}]}]}',
    ],
)
def test_bad_documents_never_raise(home: Path, body: bytes) -> None:
    _session(home, "1_e", body)
    events, _agent = _read("1_e")
    assert not [e for e in events if isinstance(e, (Message, ToolCall))]


def test_bad_messages_are_counted(home: Path) -> None:
    _session(home, "1_f", [{"role": 5}, _user("<user_input>ok</user_input>")])
    agent = ClineCLI()
    transcript = agent.read(agent.resolve("1_f", None))
    events = list(transcript.events())
    assert transcript.diagnostics.bad_lines == 1 and transcript.diagnostics.lines == 2
    assert [e.text for e in events if isinstance(e, Message)] == ["ok"]


def test_an_oversized_document_is_refused_with_a_warning(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(home, "1_g", [_user("<user_input>" + "x" * 5000 + "</user_input>")])
    monkeypatch.setattr(cline_module, "MAX_MESSAGES_BYTES", 1000)
    agent = ClineCLI()
    transcript = agent.read(agent.resolve("1_g", None))
    assert list(transcript.events()) == []
    assert any("larger than" in w for w in transcript.diagnostics.warnings)


def test_discovery_by_workspace_and_sub_folders(home: Path) -> None:
    _session(home, "1_h", [], cwd=WS)
    _session(home, "1_i", [], cwd=f"{WS}/pkg")
    _session(home, "1_j", [], cwd="/elsewhere")
    agent = ClineCLI()
    assert {r.session_id for r in agent.sessions(Path(WS))} == {"1_h", "1_i"}
    assert len(agent.sessions(None)) == 3
    manifest = home / ".cline" / "data" / "sessions" / "1_h" / "1_h.json"
    assert agent.ref_for_path(manifest).path.name == "1_h.messages.json"


def test_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.delenv("CLINE_SESSION_DATA_DIR", raising=False)
    monkeypatch.delenv("CLINE_DIR", raising=False)
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path / "data"))
    assert ClineCLI().store_roots() == [tmp_path / "data" / "sessions"]
    monkeypatch.delenv("CLINE_DATA_DIR")
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "cl"))
    assert ClineCLI().store_roots() == [tmp_path / "cl" / "data" / "sessions"]
    monkeypatch.setenv("CLINE_SESSION_DATA_DIR", str(tmp_path / "s"))
    assert ClineCLI().store_roots() == [tmp_path / "s"]


def test_missing_store_finds_nothing(home: Path) -> None:
    assert ClineCLI().sessions(None) == []


def test_launch_argv_keeps_a_dash_prompt_one_argument(tmp_path: Path) -> None:
    agent = ClineCLI()
    spec = agent.launch_spec("-i means nothing here", workspace=tmp_path, interactive=False)
    assert spec.argv == ["cline", "--", "-i means nothing here"]
    assert spec.cwd == tmp_path and spec.env == {"CLINE_NO_AUTO_UPDATE": "1"}
    tui = agent.launch_spec("--help", workspace=tmp_path, interactive=True)
    assert tui.argv == ["cline", "-i", "--", "--help"]


def test_a_request_that_failed_after_its_retries_ends_on_its_error(home: Path) -> None:
    """What cline 3.0.65 wrote when every request got a 429: a display-only assistant
    message with the error, and a failed manifest; the error names the ending."""
    error = {
        "id": "error_808b1f14",
        "role": "assistant",
        "content": [{"type": "text", "text": "Rate limit reached"}],
        "ts": 1_800_000_000_500,
        "metadata": {"displayOnly": True, "displayRole": "error"},
        "modelInfo": {"id": "scripted-model", "provider": "openai-compatible"},
    }
    shown = {**error, "id": "x", "metadata": {"displayOnly": True}}
    _session(
        home,
        "1_k",
        [_user('<user_input mode="act">Say hi.</user_input>'), shown, error],
        status="failed",
        exit_code=1,
    )
    events, _agent = _read("1_k")
    assert [e.text for e in events if isinstance(e, Message)] == ["Say hi."]
    endings = [e for e in events if isinstance(e, SessionEnding)]
    assert [(e.reason, e.message) for e in endings] == [("rate_limit", "Rate limit reached")]
    ex = extract(iter(events), workspace=WS)
    assert ex.ended.reason == "rate_limit"


def test_a_grown_session_stays_in_budget(home: Path) -> None:
    """The recorded turn's shape repeated 3,000 times (a plan task, a write, a failing
    command each): the handoff keeps bounded lists and what matters most survives."""
    from passdown.handoff import COMMANDS_KEEP, FILES_KEEP
    from passdown.transcript import PLAN_KEEP

    messages: list[dict[str, object]] = [
        _user('<user_input mode="act">the first request</user_input>')
    ]
    for n in range(3000):
        messages += [
            _use(f"t{n}", "team_task", action="create", title=f"task {n}", description="d"),
            _result(f"t{n}", f'{{"action":"create","taskId":"task_{n:04d}","status":"pending"}}'),
            _use(f"e{n}", "editor", path=f"{WS}/f{n}.py", new_text="x"),
            _result(f"e{n}", '{"success":true}'),
            _use(f"c{n}", "run_commands", commands=[f"pytest -k t{n}"]),
            _result(
                f"c{n}",
                [
                    {
                        "query": "pytest",
                        "result": "[Command exited with code 1]\nE   boom",
                        "error": "Command exited with code 1",
                        "success": False,
                    }
                ],
            ),
        ]
    _session(home, "1_grow", messages)
    events, _agent = _read("1_grow")
    ex = extract(iter(events), workspace=WS)
    assert ex.task.original_request == "the first request"
    # the plan keeps at most twice its budget between cuts (transcript.Plan._bound)
    assert len(ex.state.plan) <= 2 * PLAN_KEEP and len(ex.state.commands) <= COMMANDS_KEEP
    assert len(ex.state.files_touched) <= FILES_KEEP
    assert ex.state.last_failure is not None and ex.state.last_failure.command == "pytest -k t2999"
