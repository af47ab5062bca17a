"""Kimi CLI 1.51: the recorded two-turn session (tests/fixtures/sessions/kimi/full,
written by `tests/e2e/test_kimi_real.py` against the real `kimi-cli` 1.51.0) through the
reader and the CLI; hand-made wire logs for the endings (a step Kimi retried and gave up
on, an interruption, a retry that recovered), hidden reasoning, sub-agents, bad and torn
lines; incremental reading window by window; discovery, env override and launch argv."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from agent_entry_points import register
from passdown._extract import extract
from passdown.agents.kimi import KimiCLI, folder_name
from passdown.transcript import (
    Diagnostics,
    Message,
    PlanOp,
    SessionEnding,
    SubagentNote,
    ToolCall,
    ToolResult,
)
from recorded import FIXTURES

RECORDED = FIXTURES / "kimi" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
PASSDOWN = [sys.executable, "-m", "passdown"]


@pytest.fixture
def recorded_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    shutil.copytree(RECORDED, home, ignore=shutil.ignore_patterns("expected.json"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    return home


def test_recorded_session(recorded_home: Path) -> None:
    agent = KimiCLI()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    assert ref.session_id == SID and ref.path.name == "wire.jsonl"
    assert ref.cwd == EXPECTED["workspace"]  # from kimi.json: the folder is an md5
    transcript = agent.read(ref)
    events = list(transcript.events())
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == [EXPECTED["original_request"], EXPECTED["latest_user_message"]]
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[-1] == EXPECTED["final_assistant_message"]
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    assert results[command.call_id].exit_code == 2 and results[command.call_id].is_error
    edits = [(e.action, e.paths) for e in events if isinstance(e, ToolCall) and e.paths]
    assert edits == [("write", ("hello.txt",)), ("edit", ("hello.txt",))]
    final_plan = [e for e in events if isinstance(e, PlanOp)][-1]
    assert [{"subject": i.subject, "status": i.status} for i in final_plan.items] == (
        EXPECTED["plan"]
    )
    assert transcript.info.title and transcript.info.started_at and transcript.info.updated_at
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
            "kimi",
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
    assert data["source"]["session_id"] == SID and data["source"]["agent"] == "kimi"
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    assert [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]] == (
        EXPECTED["plan"]
    )
    assert [f["path"] for f in data["state"]["files_touched"]] == EXPECTED["files_touched"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2 and "No such file" in failure["error"]
    assert data["ended"]["reason"] == "normal"


# -- hand-made wire logs -------------------------------------------------------------------
WS = "/tmp/ws-kimi"


def _line(kind: str, t: float = 1_800_000_000.0, **payload: object) -> dict[str, object]:
    return {"timestamp": t, "message": {"type": kind, "payload": payload}}


def _session(
    root: Path,
    lines: list[dict[str, object]] | bytes,
    *,
    sid: str = "s1",
    cwd: str = WS,
    todos: object = None,
) -> Path:
    folder = root / ".kimi" / "sessions" / folder_name(cwd) / sid
    folder.mkdir(parents=True)
    if isinstance(lines, bytes):
        body = lines
    else:
        meta = [{"type": "metadata", "protocol_version": "1.10"}]
        body = b"".join(json.dumps(x).encode() + b"\n" for x in meta + lines)
    (folder / "wire.jsonl").write_bytes(body)
    if todos is not None:
        (folder / "state.json").write_text(json.dumps({"custom_title": "t", "todos": todos}))
    return folder / "wire.jsonl"


def _call(call_id: str, name: str, **args: object) -> dict[str, object]:
    return _line(
        "ToolCall",
        type="function",
        id=call_id,
        function={"name": name, "arguments": json.dumps(args)},
    )


def _result(call_id: str, is_error: bool, output: str, message: str) -> dict[str, object]:
    value = {"is_error": is_error, "output": output, "message": message, "display": []}
    return _line("ToolResult", tool_call_id=call_id, return_value=value)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    return tmp_path


def _events(sid: str = "s1") -> list[object]:
    agent = KimiCLI()
    return list(agent.read(agent.resolve(sid, None)).events())


def test_a_step_kimi_gave_up_on_ends_on_a_rate_limit(home: Path) -> None:
    _session(
        home,
        [
            _line("TurnBegin", user_input="do it"),
            _line("StepBegin", n=1),
            _line(
                "StepRetry",
                n=1,
                next_attempt=2,
                max_attempts=3,
                wait_s=0.5,
                error_type="APIStatusError",
                status_code=429,
            ),
            _line(
                "StepRetry",
                n=1,
                next_attempt=3,
                max_attempts=3,
                wait_s=1.0,
                error_type="APIStatusError",
                status_code=429,
            ),
            _line("StepInterrupted"),
            _line("TurnEnd"),
        ],
    )
    ex = extract(iter(_events()), workspace=WS)
    assert ex.ended.reason == "rate_limit"
    assert "429" in (ex.ended.message or "")


def test_an_interrupted_step_without_a_retry(home: Path) -> None:
    _session(home, [_line("TurnBegin", user_input="do it"), _line("StepInterrupted")])
    ex = extract(iter(_events()), workspace=WS)
    assert ex.ended.reason == "interrupted"


def test_a_retry_that_recovered_ends_normally(home: Path) -> None:
    _session(
        home,
        [
            _line("TurnBegin", user_input="do it"),
            _line("StepRetry", n=1, error_type="APIStatusError", status_code=429),
            _line("ContentPart", type="think", think="secret reasoning"),
            _line("ContentPart", type="text", text="Done "),
            _line("ContentPart", type="text", text="now."),
            _line("TurnEnd"),
            _line("TurnBegin", user_input=[{"type": "text", "text": "and then?"}]),
            _line("StepInterrupted"),  # a later turn's retry state was cleared at TurnEnd
        ],
    )
    events = _events()
    said = [e.text for e in events if isinstance(e, Message)]
    assert said == ["do it", "Done now.", "and then?"]
    assert "secret" not in json.dumps([str(e) for e in events])
    endings = [e for e in events if isinstance(e, SessionEnding)]
    assert [e.reason for e in endings] == ["interrupted"]


def test_plan_tools_subagents_and_commands(home: Path) -> None:
    _session(
        home,
        [
            _line("TurnBegin", user_input="plan"),
            _call(
                "c1",
                "SetTodoList",
                todos=[{"title": "A", "status": "done"}, {"title": "B", "status": "pending"}],
            ),
            _result("c1", False, "Todo list updated", "Todo list updated"),
            _call("c2", "SetTodoList"),  # no list: a read of the current one
            _result("c2", False, "", ""),
            _call("c3", "Agent", description="look around", prompt="..."),
            _call("c4", "Shell", command="make test"),
            _result(
                "c4", True, "E   AssertionError: 1 != 2\n", "Command failed with exit code: 1."
            ),
            _call("c5", "StrReplaceFile", path="/tmp/ws-kimi/a.py", edit={"old": "x", "new": "y"}),
            _result("c5", True, "", "No replacements made: old string not found."),
        ],
        todos=[{"title": "A", "status": "done"}, {"title": "B", "status": "in_progress"}],
    )
    events = _events()
    assert [e.agent_id for e in events if isinstance(e, SubagentNote)] == ["c3"]
    ex = extract(iter(events), workspace=WS)
    assert [(i.subject, i.status) for i in ex.state.plan] == [
        ("A", "completed"),
        ("B", "in_progress"),
    ]
    assert [(c.command, c.exit_code) for c in ex.state.commands] == [("make test", 1)]
    assert ex.state.last_failure and "AssertionError" in (ex.state.last_failure.error or "")
    assert not ex.state.files_touched and ex.state.failed_edits[0].path == "a.py"


def test_bad_and_torn_lines_are_counted(home: Path) -> None:
    good = json.dumps(_line("TurnBegin", user_input="hello")).encode()
    _session(
        home,
        b'{"type": "metadata"}\nnot json\n'
        + good
        + b'\n{"timestamp": 1, "message": {"type": "TurnBe',
    )
    agent = KimiCLI()
    transcript = agent.read(agent.resolve("s1", None))
    events = list(transcript.events())
    assert [e.text for e in events if isinstance(e, Message)] == ["hello"]
    assert transcript.diagnostics.bad_lines == 1 and transcript.diagnostics.torn_last_line


def test_incremental_reading_gives_what_read_gives(home: Path) -> None:
    lines = [
        _line("TurnBegin", user_input="go"),
        _line("ContentPart", type="text", text="half "),
        _line("ContentPart", type="text", text="done"),
        _call("c1", "Shell", command="false"),
        _result("c1", True, "", "Command failed with exit code: 1."),
        _line("StepRetry", n=2, error_type="APIStatusError", status_code=429),
        _line("StepInterrupted"),
    ]
    path = _session(home, lines, todos=[{"title": "A", "status": "pending"}])
    agent = KimiCLI()
    whole = list(agent.read(agent.resolve("s1", None)).events())
    data = path.read_bytes()
    cut = data.index(b"\n", data.index(b"half")) + 1  # the split falls inside a reply
    info = agent.read(agent.resolve("s1", None)).info
    first = agent.resumable_reader(info, Diagnostics(), None, {})
    import io

    events = list(first.events(io.BytesIO(data[:cut])))
    state = msgspec.json.decode(msgspec.json.encode(first.state()))
    second = agent.resumable_reader(info, Diagnostics(), state, {})
    events += list(second.events(io.BytesIO(data[cut:])))
    events += list(second.close())
    assert [repr(e) for e in events] == [repr(e) for e in whole]


def test_discovery_by_workspace(home: Path) -> None:
    _session(home, [_line("TurnBegin", user_input="a")], sid="in-ws")
    _session(home, [_line("TurnBegin", user_input="b")], sid="sub", cwd=f"{WS}/pkg")
    _session(home, [_line("TurnBegin", user_input="c")], sid="other", cwd="/elsewhere")
    agent = KimiCLI()
    # without kimi.json only the workspace's own folder is known
    assert [r.session_id for r in agent.sessions(Path(WS))] == ["in-ws"]
    (home / ".kimi" / "kimi.json").write_text(
        json.dumps(
            {"work_dirs": [{"path": f"{WS}/pkg", "kaos": "local", "last_session_id": "sub"}]}
        )
    )
    assert {r.session_id for r in agent.sessions(Path(WS))} == {"in-ws", "sub"}
    assert len(agent.sessions(None)) == 3
    state = home / ".kimi" / "sessions" / folder_name(f"{WS}/pkg") / "sub" / "state.json"
    ref = agent.ref_for_path(state)
    assert ref.path.name == "wire.jsonl" and ref.cwd == f"{WS}/pkg"


def test_share_dir_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "k"))
    assert KimiCLI().store_roots() == [tmp_path / "k" / "sessions"]
    assert KimiCLI().sessions(None) == []


def test_folder_name_is_the_md5_of_the_path() -> None:
    assert folder_name("/tmp/wave2b/run-kimi/ws") == "407a4c3e7ad0651bbc58afe58124ba6a"


def test_launch_argv_keeps_a_dash_prompt_one_argument(tmp_path: Path) -> None:
    agent = KimiCLI()
    spec = agent.launch_spec("-C is no flag here", workspace=tmp_path, interactive=False)
    assert spec.argv == ["kimi", "--print", "--prompt=-C is no flag here"]
    assert agent.launch_spec("go", workspace=tmp_path, interactive=True).argv == [
        "kimi",
        "--prompt=go",
    ]


def test_incremental_export_of_the_growing_recorded_session_equals_a_full_read(
    recorded_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded wire.jsonl appended in pieces (cut inside lines too): each export
    that continues from the checkpoint gives the handoff a full read gives."""
    from passdown import _checkpoint as checkpoint
    from passdown import _pipeline as pipeline

    monkeypatch.setenv("PASSDOWN_DATA_DIR", str(tmp_path / "data"))
    agent = KimiCLI()
    [ref] = agent.sessions(Path(EXPECTED["workspace"]))
    body = ref.path.read_bytes()
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def handoff(incremental: bool) -> dict[str, object]:
        if incremental:
            monkeypatch.delenv(checkpoint.DISABLE_ENV, raising=False)
        else:
            monkeypatch.setenv(checkpoint.DISABLE_ENV, "1")
        selection = pipeline.Selection(
            agent=agent, ref=agent.ref_for_path(ref.path), workspace=workspace
        )
        data = pipeline.build_handoff(selection).model_dump(mode="json")
        del data["id"], data["created_at"]
        return data

    cuts = [len(body) // 5, len(body) // 3 + 7, len(body) // 2, len(body) - 40, len(body)]
    for cut in cuts:
        ref.path.write_bytes(body[:cut])
        assert handoff(True) == handoff(False)
    assert checkpoint.checkpoint_path("kimi", ref.path).exists()
    final = handoff(True)
    assert final["task"]["latest_user_message"] == EXPECTED["latest_user_message"]  # type: ignore[index]
