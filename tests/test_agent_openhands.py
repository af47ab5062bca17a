"""OpenHands CLI 1.16: the recorded two-run conversation (tests/fixtures/sessions/openhands/full,
written by `tests/e2e/test_openhands_real.py` against the real `openhands` 1.16.0) through
the reader and the CLI; hand-made event folders for the endings (an LLM error after the
retries, a pause), a plan call OpenHands refused, compaction, bad and foreign files;
launch argv; the hooks.json edit (byte-exact through the CLI), the payload's names, the
pickup at the first prompt; a grown conversation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_checks import (
    Launch,
    PassdownCLI,
    agent_fixtures,
    check_launch,
    copy_recorded,
    hooks_installed,
)
from agent_entry_points import register
from passdown._extract import extract
from passdown.agents.openhands import OpenHandsCLI, event_files
from passdown.integrations._base import InstallTarget
from passdown.integrations._openhands import OpenHandsHooks
from passdown.transcript import (
    Compaction,
    Event,
    Message,
    PlanOp,
    SessionEnding,
    ToolCall,
    ToolResult,
)
from recorded import FIXTURES

RECORDED = FIXTURES / "openhands" / "full"
EXPECTED = json.loads((RECORDED / "expected.json").read_text())
SID = EXPECTED["session_id"]
WS = EXPECTED["workspace"]


home, cli = agent_fixtures(register, "OPENHANDS_PERSISTENCE_DIR", "OPENHANDS_CONVERSATIONS_DIR")


def _install(source: Path, home: Path) -> Path:
    copy_recorded(source, home)
    return home / ".openhands" / "conversations"


def test_recorded_conversation(home: Path) -> None:
    _install(RECORDED, home)
    agent = OpenHandsCLI()
    [ref] = agent.sessions(Path(WS))
    assert ref.session_id == SID and ref.path.name == "base_state.json" and ref.cwd == WS
    transcript = agent.read(ref)
    events = list(transcript.events())
    assert transcript.diagnostics.summary() == []
    users = [e.text for e in events if isinstance(e, Message) and e.role == "user"]
    assert users == [EXPECTED["original_request"], EXPECTED["latest_user_message"]]
    said = [e.text for e in events if isinstance(e, Message) and e.role == "assistant"]
    assert said[-1] == EXPECTED["final_assistant_message"]  # the finish tool's message
    results = {e.call_id: e for e in events if isinstance(e, ToolResult)}
    [command] = [e for e in events if isinstance(e, ToolCall) and e.action == "command"]
    assert command.command == EXPECTED["failing_command"]["command"]
    assert results[command.call_id].exit_code == 2 and results[command.call_id].is_error
    edits = [(e.action, e.paths) for e in events if isinstance(e, ToolCall) and e.paths]
    assert edits == [("write", (f"{WS}/hello.txt",)), ("edit", (f"{WS}/hello.txt",))]
    final_plan = [e for e in events if isinstance(e, PlanOp)][-1]  # TASKS.json
    assert [{"subject": i.subject, "status": i.status} for i in final_plan.items] == (
        EXPECTED["plan"]
    )
    assert transcript.info.models == ["openai/scripted-model"]
    assert transcript.info.started_at and transcript.info.updated_at
    assert not any(isinstance(e, SessionEnding) for e in events)


def test_recorded_handoff_through_the_cli(home: Path, cli: PassdownCLI) -> None:
    _install(RECORDED, home)
    data = cli.export("openhands", SID[:8])
    assert data["source"]["session_id"] == SID and data["source"]["agent"] == "openhands"
    assert data["task"]["original_request"] == EXPECTED["original_request"]
    assert data["task"]["latest_user_message"] == EXPECTED["latest_user_message"]
    plan = [{k: p[k] for k in ("subject", "status")} for p in data["state"]["plan"]]
    assert plan == EXPECTED["plan"]
    failure = data["state"]["last_failure"]
    assert failure["command"] == EXPECTED["failing_command"]["command"]
    assert failure["exit_code"] == 2 and "No such file" in failure["error"]
    assert data["ended"]["reason"] == "normal"


def test_a_sticky_429_recorded_ends_on_a_rate_limit(home: Path) -> None:
    """tests/fixtures/sessions/openhands/ratelimit: the real OpenHands against a server that
    always answers 429: LiteLLM retried 5 times (about 3 minutes, too slow for the e2e
    module), then a ConversationErrorEvent `LLMRateLimitError` and status "error"."""
    conversations = _install(FIXTURES / "openhands" / "ratelimit", home)
    [folder] = list(conversations.iterdir())
    events, _ = _read(folder)
    assert [e.text for e in events if isinstance(e, Message)] == ["Say hi."]
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "rate_limit" and "Rate limit reached" in (ending.message or "")
    assert extract(iter(events), workspace=None).ended.reason == "rate_limit"


# -- hand-made conversations -----------------------------------------------------------------
def _conversation(
    home: Path, events: list[dict[str, object]], *, status: str = "finished", tasks: object = None
) -> Path:
    folder = home / ".openhands" / "conversations" / "c0ffee"
    (folder / "events").mkdir(parents=True)
    state = {
        "id": "c0ffee",
        "workspace": {"working_dir": "/tmp/ws-oh"},
        "agent": {"llm": {"model": "openai/m"}},
        "execution_status": status,
    }
    (folder / "base_state.json").write_text(json.dumps(state))
    for n, event in enumerate(events):
        name = f"event-{n:05d}-{'0' * 8}-0000-0000-0000-{n:012d}.json"
        (folder / "events" / name).write_text(json.dumps(event))
    if tasks is not None:
        (folder / "TASKS.json").write_text(json.dumps(tasks))
    return folder


def _user(text: str) -> dict[str, object]:
    return {
        "kind": "MessageEvent",
        "source": "user",
        "timestamp": "2026-12-01T10:00:00.000000",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }


def _action(
    call_id: str, name: str, args: dict[str, object], thought: str = ""
) -> dict[str, object]:
    return {
        "kind": "ActionEvent",
        "source": "agent",
        "thought": [{"type": "text", "text": thought}] if thought else [],
        "tool_name": name,
        "tool_call_id": call_id,
        "tool_call": {"id": call_id, "name": name, "arguments": json.dumps(args)},
    }


def _seen(call_id: str, text: str, **observation: object) -> dict[str, object]:
    return {
        "kind": "ObservationEvent",
        "source": "environment",
        "tool_call_id": call_id,
        "observation": {"content": [{"type": "text", "text": text}], **observation},
    }


def _read(folder: Path) -> tuple[list[Event], OpenHandsCLI]:
    agent = OpenHandsCLI()
    return list(agent.read(agent.ref_for_path(folder / "base_state.json")).events()), agent


def test_an_llm_error_after_the_retries_ends_the_conversation(home: Path) -> None:
    error = {
        "kind": "ConversationErrorEvent",
        "source": "environment",
        "code": "RateLimitError",
        "detail": "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached",
    }
    events, _ = _read(_conversation(home, [_user("Say hi."), error], status="error"))
    [ending] = [e for e in events if isinstance(e, SessionEnding)]
    assert ending.reason == "rate_limit" and "Rate limit reached" in (ending.message or "")
    # an error status with no error event: still not a normal ending
    events, _ = _read(_conversation(home / "b", [_user("Say hi.")], status="error"))
    assert [e.reason for e in events if isinstance(e, SessionEnding)] == ["error"]


def test_a_pause_and_a_compaction(home: Path) -> None:
    events, _ = _read(
        _conversation(
            home,
            [
                _user("Say hi."),
                {"kind": "Condensation", "summary": "what happened so far"},
                {"kind": "PauseEvent", "source": "user"},
            ],
            status="paused",
        )
    )
    assert [e.summary for e in events if isinstance(e, Compaction)] == ["what happened so far"]
    assert [e.reason for e in events if isinstance(e, SessionEnding)] == ["interrupted"]


def test_a_plan_call_openhands_refused_changes_no_plan(home: Path) -> None:
    plan = {"command": "plan", "task_list": [{"title": "A", "status": "todo"}]}
    refused = {
        "kind": "AgentErrorEvent",
        "tool_call_id": "p1",
        "error": "Error validating tool 'task_tracker': Failed to provide security_risk field",
    }
    ok_plan = {"command": "plan", "task_list": [{"title": "B", "status": "in_progress"}]}
    events, _ = _read(
        _conversation(
            home,
            [
                _user("Plan."),
                _action("p1", "task_tracker", plan),
                refused,
                _action("p2", "task_tracker", ok_plan),
                _seen("p2", "Task list updated"),
            ],
        )
    )
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.call_id, c.action) for c in calls] == [("p1", "other"), ("p2", "plan")]
    ex = extract(iter(events), workspace="/tmp/ws-oh")
    assert [(p.subject, p.status) for p in ex.state.plan] == [("B", "in_progress")]


def test_bad_foreign_and_oversized_event_files(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import passdown.agents.openhands as module

    folder = _conversation(home, [_user("first"), _user("second"), _user("third")])
    files = event_files(folder)
    files[1].write_text("{not json")
    (folder / "events" / ".eventlog.lock").write_text("")
    (folder / "events" / "notes.json").write_text(json.dumps(_user("not an event file")))
    (folder / "events" / "event-00009-../x.json".replace("/", "_")).write_text("{}")
    monkeypatch.setattr(module, "MAX_EVENT_BYTES", 300)
    files[2].write_text(json.dumps(_user("x" * 400)))
    agent = OpenHandsCLI()
    transcript = agent.read(agent.ref_for_path(folder / "base_state.json"))
    texts = [e.text for e in transcript.events() if isinstance(e, Message)]
    assert texts == ["first"]
    assert transcript.diagnostics.bad_lines == 1 and transcript.diagnostics.oversized_lines == 1


def test_discovery_env_and_any_file_of_a_conversation(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = OpenHandsCLI()
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(tmp_path / "p"))
    assert agent.store_roots() == [tmp_path / "p" / "conversations"]
    monkeypatch.setenv("OPENHANDS_CONVERSATIONS_DIR", str(tmp_path / "c"))
    assert agent.store_roots() == [tmp_path / "c"]
    monkeypatch.delenv("OPENHANDS_PERSISTENCE_DIR")
    monkeypatch.delenv("OPENHANDS_CONVERSATIONS_DIR")
    conversations = _install(RECORDED, home)
    folder = conversations / SID
    assert agent.ref_for_path(event_files(folder)[0]).session_id == SID
    assert agent.ref_for_path(folder / "TASKS.json").session_id == SID
    assert agent.sessions(Path("/nowhere")) == []


# -- launching ---------------------------------------------------------------------------------
DASH = "-t is no flag: continue"
LAUNCHES = [
    Launch(DASH, False, ("openhands", "--headless", f"--task={DASH}")),
    Launch(DASH, True, ("openhands", f"--task={DASH}")),
    Launch("y" * (70 * 1024), True, ("openhands", "--file", "{file}")),
]


@pytest.mark.parametrize("launch", LAUNCHES, ids=str)
def test_launch_argv(launch: Launch, tmp_path: Path) -> None:
    check_launch(OpenHandsCLI(), launch, tmp_path, "openhands-prompt.md")


# -- hooks -------------------------------------------------------------------------------------
MINE = '{"hooks": {"Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "mine"}]}]}}'


def test_hooks_json_edit_and_payload(tmp_path: Path, home: Path) -> None:
    hooks = OpenHandsHooks()
    target = InstallTarget("openhands", "user", tmp_path, "/opt/bin/passdown")
    [(path, install, uninstall)] = hooks.plan(target)
    assert path == home / ".openhands" / "hooks.json"
    data = json.loads(install(MINE) or "")
    assert [g["hooks"][0]["command"] for g in data["hooks"]["Stop"]] == [
        "mine",
        "/opt/bin/passdown hook openhands",
    ]
    assert {g["matcher"] for e in data["hooks"].values() for g in e} == {"*"}
    assert set(data["hooks"]) == {"Stop", "SessionEnd", "UserPromptSubmit"}
    assert json.loads(uninstall(json.dumps(data)) or "") == json.loads(MINE)
    no_pickup = InstallTarget("openhands", "user", tmp_path, "/opt/bin/passdown", pickup=False)
    assert hooks.registered_events(no_pickup) == ["Stop", "SessionEnd"]
    [(project, _, _)] = hooks.plan(InstallTarget("openhands", "project", tmp_path, "p"))
    assert project == tmp_path / ".openhands" / "hooks.json"
    payload = {
        "event_type": "SessionEnd",
        "session_id": "e79ee72c-6088-4411-8613-32853a3eabe1",
        "working_dir": "/tmp/ws",
        "metadata": {},
    }
    assert hooks.event(payload) == "session_end"
    assert hooks.session_spec(payload) == "e79ee72c60884411861332853a3eabe1"
    assert hooks.cwd(payload) == "/tmp/ws"
    assert hooks.event({"event_type": "UserPromptSubmit"}) == "session_start"
    assert json.loads(hooks.context_output("read it")) == {"additionalContext": "read it"}


def test_install_uninstall_byte_exact_and_the_hooks_write_then_pick_up(
    home: Path, tmp_path: Path, cli: PassdownCLI
) -> None:
    """Through the CLI: install into the user's own hooks.json, a SessionEnd hook run with
    the payload OpenHands sends (recorded) writes the handoff; a new conversation's first
    prompt (UserPromptSubmit) gets the pointer as `additionalContext`, once; uninstall
    gives the file back byte for byte."""
    conversations = _install(RECORDED, home)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def hook(payload: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return cli("hook", "openhands", cwd=workspace, stdin=json.dumps(payload))

    with hooks_installed(cli, "openhands", home / ".openhands" / "hooks.json", MINE):
        dashed = f"{SID[:8]}-{SID[8:12]}-{SID[12:16]}-{SID[16:20]}-{SID[20:]}"
        end = {"event_type": "SessionEnd", "session_id": dashed, "working_dir": str(workspace)}
        ended = hook(end)
        assert ended.returncode == 0 and ended.stdout == ""
        handoff = json.loads((workspace / ".agent-handoff" / "handoff.json").read_text())
        assert handoff["source"]["session_id"] == SID
        assert handoff["task"]["original_request"] == EXPECTED["original_request"]

        other = "0123abcd-0000-4000-8000-000000000001"
        (conversations / other.replace("-", "")).mkdir()
        prompt = {
            "event_type": "UserPromptSubmit",
            "session_id": other,
            "working_dir": str(workspace),
            "message": "go on",
        }
        first = hook(prompt)
        assert first.returncode == 0, first.stderr
        context = json.loads(first.stdout)["additionalContext"]
        assert ".agent-handoff" in context or "handoff" in context.lower()
        again = hook(prompt)
        assert again.stdout == ""  # the pointer comes with the first prompt only
        log = cli.hooks_log()
        assert "ok openhands session_end" in log and "error" not in log, log


# -- growth ------------------------------------------------------------------------------------
def test_a_grown_conversation_stays_in_budget(home: Path) -> None:
    """The recorded run's shape repeated 1,500 times (a plan, a file created, a failing
    command each, one event file apiece): bounded lists, what matters most survives."""
    from passdown.handoff import COMMANDS_KEEP, FILES_KEEP
    from passdown.transcript import PLAN_KEEP

    events: list[dict[str, object]] = [_user("the first request")]
    for n in range(1500):
        plan = {"command": "plan", "task_list": [{"title": f"task {n}", "status": "todo"}]}
        events += [
            _action(f"t{n}", "task_tracker", plan),
            _seen(f"t{n}", "ok"),
            _action(f"w{n}", "file_editor", {"command": "create", "path": f"/tmp/ws-oh/f{n}.py"}),
            _seen(f"w{n}", "File created"),
            _action(f"c{n}", "terminal", {"command": f"pytest -k t{n}"}),
            _seen(f"c{n}", "E   boom", exit_code=1, is_error=False),
        ]
    read, _ = _read(_conversation(home, events))
    ex = extract(iter(read), workspace="/tmp/ws-oh")
    assert ex.task.original_request == "the first request"
    assert len(ex.state.plan) <= 2 * PLAN_KEEP and len(ex.state.commands) <= COMMANDS_KEEP
    assert len(ex.state.files_touched) <= FILES_KEEP
    assert ex.state.last_failure is not None and ex.state.last_failure.command == "pytest -k t1499"
    assert [p.subject for p in ex.state.plan] == ["task 1499"]
